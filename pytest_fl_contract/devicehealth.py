"""A case that faults the device is that case's result, not the next fifty cases'.

An illegal memory access (a kernel reading past its tensor: FlagGems' argmin on NVIDIA
does, now and then) is sticky: every later call in the process fails with it, and since
kernels run asynchronously it first surfaces in whatever case comes next.  Measured on an
H200: one such fault in a warm lane turned 28 later cases of its xdist worker into failures,
none of them the culprit.  So on hardware lanes each case ends with a device synchronise:
a fault there is the case's own (a failure, or the expected failure of a registered defect
that reads out of bounds), and the process stops taking cases: an xdist worker exits and
xdist starts a fresh one for the cases it had pending; a run without xdist stops with one
line naming the case.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

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
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"{type(exc).__name__}: {first}"[:300]
    return None


class DeviceWatch:
    """Registered on hardware lanes.  Holds the one fault a process can have."""

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.lost: tuple[str, str] | None = None  # (nodeid, fault)
        self.culprits: dict[str, str] = {}  # controller: nodeid -> fault, from workers' reports
        self._session: pytest.Session | None = None

    def _module(self) -> Any:
        torch = sys.modules.get("torch")  # never import it: no torch, no kernel, no fault
        return getattr(torch, self.device_type, None) if torch is not None else None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:
            fault = fault_of(self._module())
            if fault is not None:
                self.lost = (item.nodeid, fault)
                raise DeviceLost(
                    f"the device faulted during this case ({fault}); its context is lost, so "
                    + ("this xdist worker is replaced before the next case" if _worker(item.config) else "the run stops here")
                )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        rep = yield
        if self.lost is not None and self.lost[0] == item.nodeid and rep.when == "call":
            rep.fl_device_lost = self.lost[1]  # travels to the xdist controller with the report
        return rep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        fault = getattr(report, "fl_device_lost", None)
        if fault:
            self.culprits[report.nodeid] = fault

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.lost is None or self.lost[0] != nodeid:
            return
        if self._session is not None and _worker(self._session.config):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_DEVICE_LOST)  # its reports are sent; xdist replaces a worker that exits
        if self._session is not None:
            self._session.shouldfail = f"device lost in {nodeid} ({self.lost[1]}); the cases after it did not run (with -n a worker is replaced instead)"

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist reports the worker we ended as crashed in the case that faulted; that case
        already has its own result, so the crash becomes a note, not a second failure."""
        fault = self.culprits.get(crashitem)
        if fault is not None:
            report.outcome = "skipped"
            report.when = "teardown"
            path = crashitem.split("::")[0]
            report.longrepr = (path, 0, f"worker replaced after a device fault in this case ({fault})")


def _worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
