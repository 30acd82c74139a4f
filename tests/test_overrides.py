"""Vendor overrides (issue 59, class 3): the backend's copies are found in source on any line
and in the registration at run time; the differential contract fails an override that differs
from the generic kernel or lacks its guard, and holds the real one; a backend that did not load
is said, not run as the vendor's.  The emulator patches a process for good, so the runtime
checks run in a fresh interpreter."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT, fresh_result

CONTRACTS = ROOT / "contracts"

PROBE = textwrap.dedent("""
    import dataclasses, functools, json
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("iluvatar-bi-v150", ())
    import flag_gems
    from pytest_fl_contract.overloads import cases, differential, table
    from pytest_fl_contract.registry import overrides

    found = {"failure": overrides.load_failure(flag_gems), "registered": sorted(overrides.registered(flag_gems))}
    if found["registered"]:
        vendor, generic = overrides.registered(flag_gems)["div_mode"]
        entry = next(e for e in table.read(flag_gems) if e.name == "div.Tensor_mode")
        case = cases.plan(flag_gems, (entry,), "quick")[0].cases[-1]

        @functools.wraps(vendor)
        def wrong(*a, **k):  # off by one in its last element
            r = vendor(*a, **k)
            r.reshape(-1)[-1:].add_(1)
            return r

        @functools.wraps(vendor)
        def unguarded(a, b, *r, **k):  # the empty-input guard the generic kernel has, missing (#6163)
            if a.numel() == 0:
                raise IndexError("index 0 is out of bounds for an empty grid")
            return vendor(a, b, *r, **k)

        generic_calls = []

        @functools.wraps(vendor)
        def faulting(*a, **k):  # a device's illegal access, raised where its launch waits (cases.settle)
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

        @functools.wraps(generic)
        def counted(*a, **k):
            generic_calls.append(1)
            return generic(*a, **k)

        verdict = differential.differential(flag_gems, case, faulting, counted, budget=1100, seconds=300, emulated=True)
        found["faulting"] = [verdict.status, verdict.detail, len(generic_calls)]
        for name, fn, transform in (("real", vendor, case.transform), ("wrong", wrong, case.transform),
                                    ("unguarded", unguarded, "empty"), ("unguarded-nonempty", unguarded, case.transform)):
            verdict = differential.differential(flag_gems, dataclasses.replace(case, transform=transform), fn, generic,
                                                budget=1100, seconds=300, emulated=True)
            found[name] = [verdict.status, verdict.detail]
    print("RESULT " + json.dumps(found))
""")


def _probe(pythonpath: list[str]) -> dict:
    return fresh_result(PROBE, pythonpath=pythonpath)


def test_backend_sources_502():
    """Read, never imported: 5.0.2's Iluvatar backend overrides div's rounding modes."""
    import flag_gems

    from pytest_fl_contract.registry import overrides

    root = Path(flag_gems.__file__).parent
    assert "iluvatar" in overrides.vendors(root)
    ops = {o.name: o for o in overrides.backend_ops(root, "iluvatar")}
    assert ops["div_mode"].generic and ops["div_mode"].module == "div.py"
    assert not ops["matmul_bf16"].generic  # a vendor-only op: nothing to compare it with
    assert any(line.startswith("| iluvatar |") for line in overrides.table(root, ["iluvatar"]))


def test_backend_sources_54(fg54_site):
    from pytest_fl_contract.registry import overrides

    root = Path(fg54_site) / "flag_gems"
    over = {o.name for o in overrides.backend_ops(root, "iluvatar") if o.generic}
    assert {"mm", "addmm", "var", "scatter_add_"} <= over


@pytest.mark.slow
def test_differential_502():
    """On the emulated Iluvatar lane 5.0.2 registers its div_mode overrides; the real one agrees
    with the generic kernel, one off in its last element and one missing the empty guard fail,
    naming what they did."""
    found = _probe([str(ROOT)])
    assert found["failure"] is None and found["registered"] == ["div_mode", "div_mode_"]
    assert found["real"] == ["PASS", ""]
    assert found["wrong"][0] == "WRONG" and "differs from the generic kernel" in found["wrong"][1]
    assert found["unguarded"] == [
        "WRONG",
        "the override raises where the generic kernel returns: IndexError: index 0 is out of bounds for an empty grid",
    ]
    assert found["unguarded-nonempty"] == ["PASS", ""]
    # a fault is the override's own, and nothing runs on the device after it (its context is lost)
    assert found["faulting"] == [
        "FAULT",
        "the override faults: RuntimeError: CUDA error: an illegal memory access was encountered",
        0,
    ]


@pytest.mark.slow
def test_backend_that_did_not_load_is_said_54(fg54_site):
    """5.4.0.dev0's Iluvatar backend imports triton.ops, which Triton 3 dropped: FlagGems falls
    back to its generic kernels saying only a note. The lane says which import failed."""
    found = _probe([str(fg54_site), str(ROOT)])
    assert found["registered"] == []
    assert found["failure"] and "_iluvatar.ops did not import" in found["failure"] and "triton.ops" in found["failure"]


@pytest.mark.slow
def test_contract_on_the_emulated_lane(run_subprocess):
    """The contract's items on the emulated Iluvatar lane are the overridden overloads' cases, and pass."""
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-c",
        str(CONTRACTS / "pytest.ini"),
        "--rootdir",
        str(CONTRACTS),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        str(CONTRACTS / "overloads" / "test_overrides.py"),
        "-W",
        "ignore::UserWarning",
        timeout=600,
    )
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert "fl-contract vendor overrides: div.Scalar_mode, div.Tensor_mode" in out
    # the full sweep of layouts and samples (broadcasting among them) whatever the lane's: 74 cases
    # pass, the rest are the emulator's own gaps (its half-precision casts) and transforms that
    # do not apply, each skipped saying so
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed.group(1)) >= 70 and " failed" not in out.splitlines()[-1], out[-2000:]
