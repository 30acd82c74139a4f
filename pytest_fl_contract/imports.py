"""Run a callback right after a module executes, before anyone imports names from it.

The emulator patches FlagGems' helpers this way, and the lane session installs the
workaround the moment ``flag_gems`` is imported, whoever imports it (a vendor's conftest
at import time, a test, our fixture).  One finder serves every callback; it sits first on
``sys.meta_path`` because that is the only place a post-import step can be inserted.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Callable

Callback = Callable[[ModuleType], None]


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callback]] = {}

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        callbacks = self.callbacks.get(fullname)
        if not callbacks:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_then_call(module: ModuleType) -> None:
            exec_module(module)
            for callback in list(callbacks):
                callback(module)

        spec.loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec


def _finder() -> _AfterImport:
    for finder in sys.meta_path:
        if type(finder).__name__ == "_AfterImport" and hasattr(finder, "callbacks"):
            return finder  # type: ignore[return-value]
    finder = _AfterImport()
    sys.meta_path.insert(0, finder)
    return finder


def after_import(name: str, callback: Callback) -> Callable[[], None]:
    """Call ``callback(module)`` once ``name`` has executed; at once when it already has.
    Returns a function that withdraws the callback (a session that ends withdraws its own)."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return lambda: None
    callbacks = _finder().callbacks.setdefault(name, [])
    callbacks.append(callback)

    def withdraw() -> None:
        if callback in callbacks:
            callbacks.remove(callback)

    return withdraw
