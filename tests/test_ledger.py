"""Memory-declaring cases share one budget across the xdist workers of a run."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import uuid

from hypothesis import given
from hypothesis import strategies as st

from pytest_fl_contract.hardware.ledger import Claim, Ledger, admit, budget_gib, ledger_path


def test_admit_counts_only_live_claims_and_lets_a_case_run_alone():
    live = lambda pid: pid != 999  # noqa: E731
    claims = [Claim(1, "a", 32.0), Claim(999, "dead", 64.0)]
    assert admit(claims, 32.0, 70.0, live)
    assert not admit(claims, 40.0, 70.0, live)
    assert admit([], 500.0, 70.0, live)  # bigger than the budget, but alone
    assert admit([Claim(999, "dead", 64.0)], 500.0, 70.0, live)


@given(st.lists(st.floats(0.5, 64), max_size=8), st.floats(0.5, 64), st.floats(1, 200))
def test_admitted_claims_stay_within_the_budget_unless_alone(held, need, budget):
    claims = [Claim(i, str(i), g) for i, g in enumerate(held)]
    if admit(claims, need, budget, lambda pid: True) and claims:
        assert sum(held) + need <= budget


def test_budget_is_a_share_of_the_smaller_memory():
    assert budget_gib(139.0, 128.0) == 0.6 * 128.0
    assert budget_gib(None, 64.0) == 0.6 * 64.0
    assert budget_gib(None, None) == float("inf")


def _worker(path: str, gib: float, log: str) -> None:
    ledger = Ledger(__import__("pathlib").Path(path), budget=10.0, poll=0.01)
    ledger.acquire(f"case-{os.getpid()}", gib)
    start = time.monotonic()
    time.sleep(1.0)  # wide enough that two processes forked together overlap on a loaded machine
    end = time.monotonic()
    ledger.release(f"case-{os.getpid()}")
    with open(log, "a") as f:
        f.write(json.dumps([start, end]) + "\n")


def test_two_workers_over_the_budget_take_turns_and_two_under_it_overlap(tmp_path):
    ctx = multiprocessing.get_context("fork")
    for gib, overlap in ((6.0, False), (4.0, True)):
        log = tmp_path / f"log-{gib}"
        procs = [
            ctx.Process(target=_worker, args=(str(tmp_path / f"ledger-{gib}.json"), gib, str(log))) for _ in range(2)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(10)
        (a0, a1), (b0, b1) = sorted(json.loads(line) for line in log.read_text().splitlines())
        assert (b0 < a1) == overlap, (a0, a1, b0, b1)
        assert json.loads((tmp_path / f"ledger-{gib}.json").read_text()) == []


def test_a_claim_of_a_dead_worker_is_dropped(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps([{"pid": 2**22 + 12345, "nodeid": "crashed", "gib": 9.0}]))
    ledger = Ledger(path, budget=10.0, poll=0.01)
    assert ledger.acquire("mine", 6.0) < 1.0
    assert [c["nodeid"] for c in json.loads(path.read_text())] == ["mine"]


def test_a_torn_ledger_starts_over(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text('[{"pid": 1, "nodeid"')
    assert Ledger(path, budget=10.0).acquire("mine", 6.0) < 1.0


FAKE_DEVICE = """
import torch
torch.cuda.is_available = lambda: True
torch.cuda.mem_get_info = lambda *a: (100 * 2**30, 100 * 2**30)
torch.cuda.empty_cache = lambda: None
"""

HEAVY = """
import json, os, time, pytest

@pytest.mark.parametrize("i", range(3))
@pytest.mark.requires_device_memory(60)
def test_heavy(i):
    start = time.monotonic(); time.sleep(0.4)
    with open("spans.txt", "a") as f:
        f.write(json.dumps([start, time.monotonic()]) + "\\n")
"""


def test_xdist_workers_never_run_two_heavy_cases_at_once(pytester, run_subprocess):
    runid = uuid.uuid4().hex
    pytester.makeconftest(FAKE_DEVICE)
    pytester.makepyfile(
        test_heavy=HEAVY,
        test_ledger_there=f"""
import os, pytest
@pytest.mark.requires_device_memory(1)
def test_the_workers_share_the_ledger():
    assert os.path.exists({str(ledger_path(runid))!r})
""",
    )
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        "-p",
        "xdist",
        "-n",
        "3",
        f"--testrunuid={runid}",
        "--junitxml=lane.xml",
    )
    result.assert_outcomes(passed=4)
    assert not ledger_path(runid).exists()  # the controller removed it: runs used to leave one each
    spans = sorted(json.loads(line) for line in (pytester.path / "spans.txt").read_text().splitlines())
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:])), spans
    assert (pytester.path / "lane.xml").read_text().count(
        'name="fl_memory_wait_s"'
    ) == 0  # xunit2: no per-case properties


FREE_WHILE_HELD = """
import os, time, pytest, torch

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if item.name.endswith("[1]"):
        time.sleep(0.25)  # the second case sets up while the first one holds its memory
    return (yield)

# free memory as the device would report it: 100 GiB less what the other worker's case holds
torch.cuda.is_available = lambda: True
torch.cuda.empty_cache = lambda: None
def mem_get_info(*a):
    held = os.path.exists("holding")
    return ((100 - 60 * held) * 2**30, 100 * 2**30)
torch.cuda.mem_get_info = mem_get_info
"""

HOLDING = """
import os, time, pytest

@pytest.mark.parametrize("i", range(2))
@pytest.mark.requires_device_memory(60)
def test_heavy(i):
    open("holding", "w").close()
    time.sleep(0.5)
    os.remove("holding")
"""


def test_a_case_waits_for_memory_a_running_case_holds_instead_of_skipping(pytester, run_subprocess):
    pytester.makeconftest(FREE_WHILE_HELD)
    pytester.makepyfile(test_heavy=HOLDING)
    result = run_subprocess(
        "-p", "fl_contract", "--platform", "nvidia", "--fl-no-workaround", "-p", "xdist", "-n", "2", "-rs"
    )
    result.assert_outcomes(passed=2)
