"""The overload suite (issue 57): FlagGems' registration table is the denominator on both lines,
a planted wrong kernel is WRONG and fails, a refused dtype is UNSUPPORTED, an entry with no
sample is UNTESTED with its reason, a case that never reaches its function does not count, and
every item carries the JUnit interface's properties.  The emulator patches a process for good,
so each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from pytest_fl_contract.results.scoreboard import REGISTERED

from .conftest import ROOT, fresh_result

CONTRACTS = ROOT / "contracts"

ENGINE = textwrap.dedent("""
    import json, sys
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import flag_gems
    from pytest_fl_contract.overloads import cases, samples, table

    entries = table.read(flag_gems)
    raw = flag_gems._FULL_CONFIG
    found = {"count": len(entries), "raw": len(raw),
             "names": [e.name for e in entries] == [item[0] for item in raw],
             "functions": [e.function for e in entries] == [item[1].__name__ for item in raw],
             "version": flag_gems.__version__}
    if "--run" in sys.argv:
        # a case whose sample dispatch routes elsewhere: abs's sample, called as abs, counted for sum
        case = cases.Case("sum.dim_IntList", samples.Source("abs", "op"), 0, "float32", "none")
        found["unreached"] = cases.run(flag_gems, case, budget=64, seconds=60).status
        case = cases.Case("abs", samples.Source("abs", "op"), 0, "float32", "none")
        found["reached"] = cases.run(flag_gems, case, budget=64, seconds=60).status
    print("RESULT " + json.dumps(found))
""")


def _engine(pythonpath: list[str], *args: str) -> dict:
    return fresh_result(ENGINE, *args, pythonpath=pythonpath)


@pytest.mark.slow
def test_table_and_reach_502():
    """Every entry of 5.0.2's table, in its order; a case counts only where dispatch reached
    the function registered for its overload."""
    found = _engine([str(ROOT)], "--run")
    assert found["version"].startswith("5.0.2")
    assert found["count"] == found["raw"] > 0 and found["names"] and found["functions"]
    assert found["unreached"] == "UNTESTED"  # abs's call never reaches sum's function
    assert found["reached"] == "PASS"


@pytest.mark.slow
def test_table_54(fg54_site):
    found = _engine([str(fg54_site), str(ROOT)])
    assert found["version"].startswith("5.4")
    assert found["count"] == found["raw"] > 0 and found["names"] and found["functions"]


PLANTED = textwrap.dedent('''
    """Registers a small table in place of FlagGems' own: a wrong abs, a neg that refuses
    float32, exp as FlagGems has it, and an op no OpInfo has."""
    import functools

    import pytest


    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(session):
        import flag_gems

        real = {item[0]: item[1] for item in flag_gems._FULL_CONFIG}

        @functools.wraps(real["abs"])
        def wrong(*args, **kwargs):
            result = real["abs"](*args, **kwargs)
            result.reshape(-1)[-1:].add_(1)
            return result

        @functools.wraps(real["neg"])
        def refuses(*args, **kwargs):
            raise NotImplementedError("neg: float32 is not supported")

        nosample = "_functional_sym_constrain_range_for_size"  # no OpInfo, no generator
        flag_gems._FULL_CONFIG = (("abs", wrong), ("neg", refuses), ("exp", real["exp"]), (nosample, real[nosample]))
''')


def _cases(path) -> list[tuple[str, str, dict[str, str]]]:
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        found.append((case.get("name"), outcome, props))
    return found


@pytest.mark.slow
def test_planted_table(pytester, run_subprocess):
    """A planted wrong kernel is WRONG and fails; a refused dtype is UNSUPPORTED and skips; an
    op with no sample is UNTESTED and skips with its reason; the right kernel passes; every
    item has the interface's properties."""
    pytester.makepyfile(planted=PLANTED)
    xml = pytester.path / "junit.xml"
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "planted",
        "-c",
        str(CONTRACTS / "pytest.ini"),
        "--rootdir",
        str(CONTRACTS),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--platform",
        "cpu",
        "-q",
        "-rs",
        f"--junitxml={xml}",
        str(CONTRACTS / "overloads"),
        "-W",
        "ignore::UserWarning",
        timeout=600,
    )
    found = _cases(xml)
    assert found, result.stdout.str()[-3000:]
    by = {}
    for name, outcome, props in found:
        if not name.startswith("test_overload["):  # the override differential: none on the cpu platform
            assert name == "test_override_agrees_with_generic[no-override]" and outcome == "skipped", name
            continue
        assert set(props) >= {"fl_overload", "fl_status", "fl_detail", "fl_transform", "fl_sample"}, name
        assert props["fl_status"] in ("PASS", "WRONG", "FAULT", "ERROR", "UNSUPPORTED", "TIMEOUT", "UNTESTED")
        by.setdefault(props["fl_overload"], []).append((outcome, props))
    nosample = "_functional_sym_constrain_range_for_size"
    assert set(by) == {"abs", "neg", "exp", nosample}
    assert any(o == "failure" and p["fl_status"] == "WRONG" and "max error" in p["fl_detail"] for o, p in by["abs"])
    assert all(o == "skipped" and p["fl_status"] == "UNSUPPORTED" for o, p in by["neg"])
    assert any(o == "passed" and p["fl_status"] == "PASS" for o, p in by["exp"])
    assert [o for o, _ in by[nosample]] == ["skipped"]
    assert by[nosample][0][1]["fl_status"] == "UNTESTED" and "no OpInfo entry" in by[nosample][0][1]["fl_detail"]
    assert {p["fl_transform"] for _, p in by["exp"]} >= {"none", "boundary"}
    result.stdout.fnmatch_lines(["*UNSUPPORTED: NotImplementedError: neg: float32 is not supported*", "*UNTESTED: *"])
    # the denominator is written before any case runs: a run cut short still has it
    registered = next(p.get("value") for p in ET.parse(xml).iter("property") if p.get("name") == REGISTERED)
    assert json.loads(registered) == sorted({"abs", "neg", "exp", nosample})


def test_the_reach_probe_calls_the_sample_on_the_lanes_device():
    """OpInfo draws its samples on the CPU; the spy is registered under the lane device's
    dispatch key, so the probe must call the sample there: on an H100 a CPU sample reached
    no CUDA registration and all 433 overloads were planned UNTESTED.  The meta device
    stands in for the lane's here (a dispatch key of its own, no kernel run)."""
    import warnings

    from pytest_fl_contract.overloads import samples

    sample = samples.drawn("abs", "float32")[0]
    source = samples.Source("abs", "op")

    def fn(*args, **kwargs):
        raise AssertionError("the spy stands for it")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert samples.reaches("abs", source, sample, ("Meta",), fn, device="meta")
        assert not samples.reaches("abs", source, sample, ("Meta",), fn, device="cpu")
        assert samples.reaches("abs", source, sample, ("CPU",), fn, device="cpu")


def test_a_known_defects_predicate_reads_every_call_form_and_never_stops_collection():
    """group_norm's predicate read aten's positional form only (C and G at args[3], args[5]);
    on an H100 a sample reached native_group_norm through F.group_norm(input, num_groups) and
    its IndexError stopped the overload suite's collection.  Both forms are read now, and a
    predicate that cannot read a sample does not apply (the case runs unmarked)."""
    import torch

    from pytest_fl_contract.overloads import defects
    from pytest_fl_contract.overloads.cases import Case
    from pytest_fl_contract.overloads.samples import Source

    x = torch.randn(2, 6, 4)
    op = Case("native_group_norm", Source("nn.functional.group_norm", "op"), 0, "float32", "none")
    own = Case("native_group_norm", Source("native_group_norm", "op"), 0, "float32", "none")
    assert defects._group_not_pow2(own, (x, (None, None, 2, 6, 4, 2, 1e-5), {}))  # its OpInfo: aten's form
    aten = Case("native_group_norm", Source("nn.functional.group_norm", "aten"), 0, "float32", "none")
    assert defects._group_not_pow2(op, (x, (2,), {}))  # 6 / 2 = 3 channels a group
    assert not defects._group_not_pow2(op, (x, (3,), {}))  # 2 a group
    assert defects._group_not_pow2(aten, (x, (None, None, 2, 6, 4, 2, 1e-5), {}))
    backward = Case("native_group_norm_backward", Source("nn.functional.group_norm", "aten"), 0, "float32", "none")
    mean = torch.zeros(2, 2)
    assert defects._group_not_pow2(backward, (x, (x, mean, mean, None, 2, 6, 4, 2, [True] * 3), {}))

    def unreadable(case, sample):
        return bool(sample[0] > 0)  # "Boolean value of Tensor with more than one value is ambiguous"

    assert not defects._applies(defects.Known("some_defect", unreadable), op, (x, (2,), {}))


POISON = textwrap.dedent("""
    import json, sys
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", tuple(sys.argv[1:]))
    import flag_gems
    from pytest_fl_contract.emulation import device
    from pytest_fl_contract.overloads import cases, table

    entry = next(e for e in table.read(flag_gems) if e.name == "mm")
    case = next(c for c in cases.plan(flag_gems, (entry,), "quick")[0].cases if c.transform == "boundary")
    verdict = cases.run(flag_gems, case, budget=1100, seconds=120, emulated=True)
    entry = next(e for e in table.read(flag_gems) if e.name == "abs")
    untouched = cases.run(flag_gems, cases.plan(flag_gems, (entry,), "quick")[0].cases[0], budget=1100,
                          seconds=120, emulated=True)
    print("RESULT " + json.dumps({"status": verdict.status, "detail": verdict.detail[:200],
                                  "heap_after": device.DEVICE.heap_fill, "lanes": verdict.defect_lanes,
                                  "abs": [untouched.status, untouched.defect_lanes]}))
""")


@pytest.mark.slow
def test_a_read_past_a_tensor_shows_in_the_overload_suite():
    """Each case runs with NaN around its tensors: mm's K tail read without its row mask (the
    Iluvatar defect) multiplies the rows past the end by the masked operand's zeros, which a
    finite heap pattern survived (the overload suite passed mm there) and NaN does not.  The
    emulator's heap is as it was after the case, and each verdict carries the lanes the
    injected defect made its call read (benchmarks/overload_reach.py explains a pass with it)."""
    clean = fresh_result(POISON)
    assert clean["status"] == "PASS" and clean["heap_after"] is None, clean
    assert clean["lanes"] is None and clean["abs"] == ["PASS", None]  # nothing injected: nothing measured
    defective = fresh_result(POISON, "masked_2d_row_load")
    assert defective["status"] == "WRONG" and "nan" in defective["detail"], defective
    assert defective["heap_after"] is None
    # the emulator's measure of the defect's reach into each call: mm's K tail read, abs untouched
    assert defective["lanes"] > 0 and defective["abs"] == ["PASS", 0], defective
