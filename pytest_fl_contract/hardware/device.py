"""The lane's device as contracts meet it: which torch device, its name and free memory,
flag_gems imported, memory poisoned.  Imported lazily by the plugin's fixtures: torch is
imported here, never at plugin load."""

from __future__ import annotations

import sys
from typing import Any

from ..config.settings import Settings
from ..util import FlContractError, first_line


def device_of(settings: Settings) -> str:
    """The torch device string contracts allocate on."""
    if settings.emulation is not None:
        return "cpu"
    return settings.platform.device_type


def device_name(settings: Settings) -> str:
    if settings.emulation is not None:
        from ..emulation.profiles import get_profile

        return get_profile(settings.emulation.profile).device_name
    torch = sys.modules.get("torch")
    if torch is None:
        return "not queried (torch not imported)"
    module = getattr(torch, settings.platform.device_type, None)
    try:
        return str(module.get_device_name(0))  # type: ignore[union-attr]
    except Exception:
        return f"unknown ({settings.platform.device_type})"


def device_count(settings: Settings) -> str:
    if settings.emulation is not None:
        return "1 (emulated)"
    torch = sys.modules.get("torch")
    if torch is None:
        return "not queried (torch not imported)"
    try:
        return str(getattr(torch, settings.platform.device_type).device_count())
    except Exception:
        return f"unknown ({settings.platform.device_type})"


def free_device_memory(settings: Settings) -> str | float:
    """Free GiB on the platform's device 0 (through torch.<device_type>), or why unknown."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    module = getattr(torch, settings.platform.device_type, None)
    try:
        if module is None or not module.is_available():
            return f"no {settings.platform.device_type} device"
        free, _total = module.mem_get_info()  # the current device: a worker's own, on a multi-GPU host
        return free / 2**30
    except Exception as exc:  # a device module without mem_get_info says so
        return f"cannot read the device's memory ({type(exc).__name__})"


def import_flag_gems() -> Any:
    try:
        import flag_gems
    except Exception as exc:
        raise FlContractError(f"cannot import flag_gems: {type(exc).__name__}: {first_line(exc)}") from None
    return flag_gems


def poison_device_memory(device: str, fill: float, nbytes: int = 64 * 2**20) -> None:
    """Allocate, fill with garbage, free: the next allocation (and any out-of-bounds read
    past it) sees ``fill``.  Under the emulator the same write lands in its device heap."""
    import torch

    block = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    block.fill_(fill)
    del block
    from ..emulation import device as emulated

    if emulated.DEVICE.installed:
        emulated.poison(fill)
