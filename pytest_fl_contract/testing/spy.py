"""A test instrument: which Triton kernels a call launched (inner vs non-inner, FlagGems'
or the workaround's), on a GPU or the interpreter; the routing contracts read it.  And what
a fast-path planned call would launch, without launching it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


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


def planned_launches(call: Any, x: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """(site, arguments) of each launch ``call.run(x)`` makes (a ``fastpath`` planned call),
    no kernel run: ``x`` may live on the meta device."""
    from unittest import mock

    from ..workarounds import fastpath

    seen: list[tuple[Any, tuple[Any, ...]]] = []
    with mock.patch.object(fastpath._Site, "__call__", lambda site, *args: seen.append((site, args))):
        call.run(x)
    return seen


@contextlib.contextmanager
def spy_launches(module_names: list[str]) -> Iterator[LaunchSpy]:
    spy = LaunchSpy()
    spy.attach(module_names)
    try:
        yield spy
    finally:
        spy.detach()
