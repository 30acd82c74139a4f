"""The plugin end to end, with pytester in subprocesses (autoload off, loaded by -p)."""

from __future__ import annotations

import re

import pytest
from junitparser import JUnitXml

MARKED = """
import sys
import pytest

def test_torch_not_imported():
    assert "torch" not in sys.modules and "triton" not in sys.modules

@pytest.mark.requires_device_cast
def test_cast():
    pass

@pytest.mark.requires_csrc
def test_source():
    pass

@pytest.mark.platforms("cuda")
def test_nvidia_only():
    pass

@pytest.mark.skip_platforms("iluvatar", reason="no fp64 accumulate")
def test_not_on_iluvatar():
    pass

@pytest.mark.requires_capability("fp64")
def test_fp64():
    pass

@pytest.mark.known_defect("masked_2d_row_load")
def test_defect_still_there():
    assert False, "rows past N were read"

@pytest.mark.known_defect("masked_2d_row_load")
def test_defect_fixed():
    pass
"""


def test_iluvatar_lane_strict_markers(pytester, run_subprocess):
    pytester.makepyfile(test_marked=MARKED)
    result = run_subprocess(
        "-p", "fl_contract", "--platform", "iluvatar", "--fl-no-workaround", "--strict-markers", "-rs"
    )
    result.stdout.fnmatch_lines(
        [
            "fl-contract *: platform iluvatar (--platform)",
            "fl-contract device: not queried (torch not imported) | torch * | triton * | flag_gems *",
            "fl-contract layout: wheel (no */csrc) | workaround: off (--fl-no-workaround) | sweep: full | interpreter: no",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*fl-contract summary*",
            "skipped (5), by reason:",
            "*1  iluvatar has no on-device dtype cast (registry: device_cast = false)",
            "*1  wheel-only layout: */csrc does not exist",
            "*1  runs only on nvidia; this is iluvatar",
            "*1  skipped on iluvatar: no fp64 accumulate",
            "*1  iluvatar lacks fp64 (registry)",
            "known defect masked_2d_row_load: 1 xfailed (still present), 1 xpassed - the defect no longer shows: fixed compiler?",
        ]
    )
    result.assert_outcomes(passed=1, skipped=5, xfailed=1, failed=1)


def test_workaround_turns_known_defect_into_must_pass(pytester, run_subprocess):
    pytester.makepyfile(test_marked=MARKED)
    result = run_subprocess("-p", "fl_contract", "--platform", "iluvatar")
    result.assert_outcomes(passed=2, skipped=5, failed=1)  # the defect test now fails for real


def test_nvidia_lane_runs_what_iluvatar_skips(pytester, run_subprocess):
    pytester.makepyfile(test_marked=MARKED)
    (pytester.path / "csrc").mkdir()
    result = run_subprocess("-p", "fl_contract", "--platform", "cuda", "--fl-source-root", str(pytester.path))
    result.stdout.fnmatch_lines(["fl-contract layout: checkout (*csrc exists)*"])
    result.assert_outcomes(passed=7, failed=1)  # nothing skipped on nvidia; the defect is not listed there


@pytest.mark.parametrize(
    "args",
    [
        ["--platform", "nosuch"],
        ["--platform", "cpu", "--fl-inject", "nosuch"],
        ["--platform", "cpu", "--fl-profile", "nosuch"],
    ],
)
def test_bad_option_is_one_line_usage_error(pytester, run_subprocess, args):
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "fl_contract", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: unknown"), result.stderr.lines
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_env_and_ini_choose_the_platform(pytester, run_subprocess):
    pytester.makeini("[pytest]\nfl_platform = ascend\n")
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "fl_contract")
    result.stdout.fnmatch_lines(["*platform ascend (ini fl_platform)*"])
    pytester._monkeypatch.setenv("FL_PLATFORM", "musa")
    result = pytester.runpytest_subprocess("-p", "fl_contract")
    result.stdout.fnmatch_lines(["*platform mthreads (FL_PLATFORM)*"])


def test_bad_marker_arguments_fail_collection(pytester, run_subprocess):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.skip_platforms("iluvatar")
        def test_x(): pass
    """)
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_x: @skip_platforms needs reason=...*"])


def test_disabled_plugin_adds_nothing(pytester, run_subprocess):
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "no:fl_contract", autoload=True)
    result.assert_outcomes(passed=1)
    assert "fl-contract" not in result.stdout.str()


def test_autoload_and_p_together_are_fine(pytester, run_subprocess):
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia", autoload=True)
    result.assert_outcomes(passed=1)


def _properties(path):
    xml = JUnitXml.fromfile(str(path))
    suite = next(iter(xml))
    return {p.name: p.value for p in suite.properties()}, [c.classname for c in suite]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_junit_properties_and_classname(pytester, run_subprocess, xdist):
    pytester.makepyfile(test_marked=MARKED)
    result = run_subprocess("-p", "fl_contract", "-p", "xdist", "--platform", "iluvatar", "--junitxml=out.xml", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    props, classnames = _properties(pytester.path / "out.xml")
    assert props["fl_platform"] == "iluvatar" and props["fl_layout"] == "wheel"
    assert props["fl_workaround"] == "pytest_fl_contract.workarounds.masked_reductions"
    assert props["fl_emulated"] == "no" and "version_flag_gems" in props
    assert all(c.startswith("iluvatar.") for c in classnames)


def test_junit_prefix_option(pytester, run_subprocess):
    pytester.makepyfile("def test_x(): pass")
    run_subprocess("-p", "fl_contract", "--platform", "nvidia", "--fl-junit-prefix", "lane-a", "--junitxml=out.xml")
    _, classnames = _properties(pytester.path / "out.xml")
    assert classnames == ["lane-a.test_junit_prefix_option"]


def test_wheel_first_resolution(pytester, run_subprocess):
    """A checkout's unbuilt package must not shadow the installed wheel."""
    site = pytester.path.parent / f"{pytester.path.name}-site"  # outside the checkout
    pkg = site / "vendorpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHERE = 'wheel'\n")
    src = pytester.path / "vendorpkg"
    src.mkdir()
    (src / "__init__.py").write_text("WHERE = 'checkout'\n")
    pytester.makepyfile(f"""
        import sys
        from pathlib import Path
        from pytest_fl_contract.config.layout import resolve_module
        sys.path.append({str(site)!r})
        def test_wheel_first():
            r = resolve_module("vendorpkg", Path({str(pytester.path)!r}))
            assert (r.origin, r.module.WHERE) == ("wheel", "wheel")
    """)
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia")
    result.assert_outcomes(passed=1)


def test_emulated_header(pytester, run_subprocess):
    pytester.makepyfile("""
        import os
        def test_interpreting(fl_settings, fl_device):
            assert os.environ["TRITON_INTERPRET"] == "1" and fl_device == "cpu"
    """)
    result = run_subprocess("-p", "fl_contract", "--platform", "iluvatar", "--fl-emulate")
    result.stdout.fnmatch_lines(
        [
            "fl-contract *: platform iluvatar (--platform), emulated on CPU (profile iluvatar-small, injected: masked_2d_row_load)",
            "fl-contract device: Iluvatar BI-V150 (emulated, 4 SMs) | *",
            "*workaround: pytest_fl_contract.workarounds.masked_reductions (covers masked_2d_row_load)*interpreter: TRITON_INTERPRET=1",
        ]
    )
    result.assert_outcomes(passed=1)


def test_header_says_what_the_tile_model_read_or_assumed(pytester, run_subprocess):
    """A hardware lane with a workaround: the fast path's tiles follow the device's SM count
    and bandwidth, so the header says where they came from; here no device answers, and the
    line says the figures are assumed (never a silent fallback)."""
    pytester.makeconftest("import torch  # a vendor conftest: torch is up before the header\n")
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia", "--fl-force-workaround")
    result.stdout.fnmatch_lines(
        ["fl-contract fast-path tiles for assumed: 32 SMs, 1 TB/s (the device module reports neither)"]
    )
    result.assert_outcomes(passed=1)


def test_unreached_sweeps_only_skips_the_checklist_of_ops_the_defect_does_not_reach(pytester, run_subprocess):
    """--fl-unreached-sweeps-only on the no-workaround lane: amax's layout contract is skipped
    saying why and its determinism sweep runs (and holds); sum, which the defect reaches,
    runs both and fails."""
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "--fl-no-workaround",
        "--fl-unreached-sweeps-only",
        "--pyargs",
        "pytest_fl_contract.contracts.reductions",
        "-k",
        "((test_layout and transposed) or test_determinism) and (sum or amax) and not cumsum",
        "-p",
        "no:cacheprovider",
        "-rs",
        "-v",
    )
    result.stdout.fnmatch_lines(
        ["*test_determinism?amax-3x5x8-d1? PASSED*", "*amax: no injected defect reaches its kernels*"]
    )
    assert not re.search(r"(?<![a-z_])sum: no injected defect", result.stdout.str())
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and outcomes.get("skipped", 0) >= 1, outcomes  # sum's defect shows


def test_wrapped_only_skips_the_ops_the_workaround_leaves(pytester, run_subprocess):
    """--fl-wrapped-only on the emulated Iluvatar lane: sum (wrapped) runs, amax (left alone:
    its kernel reads the dropped rows into tile rows it never stores) is skipped saying why."""
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "--fl-wrapped-only",
        "--pyargs",
        "pytest_fl_contract.contracts.reductions",
        "-k",
        "test_dim_form and (sum or amax)",
        "-p",
        "no:cacheprovider",
    )
    result.stdout.fnmatch_lines(["*amax: the workaround leaves it, so it runs here as on the twin lane without one*"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 2 and outcomes.get("skipped", 0) >= 2 and "failed" not in outcomes, outcomes
