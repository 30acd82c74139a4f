"""Platform-aware markers: specs, validation and pure evaluation.

Like ``_pytest/skipping.py``: the functions here take marks and a context and return a
small frozen decision; the hooks in ``plugin.py`` only apply it.  No pytest globals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .platforms import CAPABILITIES, Platform, Registry

MARKERS: dict[str, str] = {
    "requires_csrc": "requires_csrc: needs the source checkout's csrc/ tree; skipped in a wheel-only layout",
    "requires_device_cast": "requires_device_cast: needs an on-device dtype cast; skipped where the platform has none",
    "requires_capability": "requires_capability(*names): needs each capability (" + ", ".join(CAPABILITIES) + ")",
    "platforms": "platforms(*names): run only on these platforms (aliases accepted)",
    "skip_platforms": "skip_platforms(*names, reason=...): skip on these platforms, saying why",
    "known_defect": "known_defect(id): strict xfail on platforms that list the defect while its workaround is off",
}


class Mark(Protocol):
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Xfail:
    reason: str
    defect: str
    strict: bool = True


@dataclass(frozen=True)
class Context:
    platform: Platform
    layout: str  # "wheel" | "checkout"
    source_root: Path
    covered: frozenset[str] = frozenset()  # defect ids an active workaround covers


class MarkerError(ValueError):
    """Wrong marker arguments: reported as a collection error."""


def _names(mark: Mark, registry: Registry) -> list[str]:
    if not mark.args:
        raise MarkerError(f"@{mark.name} needs at least one platform name")
    out = []
    for name in mark.args:
        canonical = registry.canonical(name) if isinstance(name, str) else None
        if canonical is None:
            raise MarkerError(f"@{mark.name}: unknown platform {name!r}; known: {', '.join(registry.names)}")
        out.append(canonical)
    return out


def validate(marks: Iterable[Mark], registry: Registry) -> None:
    """Raise MarkerError for the first mark of ours with wrong arguments."""
    for mark in marks:
        if mark.name in ("platforms", "skip_platforms"):
            _names(mark, registry)
            allowed = {"reason"} if mark.name == "skip_platforms" else set()
            if set(mark.kwargs) - allowed:
                raise MarkerError(f"@{mark.name}: unexpected keyword {sorted(set(mark.kwargs) - allowed)[0]!r}")
            if mark.name == "skip_platforms" and not str(mark.kwargs.get("reason", "")).strip():
                raise MarkerError("@skip_platforms needs reason=... saying why the platforms are skipped")
        elif mark.name == "known_defect":
            if len(mark.args) != 1 or mark.kwargs:
                raise MarkerError("@known_defect takes exactly one defect id")
            if mark.args[0] not in registry.defect_ids:
                known = ", ".join(sorted(registry.defect_ids)) or "none"
                raise MarkerError(f"@known_defect: unknown defect {mark.args[0]!r}; known: {known}")
        elif mark.name == "requires_capability":
            if not mark.args or any(c not in CAPABILITIES for c in mark.args):
                raise MarkerError(f"@requires_capability takes capability names from: {', '.join(CAPABILITIES)}")
        elif mark.name in ("requires_csrc", "requires_device_cast") and (mark.args or mark.kwargs):
            raise MarkerError(f"@{mark.name} takes no arguments")


def evaluate_skip(marks: Iterable[Mark], ctx: Context) -> Skip | None:
    """The first reason this item does not apply on ``ctx.platform``, or None."""
    p = ctx.platform
    for mark in marks:
        if mark.name == "requires_csrc" and ctx.layout != "checkout":
            return Skip(f"wheel-only layout: {ctx.source_root / 'csrc'} does not exist")
        if mark.name == "requires_device_cast" and not p.has("device_cast"):
            return Skip(f"{p.name} has no on-device dtype cast (registry: device_cast = false)")
        if mark.name == "requires_capability":
            missing = [c for c in mark.args if not p.has(c)]
            if missing:
                return Skip(f"{p.name} lacks {', '.join(missing)} (registry)")
        if mark.name == "platforms":
            wanted = [n for n in mark.args]
            if p.name not in wanted and not (set(wanted) & set(p.aliases)):
                return Skip(f"runs only on {', '.join(wanted)}; this is {p.name}")
        if mark.name == "skip_platforms":
            if p.name in mark.args or set(mark.args) & set(p.aliases):
                return Skip(f"skipped on {p.name}: {mark.kwargs['reason']}")
    return None


def evaluate_xfail(marks: Iterable[Mark], ctx: Context) -> Xfail | None:
    """A strict xfail for a defect this platform lists and no active workaround covers."""
    for mark in marks:
        if mark.name != "known_defect":
            continue
        defect = ctx.platform.defect(mark.args[0])
        if defect is not None and defect.id not in ctx.covered:
            return Xfail(f"known defect {defect.id} on {ctx.platform.name}: {defect.description}", defect.id)
    return None
