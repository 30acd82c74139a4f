"""The lane session and its outcomes as data: the known-defect decision travels with the
report (across xdist too), one summary feeds the terminal, JUnit (a valid xunit2 suite
property, never per-case properties) and the runner, and the workaround is installed the
moment flag_gems is imported, whoever imports it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from junitparser import JUnitXml

from pytest_fl_contract.reporting.junit import count
from pytest_fl_contract.reporting.outcomes import PROPERTY, CaseRecord, Summary, record_of

TAGGED = """
import pytest
from pytest_fl_contract.session import tag_case

def pytest_collection_modifyitems(items):
    for item in items:
        tag_case(item, "sum", item.name.removeprefix("test_").split("_")[0])
"""

CASES = """
import pytest

@pytest.mark.known_defect("masked_2d_row_load")
def test_accuracy_still_broken():
    assert False

@pytest.mark.known_defect("masked_2d_row_load")
def test_determinism_fixed():
    pass

def test_keepdim_plain_failure():
    assert False

@pytest.mark.skip_platforms("iluvatar", reason="no fp64 here")
def test_fp64_skipped():
    pass

def test_out_passes():
    pass
"""


def _suite_properties(path):
    suite = next(iter(JUnitXml.fromfile(str(path))))
    return {p.name: p.value for p in suite.properties()}


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_known_defects_and_failures_travel_as_data(pytester, run_subprocess, xdist):
    pytester.makeconftest(TAGGED)
    pytester.makepyfile(test_cases=CASES)
    result = run_subprocess(
        "-p", "fl_contract", "-p", "xdist", "--platform", "iluvatar", "--fl-no-workaround", "--junitxml=out.xml", *xdist
    )
    result.assert_outcomes(passed=1, failed=2, skipped=1, xfailed=1)
    summary = Summary.from_json(_suite_properties(pytester.path / "out.xml")[PROPERTY])
    assert dict(summary.defects["masked_2d_row_load"]) == {"xfailed": 1, "xpassed": 1}
    assert {op: dict(c) for op, c in summary.failures.items()} == {"sum": {"keepdim": 1, "determinism": 1}}
    assert dict(summary.skips) == {"skipped on iluvatar: no fp64 here": 1}
    result.stdout.fnmatch_lines(
        [
            "known defect masked_2d_row_load: 1 xfailed (still present), 1 xpassed - the defect no longer shows*",
            "failing contracts of sum: 2 (determinism 1, keepdim 1)",
        ]
    )
    # the runner's reading of the same file: the same summary, nothing parsed from text
    counts = count(JUnitXml.fromfile(str(pytester.path / "out.xml")), "step")
    assert counts.summary.to_json() == summary.to_json()
    assert (counts.passed, counts.failed, counts.skipped, counts.xfailed, counts.xpassed) == (1, 2, 1, 1, 1)


def test_xdist_workers_detect_what_the_controller_detected(pytester, run_subprocess):
    """Auto-detection on a CPU machine starts the emulator, which sets GEMS_VENDOR for
    FlagGems; the workers inherit it and must still detect the CPU, not that vendor."""
    pytester.makepyfile(
        test_where="""
        import os

        def test_on_the_emulated_cpu(fl_settings):
            assert fl_settings.platform.name == "cpu", fl_settings.detection
            assert os.environ["TRITON_INTERPRET"] == "1"
    """
    )
    run_subprocess("-p", "fl_contract", "-p", "xdist", "-n", "2").assert_outcomes(passed=1)


def test_no_per_case_properties_unless_xunit1(pytester, run_subprocess):
    pytester.makeconftest(TAGGED)
    pytester.makepyfile(test_cases=CASES)
    run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--junitxml=out.xml")
    text = (pytester.path / "out.xml").read_text()
    assert "<testcase" in text and text.count("<properties>") == 1, "per-case <properties> are not xunit2"
    run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--junitxml=x1.xml", "-o", "junit_family=xunit1")
    cases = [c for s in JUnitXml.fromfile(str(pytester.path / "x1.xml")) for c in s]
    props = {c.name: {p.get("name"): p.get("value") for p in c._elem.iter("property")} for c in cases}
    assert props["test_out_passes"] == {"fl_op": "sum", "fl_contract": "out"}


def test_summary_round_trip_and_malformed_property():
    summary = Summary().extend(
        [
            CaseRecord("failed", "sum", "accuracy"),
            CaseRecord("xfailed", "argmax", "x", "d1"),
            CaseRecord("skipped", skip_reason="why"),
            CaseRecord("xpassed", "mean", "keepdim", "d1"),
            CaseRecord("error", "sum", "out"),
        ]
    )
    again = Summary.from_json(summary.to_json())
    assert again.to_json() == summary.to_json()
    assert dict(again.failures["sum"]) == {"accuracy": 1, "out": 1} and dict(again.defects["d1"]) == {
        "xfailed": 1,
        "xpassed": 1,
    }
    for bad in ("", "[]", "{", json.dumps({"skips": {"a": "3"}}), json.dumps({"defects": {"d": 4}})):
        with pytest.raises(ValueError, match=PROPERTY):
            Summary.from_json(bad)


def _report(**kw):
    base = {"skipped": False, "failed": False, "when": "call", "longrepr": None}
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize(
    "report, expected",
    [
        (_report(), CaseRecord("passed")),
        (_report(when="setup"), None),
        (_report(failed=True), CaseRecord("failed")),
        (_report(failed=True, when="setup"), CaseRecord("error")),
        (
            _report(skipped=True, when="setup", longrepr=("f", 1, "Skipped: nope")),
            CaseRecord("skipped", skip_reason="nope"),
        ),
        (
            _report(skipped=True, wasxfail="r", fl_case={"op": "sum", "contract": "a", "defect": "d"}),
            CaseRecord("xfailed", "sum", "a", "d"),
        ),
        (
            _report(failed=True, fl_case={"op": "sum", "contract": "a", "defect": "d", "xpass": True}),
            CaseRecord("xpassed", "sum", "a", "d"),
        ),
        (_report(wasxfail="r"), CaseRecord("xpassed")),
    ],
)
def test_record_of_each_report_kind(report, expected):
    assert record_of(report) == expected


IMPORTS_AT_IMPORT_TIME = """
import flag_gems  # a FlagGems-style conftest: flag_gems at import time, no plugin fixture
import sys

def pytest_configure(config):
    config.wrapped_at_import = hasattr(sys.modules["flag_gems.ops.sum"].sum_dim, "__wrapped__")
"""


@pytest.mark.slow
def test_workaround_is_installed_when_a_conftest_imports_flag_gems(pytester, run_subprocess):
    pytester.makeconftest(IMPORTS_AT_IMPORT_TIME)
    pytester.makepyfile("""
        import sys
        def test_wrapped(request):
            assert request.config.wrapped_at_import
            assert hasattr(sys.modules["flag_gems.ops.softmax"].softmax, "__wrapped__")
    """)
    result = run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--fl-emulate")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["fl-contract workaround installed: pytest_fl_contract.workarounds.masked_reductions*"])
    result = run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--fl-emulate", "--fl-no-workaround")
    result.assert_outcomes(failed=1)


@pytest.mark.parametrize(
    "body, message",
    [
        ("COVERS = 5\ndef install(): pass\ndef uninstall(): pass\n", "COVERS must be a list of defect ids"),
        ("COVERS = ('masked_2d_row_load',)\n", "lacks install(), uninstall()"),
        ("raise ImportError('broken vendor module')\n", "cannot import brokenwa"),
    ],
)
def test_broken_workaround_module_is_one_line(pytester, run_subprocess, body, message):
    pytester.makepyfile(brokenwa=body)
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-workaround",
        "brokenwa",
        "--fl-source-root",
        str(pytester.path),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and message in errors[0], result.stderr.lines
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_failing_install_stops_the_run_with_one_line(pytester, run_subprocess):
    """install() runs the moment flag_gems is imported (here a stand-in module); when it
    raises, the run stops with one line naming the workaround - no result is trusted."""
    pytester.makepyfile(
        badinstall="COVERS = ()\ndef install():\n    raise RuntimeError('no registrar')\ndef uninstall(): pass\n"
    )
    pytester.makepyfile(flag_gems="VERSION = 'stand-in'\n")
    pytester.makepyfile(test_imports="def test_import():\n    import flag_gems\n\ndef test_later():\n    pass\n")
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-workaround",
        "badinstall",
        "--fl-source-root",
        str(pytester.path),
        "test_imports.py",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*workaround badinstall: install() failed: RuntimeError: no registrar*"])
    assert "test_later" not in result.stdout.str() or "passed" not in result.stdout.str()


LAUNCH_CASES = """
import pytest

class OutOfResources(Exception):
    pass

@pytest.mark.known_defect("mm_fp32_small_k_shared_memory")
def test_a_config_past_the_device():
    raise OutOfResources("out of resource: shared memory, Required: 327704, Hardware limit: 232448")

@pytest.mark.known_defect("mm_fp32_small_k_shared_memory")
def test_a_config_that_fits():
    pass

@pytest.mark.known_defect("mm_fp32_small_k_shared_memory")
def test_wrong_numbers_are_not_the_launch():
    assert False
"""


def test_a_defect_triggered_by_the_launch_is_decided_when_the_call_runs(pytester, run_subprocess):
    """mm_fp32_small_k_shared_memory shows where the config FlagGems' tuner picks needs more
    shared memory than the card has (an H200 and an H100 differ): the launch's OutOfResources
    is the known defect, a call whose config fits is a plain pass (no strict XPASS on the card
    the predicate was not written on), and a wrong answer is a failure."""
    pytester.makepyfile(test_launch=LAUNCH_CASES)
    result = run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--fl-no-workaround", "-rA")
    result.assert_outcomes(passed=1, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        ["*known defect mm_fp32_small_k_shared_memory fails with OutOfResources, not AssertionError*"]
    )
