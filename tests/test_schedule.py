"""Longest cases first on hardware lanes under xdist, from the last run's record."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fl_contract.hardware.schedule import cpu_share, longest_first


def test_each_worker_gets_its_share_of_the_cpu():
    assert cpu_share(16, 16) == 1 and cpu_share(32, 8) == 4 and cpu_share(2, 8) == 1 and cpu_share(None, 4) == 1


def test_longest_first_is_stable_and_puts_the_untimed_at_the_median():
    ids = ["a", "b", "c", "d", "new"]
    durations = {"a": 0.1, "b": 40.0, "c": 0.1, "d": 5.0}
    assert [ids[i] for i in longest_first(ids, durations)] == ["b", "d", "new", "a", "c"]


def test_a_record_of_another_selection_changes_nothing():
    assert longest_first(["a", "b", "c"], {"a": 1.0}) == [0, 1, 2]
    assert longest_first([], {}) == []


@given(st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 100), min_size=1))
def test_an_order_is_a_permutation_by_duration(durations):
    ids = sorted(durations)
    order = longest_first(ids, durations)
    assert sorted(order) == list(range(len(ids)))
    times = [durations[ids[i]] for i in order]
    assert times == sorted(times, reverse=True)


CASES = """
import time, pytest
@pytest.mark.parametrize("i", range(8))
def test_short(i):
    pass
def test_long():
    time.sleep(0.3)
"""


def test_the_second_run_starts_with_the_longest_case(pytester, run_subprocess):
    pytester.makepyfile(test_cases=CASES)
    args = (
        "-p",
        "fl_contract",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        "-p",
        "xdist",
        "-n",
        "2",
        "-p",
        "no:randomly",
    )
    assert run_subprocess(*args).ret == 0
    cache = next(pytester.path.joinpath(".pytest_cache", "v", "fl_contract", "durations").rglob("*"))
    kept = next(p for p in cache.parent.rglob("*") if p.is_file())
    record = json.loads(kept.read_text())
    assert record["test_cases.py::test_long"] >= 0.3 and len(record) == 9
    # the order is read from the record: the record is made exact, so a loaded machine that
    # slowed a short case down in the run above cannot change which case comes first
    kept.write_text(json.dumps({name: 100.0 if name.endswith("test_long") else 0.001 for name in record}))
    result = run_subprocess(*args, "--fl-order", "collection", "--collect-only", "-q")
    assert result.stdout.lines[0] == "test_cases.py::test_short[0]"
    assert run_subprocess(*args, "--collect-only", "-q").stdout.lines[0] == "test_cases.py::test_long"  # the default
    pytester.makeconftest(
        "def pytest_configure(config):\n    config._fl_seen = config.option.maxschedchunk\n"
        "def pytest_sessionstart(session):\n    print('CHUNK', session.config.option.maxschedchunk)\n"
    )
    result = run_subprocess(*args, "-s")
    result.stdout.fnmatch_lines(["CHUNK 1"])  # xdist hands the ordered cases out one at a time


def test_a_runner_with_no_record_starts_the_priors_long_cases_first():
    """A fresh runner (no record, or one of another selection): the prior's long cases first,
    longest first, the rest in collection order; its keys match whatever the node ids start from."""
    ids = ["reductions/test_a.py::t[x]", "site/pkg/layers/test_b.py::t[y]", "layers/test_b.py::t[z]", "c"]
    prior = {"layers/test_b.py::t[y]": 80.0, "layers/test_b.py::t[z]": 5.0, "elsewhere": 900.0}
    assert [ids[i] for i in longest_first(ids, {}, prior=prior)] == [ids[1], ids[2], ids[0], ids[3]]
    assert longest_first(ids, {"c": 1.0}, prior=prior) == [1, 2, 0, 3]  # a record of another selection
    # a record of this selection wins over the prior, whatever the prior says
    record = {ids[0]: 50.0, ids[1]: 0.1, ids[2]: 0.2}
    assert longest_first(ids, record, prior=prior)[0] == 0
    assert longest_first(ids, {}, prior={}) == [0, 1, 2, 3]


def test_the_shipped_prior_is_generated_from_its_report_and_names_cases_that_exist():
    import subprocess
    import sys
    from pathlib import Path

    from pytest_fl_contract.hardware.schedule import PRIOR, prior

    root = Path(__file__).resolve().parents[1]
    shipped = json.loads(PRIOR.read_text(encoding="utf-8"))
    check = [sys.executable, str(root / "benchmarks" / "durations_prior.py"), str(root / shipped["source"])]
    check += ["--min-s", str(shipped["min_s"]), "--out", str(PRIOR), "--check"]
    done = subprocess.run(check, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(prior()) == len(shipped["cases"]) > 50
    for key in prior():  # a renamed file or test leaves the prior naming nothing: regenerate it
        path, _, test = key.partition("::")
        source = (root / "contracts" / path).read_text(encoding="utf-8")
        assert f"def {test.split('[')[0]}(" in source, key


def test_the_prior_orders_a_fresh_runners_collection(pytester, run_subprocess):
    """Wired: with no record, the xdist workers order their collection by the prior."""
    pytester.makepyfile(test_cases=CASES)
    pytester.makeconftest(
        "from pytest_fl_contract.hardware import schedule\n"
        "def pytest_configure(config):\n"
        "    schedule.prior = lambda: {'test_cases.py::test_short[5]': 30.0, 'test_cases.py::test_long': 60.0}\n"
    )
    args = ("-p", "fl_contract", "--platform", "nvidia", "--fl-no-workaround", "-p", "xdist", "-n", "2")
    lines = run_subprocess(*args, "-p", "no:randomly", "-p", "no:cacheprovider", "--collect-only", "-q").stdout.lines
    assert lines[:3] == ["test_cases.py::test_long", "test_cases.py::test_short[5]", "test_cases.py::test_short[0]"]


def test_the_packaged_suites_keep_their_record_in_the_users_cache(tmp_path):
    from pytest_fl_contract.config import suites

    assert suites.cache_dir({"FL_CONTRACT_CACHE": str(tmp_path)}) == tmp_path
    assert suites.cache_dir({"XDG_CACHE_HOME": "/x"}) == __import__("pathlib").Path("/x/fl-contract")
    argv = suites.pytest_argv(["reductions"])
    assert "-o" in argv and argv[argv.index("-o") + 1].startswith("cache_dir=")
    cache = next(a for a in argv if a.startswith("cache_dir=")).removeprefix("cache_dir=")
    assert not cache.startswith(str(suites.root())) and cache.endswith("fl-contract/pytest")  # never in site-packages


# The wrapper (``fl-contract contracts``) around a stand-in for pytest.  Both start with Python's
# own SIGINT handler, as from a terminal: a shell that runs a command in the background starts it
# with SIGINT ignored (how CI scripts and `cmd &` start things), and an interrupt then reaches
# no one.  The wrapper records each Popen.wait and terminate it makes (``.trace``), so a test
# waits on what the wrapper did, never on a wall-clock margin.
WRAPPED = """
import signal, subprocess, sys, types
signal.signal(signal.SIGINT, signal.default_int_handler)
from pytest_fl_contract import cli
from pytest_fl_contract.config import suites
TRACE = sys.argv[1] + ".trace"


def note(what):
    with open(TRACE, "a") as out:
        out.write(what + "\\n")


class Traced(subprocess.Popen):
    def wait(self, timeout=None):
        note(f"wait {timeout}")
        return super().wait(timeout)

    def terminate(self):
        note("terminate")
        super().terminate()


subprocess.Popen = Traced
child = '''
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    pathlib.Path(sys.argv[1] + ".ready").write_text("")  # handlers in place: the test may signal
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    time.sleep(0.5)  # writing its report
    open(sys.argv[1], "w").write("report")
    sys.exit(3)
'''
suites.pytest_argv = lambda names, extra: [sys.executable, "-c", child, sys.argv[1]]
sys.exit(cli.cmd_contracts(types.SimpleNamespace(suites=["reductions"], passthrough=[])))
"""
HANG_GUARD = 300  # seconds: only a hang ends a wait this long; no verdict rests on it


def _start(script: str, base):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parent.parent)}
    return subprocess.Popen(
        [sys.executable, "-c", script, str(base)], start_new_session=True, env=env, stdin=subprocess.DEVNULL
    )


def _wait_for(test, proc, what: str):
    """Until ``test()`` holds: the child says where it is (files), never a fixed sleep."""
    import time

    deadline = time.monotonic() + HANG_GUARD
    while not test():
        assert proc.poll() is None, f"the wrapper ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"hung: never {what}"
        time.sleep(0.02)


def _trace(base) -> list[str]:
    path = base.parent / (base.name + ".trace")
    return path.read_text().splitlines() if path.exists() else []


def test_an_interrupted_lane_waits_for_pytests_report(tmp_path):
    """Ctrl-C, or a CI step's time limit, signals the whole process group: the wrapper must
    wait for pytest to write what ran, not leave first."""
    import os
    import signal

    report = tmp_path / "lane.xml"
    proc = _start(WRAPPED, report)
    _wait_for(
        lambda: (tmp_path / "lane.xml.ready").exists() and "wait None" in _trace(report),
        proc,
        "the wrapped pytest started",
    )
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=HANG_GUARD) == 3
    assert report.read_text() == "report"
    assert "terminate" not in _trace(report)


STUCK = WRAPPED.replace(
    """    time.sleep(0.5)  # writing its report""",
    """    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pytest that hangs in its teardown
    pathlib.Path(sys.argv[1] + ".interrupted").write_text("")
    while True:
        time.sleep(3600)""",
)


def test_a_second_interrupt_ends_a_pytest_that_hangs(tmp_path):
    import os
    import signal

    base = tmp_path / "x"
    proc = _start(STUCK, base)
    _wait_for(
        lambda: (tmp_path / "x.ready").exists() and "wait None" in _trace(base), proc, "the wrapped pytest started"
    )
    os.killpg(proc.pid, signal.SIGINT)
    # the first interrupt only waits: the wrapper is back in wait() (its second), having ended nothing
    _wait_for(
        lambda: (tmp_path / "x.interrupted").exists() and _trace(base).count("wait None") >= 2,
        proc,
        "the wrapper waited again after the first interrupt",
    )
    assert "terminate" not in _trace(base)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=HANG_GUARD) == 128 + signal.SIGTERM
    assert "terminate" in _trace(base)


@given(st.lists(st.floats(0, 100), min_size=1, max_size=80), st.integers(2, 16), st.integers(1, 4))
def test_xdists_first_batch_never_gives_a_worker_two_of_the_longest(times, workers, batch):
    """Worker w runs cases batch * w .. batch * (w + 1) - 1 first.  Dealt in a snake, each
    worker's first batch holds exactly one of the W longest, its r-th case is the one of
    rank r * W + w (r even) or r * W + W - 1 - w (r odd); past the first batch the order
    stays longest first."""
    ids = [f"t{i}" for i in range(len(times))]
    durations = dict(zip(ids, times))
    order = longest_first(ids, durations, workers, batch)
    assert sorted(order) == list(range(len(ids)))
    plain = longest_first(ids, durations)
    if len(ids) < batch * workers or batch < 2:
        assert order == plain
        return
    top = set(plain[:workers])
    for w in range(workers):
        mine = order[batch * w : batch * (w + 1)]
        assert len(top.intersection(mine)) == 1
        assert mine == [plain[r * workers + (w if r % 2 == 0 else workers - 1 - w)] for r in range(batch)]
    assert order[batch * workers :] == plain[batch * workers :]


@pytest.mark.parametrize("cases", [3, 7, 31, 32, 200, 4080])
@pytest.mark.parametrize("workers", [2, 16])
@pytest.mark.parametrize("chunk", [None, 1, 8])
def test_first_batch_is_what_xdists_load_scheduler_sends(cases, workers, chunk):
    """first_batch() against xdist's own LoadScheduling, fed fake workers: what each worker
    is sent first, for the selections and --maxschedchunk values a lane meets."""
    from types import SimpleNamespace

    from xdist.scheduler.load import LoadScheduling

    from pytest_fl_contract.hardware.schedule import first_batch

    class Node:
        def __init__(self, name: str) -> None:
            self.sent: list[int] = []
            self.gateway = SimpleNamespace(id=name)

        def send_runtest_some(self, indices: list[int]) -> None:
            self.sent.extend(indices)

        def send_runtest_all(self) -> None:
            self.sent.extend(range(cases))

        def shutdown(self) -> None:
            pass

    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], getoption=lambda name: chunk)
    scheduler = LoadScheduling(config)  # type: ignore[arg-type]
    nodes = [Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
    for node in nodes:
        scheduler.add_node_collection(node, [f"t{i}" for i in range(cases)])  # type: ignore[arg-type]
    scheduler.schedule()
    batch = first_batch(cases, workers, chunk)
    if batch == 1:  # under two cases a worker xdist deals them round robin: worker w gets case w first
        assert [node.sent[0] for node in nodes[:cases]] == list(range(min(cases, workers)))
    else:  # worker w gets cases batch * w .. batch * (w + 1) - 1 first
        assert all(node.sent == list(range(batch * w, batch * (w + 1))) for w, node in enumerate(nodes))


def test_an_emulated_lanes_xdist_workers_take_their_share_of_the_cores(pytester, run_subprocess):
    """Two workers on the CPU lane: each runs torch on its share of the cores (OpenMP pools
    that each take every core spin against each other), and OMP_NUM_THREADS, when set, wins."""
    from pytest_fl_contract.hardware.schedule import usable_cpus

    pytester.makepyfile(
        test_threads="""
import os, pathlib
def test_threads():
    import torch
    out = pathlib.Path(os.environ["THREADS_OUT"]) / os.environ.get("PYTEST_XDIST_WORKER", "main")
    out.write_text(str(torch.get_num_threads()))
"""
    )
    pytester._monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    share = cpu_share(usable_cpus(), 2)
    other = 2 if share == 1 else 1  # torch holds OMP_NUM_THREADS to the cores it has
    for env, want in (({}, share), ({"OMP_NUM_THREADS": str(other)}, other)):
        out = pytester.mkdir(f"threads{len(env)}")
        result = run_subprocess(
            "-p",
            "fl_contract",
            "-p",
            "xdist",
            "-n",
            "2",
            "--platform",
            "cpu",
            "-p",
            "no:randomly",
            env={"THREADS_OUT": str(out), **env},
        )
        assert result.ret == 0, result.outlines[-20:]
        seen = {int(p.read_text()) for p in out.iterdir()}
        assert seen == {want}, (env, seen)
