"""A case that faults the device is that case's result, not the next fifty cases'.

An illegal memory access (a kernel reading past its tensor: FlagGems' argmin on NVIDIA
does, now and then) is sticky: every later call in the process fails with it, and since
kernels run asynchronously it first surfaces in whatever case comes next.  Measured on an
H200: one such fault in a warm lane turned 28 later cases of its xdist worker into failures,
none of them the culprit.  So on hardware lanes each case's call and teardown end with a
device synchronise: a fault there is the case's own (a failure; the expected failure of a
registered defect only if the registry says that defect faults), and the process stops
taking cases.  An xdist worker exits before forwarding the case's teardown report, so xdist
names the case in its crash report, which closes the case's one JUnit testcase, and starts a
fresh worker for the cases it had pending.  A run without xdist stops with one line naming
the case.  If xdist stops replacing workers (``--max-worker-restart``), the cases that never
ran make the run fail, with a line saying how many.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from ..config.platforms import Platform
from ..util import first_line, xdist_worker

EXIT_DEVICE_LOST = 75  # EX_TEMPFAIL: the process, not the code under test, is unusable now


class DeviceLost(Exception):
    """The device faulted while this case ran; its context cannot be used again."""


def fault_of(module: Any) -> str | None:
    """The device's sticky error, if any: ``synchronize()`` raises it.  Nothing to check
    before the device was ever initialised (no kernel can have run)."""
    if module is None:
        return None
    initialised = getattr(module, "is_initialized", None)
    if callable(initialised) and not initialised():
        return None
    try:
        module.synchronize()
    except Exception as exc:  # torch.AcceleratorError, RuntimeError: whatever the backend raises
        return f"{type(exc).__name__}: {first_line(exc)}"[:300]
    return None


def expected_fault(platform: Platform, defect_id: str | None) -> bool:
    """A fault is a registered defect's expected failure only where the registry says the
    defect touches memory it does not own (``faults: true``); any other is news."""
    defect = platform.defect(defect_id) if defect_id else None
    return defect is not None and defect.faults


class DeviceWatch:
    """Registered on hardware lanes.  Holds the one fault a process can have; on the xdist
    controller, the faults its workers reported and which cases were never reported."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.lost: tuple[str, str, str] | None = None  # (nodeid, phase, fault)
        self.culprits: dict[str, str] = {}
        self.collected: set[str] = set()
        self.reported: set[str] = set()
        self.never_ran = 0
        self._session: pytest.Session | None = None

    def _module(self) -> Any:
        torch = sys.modules.get("torch")  # never import it: no torch, no kernel, no fault
        return getattr(torch, self.platform.device_type, None) if torch is not None else None

    def _check(self, item: pytest.Item, phase: str) -> None:
        if self.lost is not None:
            return
        fault = fault_of(self._module())
        if fault is not None:
            self.lost = (item.nodeid, phase, fault)
            then = "this xdist worker is replaced" if _worker(item.config) else "the run stops here"
            raise DeviceLost(f"the device faulted during this case ({fault}); its context is lost, so {then}")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:
            self._check(item, "call")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: Any) -> Iterator[None]:
        try:
            return (yield)
        finally:
            self._check(item, "teardown")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        rep = yield
        if self.lost is not None and self.lost[:2] == (item.nodeid, rep.when):
            rep.fl_device_lost = self.lost[2]  # travels to the xdist controller with the report
            if hasattr(rep, "wasxfail"):
                from ..stash import DECISION

                decision = item.stash.get(DECISION, None)
                if not expected_fault(self.platform, decision.defect if decision else None):
                    under = (
                        f"known defect {decision.defect}, which the registry does not list as faulting"
                        if decision
                        else "an xfail mark"
                    )
                    rep.outcome, rep.longrepr = "failed", f"device fault under {under}: {self.lost[2]}"
                    del rep.wasxfail
        return rep

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _worker(self._session.config if self._session else None):
            if self.lost and self.lost[0] == report.nodeid and report.when == "teardown" and self.lost[1] == "call":
                _exit()  # before xdist forwards the teardown: its crash report closes the case
            return
        self.reported.add(report.nodeid)
        fault = getattr(report, "fl_device_lost", None)
        if fault:
            self.culprits[report.nodeid] = fault

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.lost is None or self.lost[0] != nodeid or self._session is None:
            return
        if _worker(self._session.config):
            _exit()  # a fault in teardown: that report is forwarded, then the worker goes
        self._session.shouldfail = (
            f"device lost in {nodeid} ({self.lost[2]}); the cases after it did not run "
            "(with -n a worker is replaced instead)"
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist reports the worker we ended as crashed in the case that faulted; that case
        already has its result, so the crash report only closes its testcase."""
        if crashitem in self.culprits:
            report.outcome, report.when, report.longrepr = "passed", "teardown", None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected.update(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A run that would pass although collected cases never ran (-x, an interrupt or a
        failure already fail it, and explain the gap themselves)."""
        missing = self.collected - self.reported
        if missing and session.exitstatus == pytest.ExitCode.OK and not _worker(session.config):
            self.never_ran = len(missing)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for nodeid, fault in self.culprits.items():
            terminalreporter.write_line(f"fl-contract: device fault in {nodeid} ({fault}); its worker was replaced")
        if self.never_ran:
            terminalreporter.write_line(
                f"fl-contract: {self.never_ran} collected cases never ran (xdist stopped replacing workers: "
                "see --max-worker-restart); the run fails",
                red=True,
            )


def _worker(config: pytest.Config | None) -> bool:
    return config is not None and xdist_worker(config) is not None


def _exit() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_DEVICE_LOST)  # a worker that exits is replaced by xdist
