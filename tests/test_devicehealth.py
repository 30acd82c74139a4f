"""A case that faults the device carries the fault; the cases after it still run."""

from __future__ import annotations

import pytest

from pytest_fl_contract.hardware.devicehealth import fault_of


class Device:
    def __init__(self, initialised: bool = True, error: Exception | None = None) -> None:
        self.initialised, self.error, self.synced = initialised, error, 0

    def is_initialized(self) -> bool:
        return self.initialised

    def synchronize(self) -> None:
        self.synced += 1
        if self.error is not None:
            raise self.error


def test_a_healthy_or_unused_device_has_no_fault():
    assert fault_of(None) is None
    unused = Device(initialised=False, error=RuntimeError("never asked"))
    assert fault_of(unused) is None and unused.synced == 0
    assert fault_of(Device()) is None


def test_a_sticky_error_is_named_in_one_line():
    device = Device(error=RuntimeError("CUDA error: an illegal memory access was encountered\nSearch for ..."))
    assert fault_of(device) == "RuntimeError: CUDA error: an illegal memory access was encountered"


FAKE_DEVICE = """
import torch
STATE = {"lost": False}
def _sync():
    if STATE["lost"]:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
torch.cuda.is_initialized = lambda: True
torch.cuda.synchronize = _sync
"""

CASES = """
import pytest
from conftest import STATE

@pytest.mark.parametrize("i", range(12))
def test_before(i):
    pass

@pytest.mark.known_defect(XFAIL) if XFAIL else (lambda f: f)
def test_culprit():
    STATE["lost"] = True  # as a kernel reading past its tensor leaves a CUDA context

@pytest.mark.parametrize("i", range(12))
def test_after(i):
    assert not STATE["lost"], "ran on a lost device"
"""


FAULTS, QUIET = "argmin_inner_out_of_bounds", "argmax_tile_not_pow2"  # the registry: faults: true / not


def lane(pytester, run_subprocess, xfail: str | None, *args: str):
    pytester.makeconftest(FAKE_DEVICE)
    pytester.makepyfile(test_cases=f"XFAIL = {xfail!r}\n" + CASES)
    return run_subprocess("-p", "fl_contract", "--platform", "nvidia", "--fl-no-workaround", "-rs", *args)


def test_xdist_replaces_the_worker_and_every_later_case_runs(pytester, run_subprocess):
    result = lane(pytester, run_subprocess, None, "-p", "xdist", "-n", "2", "--junitxml=lane.xml")
    result.assert_outcomes(passed=24, failed=1)  # the crash report of the ended worker is no second result
    result.stdout.fnmatch_lines(
        [
            "*DeviceLost: the device faulted during this case (RuntimeError: CUDA error: an illegal memory access *); "
            "its context is lost, so this xdist worker is replaced",
            "fl-contract: device fault in test_cases.py::test_culprit (RuntimeError: CUDA error: *); its worker was replaced",
        ]
    )
    assert "ran on a lost device" not in result.stdout.str()
    from junitparser import Failure, JUnitXml

    cases = [c for s in JUnitXml.fromfile(str(pytester.path / "lane.xml")) for c in s]
    assert len(cases) == 25  # one testcase per case: the culprit's is closed by the crash report
    assert [c.name for c in cases if any(isinstance(r, Failure) for r in c.result)] == ["test_culprit"]


def test_a_run_whose_workers_are_not_replaced_fails_and_says_what_never_ran(pytester, run_subprocess):
    result = lane(pytester, run_subprocess, FAULTS, "-p", "xdist", "-n", "2", "--max-worker-restart", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the only fault is an expected one; the cases lost are not
    result.stdout.fnmatch_lines(["fl-contract: * collected cases never ran (xdist stopped replacing workers*"])


def test_an_expected_failure_that_faults_stays_expected(pytester, run_subprocess):
    result = lane(pytester, run_subprocess, FAULTS, "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=24, xfailed=1)
    assert result.ret == 0


def test_a_fault_under_a_defect_that_never_faults_is_news(pytester, run_subprocess):
    result = lane(pytester, run_subprocess, QUIET, "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=24, failed=1)
    result.stdout.fnmatch_lines(
        ["*device fault under known defect argmax_tile_not_pow2, which the registry does not list as faulting*"]
    )


def test_without_xdist_the_run_stops_with_one_line(pytester, run_subprocess):
    result = lane(pytester, run_subprocess, None, "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*device lost in test_cases.py::test_culprit (RuntimeError: CUDA error: *); the cases after it did not run*",
        ]
    )
    assert "ran on a lost device" not in result.stdout.str()


def test_emulated_lanes_have_no_watch(pytester, run_subprocess):
    pytester.makepyfile(
        test_one="def test_one(pytestconfig):\n    assert not pytestconfig.pluginmanager.has_plugin('fl_contract_device_watch')\n"
    )
    assert run_subprocess("-p", "fl_contract", "--platform", "cpu").ret == 0
