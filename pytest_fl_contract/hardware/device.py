"""What a contract needs at run time: flag_gems, the device, a poisoner, a kernel-launch
spy.  Imported lazily by the plugin's fixtures: torch is imported here, never at plugin load."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..config.settings import Settings
from ..util import FlContractError


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
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise FlContractError(f"cannot import flag_gems: {type(exc).__name__}: {first}") from None
    return flag_gems


def poison_device_memory(device: str, fill: float, nbytes: int = 64 * 2**20) -> None:
    """Allocate, fill with garbage, free: the next allocation (and any out-of-bounds read
    past it) sees ``fill``.  Under the emulator the same write lands in its device heap."""
    import torch

    block = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    block.fill_(fill)
    del block
    from ..emulation import device

    if device.DEVICE.installed:
        device.poison(fill)


class LaunchSpy:
    """Records the names of the Triton kernels flag_gems launches (inner vs non-inner).

    Kernels are module globals looked up at call time, so replacing them with a proxy
    whose ``[grid]`` records the name sees every launch, on a GPU or the interpreter.
    """

    def __init__(self) -> None:
        self.launched: list[str] = []
        self._patched: list[tuple[Any, str, Any]] = []

    def attach(self, module_names: list[str]) -> None:
        import triton

        for name in module_names:
            module = sys.modules.get(name)
            if module is None:
                continue
            for attr, value in list(vars(module).items()):
                if isinstance(value, triton.runtime.KernelInterface) and "kernel" in attr:
                    self._patched.append((module, attr, value))
                    setattr(module, attr, _SpiedKernel(value, attr, self.launched))

    def detach(self) -> None:
        while self._patched:
            module, attr, value = self._patched.pop()
            setattr(module, attr, value)


class _SpiedKernel:
    def __init__(self, kernel: Any, name: str, log: list[str]) -> None:
        self._kernel, self._name, self._log = kernel, name, log

    def __getitem__(self, grid: Any) -> Any:
        self._log.append(self._name)
        return self._kernel[grid]

    def run(self, *args: Any, **kwargs: Any) -> Any:  # a launch cache (FlagGems' libentry) calls run
        self._log.append(self._name)
        return self._kernel.run(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)


@contextlib.contextmanager
def spy_launches(module_names: list[str]) -> Iterator[LaunchSpy]:
    spy = LaunchSpy()
    spy.attach(module_names)
    try:
        yield spy
    finally:
        spy.detach()
