"""Platform-aware markers: specs, validation and pure evaluation.

Like ``_pytest/skipping.py``: the functions here take marks and a context and return a
small frozen decision; the lane session only applies it.  ``validate`` turns the marks of
an item into normalised ``Spec`` objects (canonical platform names, checked arguments),
and evaluation only ever sees those, so what was validated is what gets applied.
No pytest globals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from .config.platforms import CAPABILITIES, Platform, Registry

MARKERS: dict[str, str] = {
    "requires_csrc": "requires_csrc: needs the source checkout's csrc/ tree; skipped in a wheel-only layout",
    "requires_device_cast": "requires_device_cast: needs an on-device dtype cast; skipped where the platform has none",
    "requires_capability": "requires_capability(*names): needs each capability (" + ", ".join(CAPABILITIES) + ")",
    "platforms": "platforms(*names): run only on these platforms (aliases accepted)",
    "skip_platforms": "skip_platforms(*names, reason=...): skip on these platforms, saying why",
    "known_defect": "known_defect(id, uncovered=False): strict xfail on platforms that list the defect while its "
    "workaround is off (uncovered: the workaround does not reach this call)",
    "requires_device_memory": "requires_device_memory(gib): needs a real device with this much memory free",
}


class Mark(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def args(self) -> tuple[Any, ...]: ...

    @property
    def kwargs(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Spec:
    """One of our marks, validated: platform names canonical, arguments checked."""

    name: str
    args: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Xfail:
    reason: str
    defect: str
    strict: bool = True
    fails_with: tuple[str, ...] = ()  # exception types the defect raises besides AssertionError
    faults: bool = False  # a device fault is one of its failures (devicehealth decides those)
    # the defect shows only where its trigger fires when the call runs (a launch config past the
    # device's limits): its failure is the error the launch raises, and a pass is a pass
    conditional: bool = False


@dataclass(frozen=True)
class Context:
    platform: Platform
    layout: str  # "wheel" | "checkout"
    source_root: Path
    covered: frozenset[str] = frozenset()  # defect ids an active workaround covers
    device_memory: Callable[[], str | float] = lambda: "no device"  # free GiB, or why there is none


class MarkerError(ValueError):
    """Wrong marker arguments: reported as a collection error."""


def _platform_names(mark: Mark, registry: Registry) -> tuple[str, ...]:
    if not mark.args:
        raise MarkerError(f"@{mark.name} needs at least one platform name")
    out = []
    for name in mark.args:
        canonical = registry.canonical(name) if isinstance(name, str) else None
        if canonical is None:
            raise MarkerError(f"@{mark.name}: unknown platform {name!r}; known: {', '.join(registry.names)}")
        out.append(canonical)
    return tuple(dict.fromkeys(out))


def _no_kwargs(mark: Mark, allowed: set[str] = set()) -> None:  # noqa: B006 - read only
    extra = sorted(set(mark.kwargs) - allowed)
    if extra:
        raise MarkerError(f"@{mark.name}: unexpected keyword {extra[0]!r}")


def validate(marks: Iterable[Mark], registry: Registry) -> tuple[Spec, ...]:
    """Our marks of an item as Specs, in order; MarkerError for the first wrong one."""
    specs: list[Spec] = []
    for mark in marks:
        if mark.name not in MARKERS:
            continue
        if mark.name in ("platforms", "skip_platforms"):
            names = _platform_names(mark, registry)
            if mark.name == "platforms":
                _no_kwargs(mark)
                specs.append(Spec("platforms", names))
                continue
            _no_kwargs(mark, {"reason"})
            reason = mark.kwargs.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise MarkerError("@skip_platforms needs reason=... saying why the platforms are skipped")
            specs.append(Spec("skip_platforms", names, reason.strip()))
        elif mark.name == "known_defect":
            if len(mark.args) != 1 or not isinstance(mark.args[0], str):
                raise MarkerError("@known_defect takes exactly one defect id (a string)")
            _no_kwargs(mark, {"uncovered"})
            if mark.args[0] not in registry.defect_ids:
                known = ", ".join(sorted(registry.defect_ids)) or "none"
                raise MarkerError(f"@known_defect: unknown defect {mark.args[0]!r}; known: {known}")
            # uncovered=True: the lane's workaround does not reach this call, whatever it covers elsewhere
            specs.append(
                Spec("known_defect", (mark.args[0], *(("uncovered",) if mark.kwargs.get("uncovered") else ())))
            )
        elif mark.name == "requires_device_memory":
            if (
                len(mark.args) != 1
                or mark.kwargs
                or isinstance(mark.args[0], bool)
                or not isinstance(mark.args[0], (int, float))
                or mark.args[0] <= 0
            ):
                raise MarkerError("@requires_device_memory takes one positive number of GiB")
            specs.append(Spec("requires_device_memory", (str(float(mark.args[0])),)))
        elif mark.name == "requires_capability":
            if not mark.args or any(not isinstance(c, str) or c not in CAPABILITIES for c in mark.args):
                raise MarkerError(f"@requires_capability takes capability names from: {', '.join(CAPABILITIES)}")
            _no_kwargs(mark)
            specs.append(Spec("requires_capability", tuple(mark.args)))
        else:  # requires_csrc, requires_device_cast
            if mark.args or mark.kwargs:
                raise MarkerError(f"@{mark.name} takes no arguments")
            specs.append(Spec(mark.name))
    return tuple(specs)


def evaluate_skip(specs: Iterable[Spec], ctx: Context) -> Skip | None:
    """The first reason this item does not apply on ``ctx.platform``, or None."""
    p = ctx.platform
    for spec in specs:
        if spec.name == "requires_csrc" and ctx.layout != "checkout":
            return Skip(f"wheel-only layout: {ctx.source_root / 'csrc'} does not exist")
        if spec.name == "requires_device_cast" and not p.has("device_cast"):
            return Skip(f"{p.name} has no on-device dtype cast (registry: device_cast = false)")
        if spec.name == "requires_capability":
            missing = [c for c in spec.args if not p.has(c)]
            if missing:
                return Skip(f"{p.name} lacks {', '.join(missing)} (registry)")
        if spec.name == "requires_device_memory":
            free = ctx.device_memory()  # asked only here: it queries the device
            need = float(spec.args[0])
            if isinstance(free, str):
                return Skip(f"needs {need:g} GiB of device memory: {free}")
            if free < need:
                return Skip(f"needs {need:g} GiB of device memory, {p.name}'s device has {free:.1f} GiB free")
        if spec.name == "platforms" and p.name not in spec.args:
            return Skip(f"runs only on {', '.join(spec.args)}; this is {p.name}")
        if spec.name == "skip_platforms" and p.name in spec.args:
            return Skip(f"skipped on {p.name}: {spec.reason}")
    return None


def evaluate_xfail(specs: Iterable[Spec], ctx: Context) -> Xfail | None:
    """A strict xfail for a defect this platform lists and no active workaround covers.  A call
    that runs into several is held by the first; whichever of them shows first, its failure
    is one they produce (mm with K = 0 on an H200: out of shared memory before its K tail)."""
    found = [
        d
        for spec in specs
        if spec.name == "known_defect"
        for d in [ctx.platform.defect(spec.args[0])]
        if d is not None and (d.id not in ctx.covered or "uncovered" in spec.args)
    ]
    if not found:
        return None
    first = found[0]
    conditional = all(d.trigger is not None for d in found)
    return Xfail(
        f"known defect {first.id} on {ctx.platform.name}: {first.description}",
        first.id,
        strict=not conditional,
        fails_with=tuple(dict.fromkeys(e for d in found for e in d.fails_with)),
        faults=any(d.faults for d in found),
        conditional=conditional,
    )


def device_fault(exc: BaseException) -> bool:
    """A kernel that touched memory it does not own (the emulator's guard, or a device's
    illegal access) - as opposed to an entry point or a compiler refusing the input."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        if type(seen).__name__ == "EmulatedDeviceFault" or "illegal memory access" in text or "CUDA error" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def xfail_mismatch(xfail: Xfail, when: str, exc: BaseException | None) -> str | None:
    """None when a failure is one the known defect produces; else why the xfail does not
    take it.  A defect fails a contract in its call, with the contract's own assertion or
    an exception the registry lists for it; a fixture's error, an import error or anything
    else is news (a lane whose flag_gems cannot be imported must not go green on strict
    xfails)."""
    if exc is None:
        return None  # pytest's own xfail(run=False) or an xpass: nothing raised here
    names = {cls.__name__ for cls in type(exc).__mro__}
    names |= set(getattr(exc, "raised", ()))  # a verdict's failure: what the call raised (overloads.contract)
    what = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    if when != "call":
        return f"known defect {xfail.defect} fails contracts in their call, not in {when}: {what}"
    if xfail.faults:
        if "DeviceLost" in names or device_fault(exc):
            return None  # the registry says this defect touches memory it does not own
    if names & set(xfail.fails_with) or ("AssertionError" in names and not xfail.conditional):
        return None
    listed = ", ".join((*(() if xfail.conditional else ("AssertionError",)), *xfail.fails_with))
    return f"known defect {xfail.defect} fails with {listed}, not {what}"
