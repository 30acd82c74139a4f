"""The controller's side of ``--fl-devices``: xdist's worker specs, each with its device.

Runs in the controller's ``pytest_configure``, after xdist turned ``-n`` into ``--tx``
(its ``pytest_cmdline_main``) and before its ``NodeManager`` reads them (its session
start).  Imports neither torch nor xdist: where ``all`` needs a count and the platform's
variable lists no devices, a short child process asks the platform's torch
(``config.devices.runtime_count``).  The plan itself is ``config.devices``: pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from ..config.devices import Plan, pinned, plan, runtime_count
from ..config.settings import Settings
from ..util import FlContractError


def distributed(option: Any) -> bool:
    """Whether xdist runs this session's cases in workers (its own test: ``--dist`` and ``--tx``)."""
    return getattr(option, "dist", "no") != "no" and bool(getattr(option, "tx", None))


def pin_workers(
    option: Any, settings: Settings, environ: Mapping[str, str], count: Callable[[], int] | None = None
) -> Plan | None:
    """Pin each of xdist's workers (``option.tx``) to one device; returns the plan, or None
    where the lane has one device (its specs are left exactly as they were)."""
    if not distributed(option):
        raise FlContractError(
            f"--fl-devices {settings.devices} spreads a lane's xdist workers over devices, and "
            "this run has none: add -n N (pytest-xdist), or leave --fl-devices out"
        )
    assert settings.devices_var is not None  # resolve() refused a platform without one
    chosen = plan(
        settings.devices,
        settings.devices_var,
        environ,
        count or (lambda: runtime_count(settings.platform.device_type)),
        emulated=settings.emulation is not None,
    )
    if chosen is not None:
        option.tx = pinned(option.tx, chosen)
    return chosen
