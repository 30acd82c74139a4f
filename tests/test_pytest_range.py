"""The plugin on every pytest it supports: CI runs this module on the oldest (the pin in
scripts/pytest-range.sh) and on the newest pytest (the project's own environment).  Nothing
here needs torch, triton or flag_gems: hardware platforms on a CPU machine, which the
plugin brings up without touching the device."""

from __future__ import annotations

import pytest

SUITE = """
import pytest

@pytest.mark.known_defect("masked_2d_row_load")
def test_defect_shows():
    assert 0

@pytest.mark.known_defect("masked_2d_row_load")
def test_defect_gone():
    pass

@pytest.mark.platforms("nvidia")
def test_only_on_nvidia():
    pass

@pytest.mark.skip_platforms("iluvatar", reason="not on this lane")
def test_not_on_iluvatar():
    pass
"""


def test_markers_decide_on_an_iluvatar_lane(pytester, run_subprocess):
    pytester.makepyfile(test_suite=SUITE)
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-no-workaround",
        "--strict-markers",
        "-p",
        "no:cacheprovider",
        "-rA",
        timeout=120,
    )
    result.assert_outcomes(xfailed=1, failed=1, skipped=2)
    out = result.stdout.str()
    assert "fl-contract 0" in out and "platform iluvatar (--platform)" in out
    assert "[XPASS(strict)]" in out and "known defect masked_2d_row_load" in out


def test_the_junit_report_carries_the_lanes_properties(pytester, run_subprocess):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = run_subprocess(
        "-p", "fl_contract", "--platform", "nvidia", "--junitxml=out.xml", "-p", "no:cacheprovider", timeout=120
    )
    assert result.ret == 0
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="fl_platform" value="nvidia"' in xml and 'name="fl_summary"' in xml


def test_inactive_it_adds_nothing(pytester, run_subprocess):
    pytester.makepyfile(test_a="import pytest\n@pytest.mark.platforms('nvidia')\ndef test_a():\n    pass\n")
    result = run_subprocess("-p", "no:cacheprovider", "--strict-markers", autoload=True, timeout=120)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # its markers are registered only when a run asks for it
    assert "fl-contract" not in result.stdout.str().replace("fl-contract-0", "")


def test_ini_options_are_the_options(pytester, run_subprocess):
    pytester.makeini("[pytest]\nfl_platform = nvidia\nfl_sweep = quick\nfl_junit_prefix = vendor-lane\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = run_subprocess("-p", "no:cacheprovider", "--junitxml=out.xml", autoload=True, timeout=120)
    assert result.ret == 0
    assert "sweep: quick" in result.stdout.str()
    assert 'classname="vendor-lane.' in (pytester.path / "out.xml").read_text()
