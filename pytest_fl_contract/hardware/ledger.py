"""Cases that declare device memory (``requires_device_memory``) never oversubscribe the
host together, whatever order xdist runs them in.

Each case checks its own free memory at setup, but xdist workers do that at the same
moment: on an H200 host, ordering the lane's longest cases first started the four
large-index cases (32 GiB each, with their float64 references on the host) and the grid-limit
cases together, and the lane hung.  So the workers of one run share a ledger (a JSON file
under a lock): a case claims its GiB before it runs and waits while the claims of live
workers would pass the budget; it releases them at teardown, and its cached blocks go back to
the device.  A claim of a dead worker does not count.  A case is always admitted alone.

Workers pinned to devices (``--fl-devices``) claim on their own device: each device has its
own budget, and the host's memory (the float64 references) one more over every claim - eight
large-index cases on eight cards run together where the host has room for them, and a device
never takes a second while its first runs, whatever the others hold.  Unpinned, every claim is
on the one device "" and the budget is the smaller memory's, as it always was.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

SHARE = 0.6  # of the smaller of device and host memory: the references live on the host


@dataclass(frozen=True)
class Claim:
    pid: int
    nodeid: str
    gib: float
    device: str = ""  # the pinned worker's device ("": unpinned, every claim on one device)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def admit(
    claims: list[Claim],
    need: float,
    budget: float,
    is_alive: Callable[[int], bool] = alive,
    *,
    device: str = "",
    host_budget: float = float("inf"),
) -> bool:
    """Whether a case needing ``need`` GiB on ``device`` may start beside the live claims:
    within its device's budget and, over every device's claims, the host's (each check
    passes for a case that would be alone there)."""
    live = [c for c in claims if is_alive(c.pid)]
    here = sum(c.gib for c in live if c.device == device)
    everywhere = sum(c.gib for c in live)
    return (here == 0 or here + need <= budget) and (everywhere == 0 or everywhere + need <= host_budget)


def budget_gib(device_total: float | None, host_total: float | None) -> float:
    known = [v for v in (device_total, host_total) if v]
    return SHARE * min(known) if known else float("inf")


def host_total_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


class Ledger:
    def __init__(
        self, path: Path, budget: float, poll: float = 0.2, device: str = "", host_budget: float = float("inf")
    ) -> None:
        self.path, self.budget, self.poll = path, budget, poll
        self.device, self.host_budget = device, host_budget

    def _edit(self, change: Callable[[list[Claim]], list[Claim] | None]) -> bool:
        """Apply ``change`` under the lock; it returns the new claims, or None to leave them."""
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            text = f.read()
            try:
                claims = [Claim(**c) for c in json.loads(text)] if text.strip() else []
            except (ValueError, TypeError):
                claims = []  # a torn file from a killed worker: start over
            claims = [c for c in claims if alive(c.pid)]
            new = change(claims)
            if new is not None:
                f.seek(0)
                f.truncate()
                f.write(json.dumps([asdict(c) for c in new]))
            return new is not None

    def acquire(self, nodeid: str, gib: float) -> float:
        """Wait for room, claim it; returns the seconds waited."""
        start = time.monotonic()
        claim = Claim(os.getpid(), nodeid, gib, self.device)
        while not self._edit(
            lambda cs: (
                [*cs, claim] if admit(cs, gib, self.budget, device=self.device, host_budget=self.host_budget) else None
            )
        ):
            time.sleep(self.poll)
        return time.monotonic() - start

    def release(self, nodeid: str) -> None:
        self._edit(lambda cs: [c for c in cs if not (c.pid == os.getpid() and c.nodeid == nodeid)])


def ledger_path(runid: str) -> Path:
    return Path(tempfile.gettempdir()) / f"fl-contract-ledger-{runid}.json"


class LedgerOwner:
    """The controller's side: the ledger outlives every worker (a replaced one joins it), so
    the controller, which started them, removes it when the run ends; runs used to leave one
    file each in the temporary directory."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self.paths.add(ledger_path(str(node.workerinput["testrunuid"])))

    def pytest_unconfigure(self) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)


class LedgerPlugin:
    """Registered on hardware lanes run with xdist: all workers of a run share one file."""

    def __init__(
        self, runid: str, device_type: str, pick_device: Callable[[], Any] = lambda: None, device: str = ""
    ) -> None:
        self.path = ledger_path(runid)
        self.device_type = device_type
        self.pick_device = pick_device  # the worker's own device first: never a context on device 0
        self.device = device  # the device --fl-devices pinned this worker to ("": not pinned)
        self._ledger: Ledger | None = None

    def _get(self) -> Ledger:
        if self._ledger is None:
            device_total = None
            try:
                import torch

                self.pick_device()
                device_total = getattr(torch, self.device_type).mem_get_info()[1] / 2**30
            except Exception:  # no such module or no device: the host alone bounds it
                pass
            if self.device:  # a budget per device, and the host's over them all
                self._ledger = Ledger(
                    self.path,
                    budget_gib(device_total, None),
                    device=self.device,
                    host_budget=budget_gib(None, host_total_gib()),
                )
            else:
                self._ledger = Ledger(self.path, budget_gib(device_total, host_total_gib()))
        return self._ledger

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        """Claim before the session checks the free memory: that check, made while another
        worker's heavy case runs, would otherwise skip a case that only had to wait.  A case
        skipped after all gives its claim back at teardown, which runs after a skip too."""
        mark = item.get_closest_marker("requires_device_memory")
        if mark is not None and mark.args and isinstance(mark.args[0], (int, float)) and mark.args[0] > 0:
            waited = self._get().acquire(item.nodeid, float(mark.args[0]))
            if (
                waited >= 0.1 and item.config.getini("junit_family") == "xunit1"
            ):  # per-case properties are valid there only
                item.user_properties.append(("fl_memory_wait_s", f"{waited:.1f}"))
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: Any) -> Iterator[None]:
        try:
            return (yield)
        finally:
            if self._ledger is not None and item.get_closest_marker("requires_device_memory") is not None:
                try:
                    import torch

                    getattr(torch, self.device_type).empty_cache()  # the next claimant gets the memory
                except Exception:
                    pass
                self._ledger.release(item.nodeid)
