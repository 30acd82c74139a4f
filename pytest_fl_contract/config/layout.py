"""Wheel-only workspace vs source checkout, and resolving a module wheel-first.

A vendor lane often runs its tests from a workspace that has the test files but not the
source tree (no ``csrc/``), with the package installed as a wheel.  A source checkout has
both, and its unbuilt package directory shadows the wheel when the checkout is on
``sys.path``.  So a module is resolved from the installed distribution first and from
the checkout second, and the caller is told which one it got.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..util import FlContractError, first_line

LAYOUTS = ("auto", "wheel", "checkout")


@dataclass(frozen=True)
class Layout:
    kind: str  # "wheel" | "checkout"
    source_root: Path
    how: str


def detect_layout(requested: str, source_root: Path) -> Layout:
    if requested not in LAYOUTS:
        raise FlContractError(f"unknown layout {requested!r}; known: {', '.join(LAYOUTS)}")
    csrc = source_root / "csrc"
    if requested != "auto":
        return Layout(requested, source_root, "--fl-layout")
    if csrc.is_dir():
        return Layout("checkout", source_root, f"{csrc} exists")
    return Layout("wheel", source_root, f"no {csrc}")


@dataclass(frozen=True)
class Resolved:
    module: ModuleType
    origin: str  # "wheel" | "checkout"
    path: str


def _under(path: str, root: Path) -> bool:
    try:
        Path(path or ".").resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def _raised(exc: BaseException) -> str:
    """What an import raised, as one line; SystemExit is named for what it is."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) while importing"
    if isinstance(exc, KeyboardInterrupt):
        return "it raised KeyboardInterrupt while importing"
    return f"{type(exc).__name__}: {first_line(exc)}"


def resolve_module(name: str, source_root: Path) -> Resolved:
    """Import ``name`` from the installed wheel if there is one, else from the checkout."""
    top = name.split(".")[0]
    if top not in sys.modules:
        outside = [p for p in sys.path if not _under(p, source_root)]
        spec = importlib.machinery.PathFinder.find_spec(top, outside)
        if spec is None or spec.loader is None:
            sys.path.insert(0, str(source_root))  # no wheel: the checkout it is
        else:
            # Bind the top-level package to the wheel's copy; submodules follow its __path__.
            package = importlib.util.module_from_spec(spec)
            sys.modules[top] = package
            try:
                spec.loader.exec_module(package)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt too: never a silent exit
                del sys.modules[top]
                raise FlContractError(f"cannot import {top}: {_raised(exc)}") from None
    try:
        module = importlib.import_module(name)
    except BaseException as exc:
        raise FlContractError(f"cannot import {name}: {_raised(exc)}") from None
    path = getattr(module, "__file__", None) or "?"
    origin = "checkout" if _under(path, source_root) else "wheel"
    return Resolved(module, origin, path)
