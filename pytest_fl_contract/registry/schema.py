"""One row schema for every op family: what a row is, and the rules every row follows.

A row is one FlagGems op (a reduction, a normalization layer, a matmul or index op, ...) as
the project knows it: where FlagGems keeps it (its module, the entry points contracts and the
workaround reach, the names ``use_gems(include=...)`` takes), the FlagGems lines that have it,
the compiler features its kernels rely on (a compiler defect's reach), the kernels no path
reaches and why, and FlagGems' own defects with the calls that run into them.  The rules over
those fields - in a FlagGems line, the known defects of a call, the corrupting ones, installed
- are written here once; a family adds its own fields and behaviour (``family.py``).

This module imports nothing of the registry (the families import it), and nothing of torch,
triton or flag_gems: callables receive what a contract gives them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

# Programs a launch takes on grid axes x, y and z: CUDA's limits, which the CUDA-like backends
# share (the emulator enforces them, the fast path plans within them, a probe checks y and z).
GRID_LIMITS = (2**31 - 1, 65535, 65535)


def in_line(lines: tuple[str, ...], version: str | None) -> bool:
    """``version`` is one of the FlagGems ``lines`` (version prefixes; none listed: every line)."""
    return not lines or any((version or "").startswith(v) for v in lines)


@dataclass(frozen=True)
class Defect:
    """A defect of FlagGems itself (a catalogue id) that some calls of a row run into, in the
    FlagGems lines listed (none: every line).  ``applies`` takes the family's call record (an
    op's ``Call``, a layer's ``LayerCall``, ...).  ``emulator_only``: only the emulator can see
    it (an out-of-bounds store hardware lets through silently).  ``corrupts``: on hardware it
    writes far past its tensor, so its outcome there is chance and it corrupts what later cases
    read: hardware lanes skip those calls, the emulator (which stops the writes) runs them as
    known failures.  ``hardware_only``: compiled code alone shows it (an FMA-contracted
    residue); the emulator computes torch's."""

    id: str
    applies: Callable[[Any], bool]
    flag_gems: tuple[str, ...] = ()
    emulator_only: bool = False
    corrupts: bool = False
    fields: tuple[str, ...] = ()  # the fields of a tuple result it spoils (none listed: all of them)
    hardware_only: bool = False

    def in_version(self, version: str | None) -> bool:
        return in_line(self.flag_gems, version)


@dataclass(frozen=True)
class Param:
    """An argument of a row's call beyond its case, as a sweep axis: its domain (its default sent
    the way dispatch sends it - integer scalars included - and its edge values) and how torch
    takes each value (``torch``: value -> torch's keyword arguments; None: ``{name: value}``).
    ``dtypes``: the input dtypes torch defines it for; ``dims``: a reduction's dim forms it
    applies to ("all": non-inner, inner and dim=None where the op takes it; "one")."""

    name: str
    values: tuple[Any, ...]
    torch: Callable[[Any], dict[str, Any]] | None = None
    dtypes: tuple[str, ...] = ("float32",)
    dims: str = "all"
    # how a contract reaches FlagGems with it: the row's entry point, torch's call through
    # dispatch (the overload the arguments pick), or both; an argument torch's API has and the
    # entry point lacks (var's unbiased) runs through dispatch only
    routes: tuple[str, ...] = ("entry", "dispatch")

    def kwargs(self, value: Any) -> dict[str, Any]:
        return {self.name: value} if self.torch is None else self.torch(value)


# Every name a family's outputs go by (its tolerance is asked per output): what a reproduction
# of a case asks of each, keeping the loosest.
OUTPUT_NAMES = ("result", "output", "out", "mean", "rstd", "grad_input", "grad_weight", "grad_bias")
# The contracts that compare FlagGems only with itself: identical calls (determinism), its
# operands after the call (inputs), the same call in a fresh process (processes).  A defect
# that gives the same wrong tensor every time, and leaves the operands alone, cannot show in
# them: its predicate leaves them out, or it would xpass there.
SELF_COMPARING = ("determinism", "inputs", "processes")


@dataclass(frozen=True)
class Row:
    """The fields every family's row has, and the rules over them.  A family's row class adds
    its own fields (each with a default: the base's come first) and may narrow ``spoils`` (a
    tuple result's field) and ``entry_names`` (what ``installed`` looks for)."""

    suite: ClassVar[str] = ""  # the row type's contract suite and family behaviour (a family's class sets it)
    case_type: ClassVar[type] = object  # the family's case (a shape and what else a call varies)

    name: str
    module: str = ""  # the flag_gems module holding the entry points and their kernels
    gems_names: tuple[str, ...] = ()  # function names for flag_gems.use_gems(include=...)
    family: str = ""
    lines: tuple[str, ...] = ()  # FlagGems lines that have it (version prefixes; none: every line)
    features: tuple[str, ...] = ()  # compiler features its kernels rely on (catalogue ids): a defect's reach
    defects: tuple[Defect, ...] = ()  # FlagGems' own defects some calls run into
    unreached: Mapping[str, str] = field(default_factory=dict)  # a kernel of its module no path reaches -> why

    def __post_init__(self) -> None:
        if not self.name or not self.module or not self.family:
            raise ValueError(f"row {self.name!r}: a row needs a name, a FlagGems module and a family")

    # -- what the family says --------------------------------------------------------------

    def entry_names(self) -> tuple[str, ...]:
        """The callables the module must have for the row to be installed."""
        raise NotImplementedError(type(self).__name__)

    def row_masked(self, version: str | None) -> tuple[str, ...]:
        """The kernels of its module that load a 2-D tile under a row condition and fold its
        rows into what they store (the masked-row defect's reach, as the row declares it; the
        coverage scan of FlagGems' source must find the same)."""
        raise NotImplementedError(type(self).__name__)

    def spoils(self, defect: Defect) -> bool:
        """The defect reaches what this row checks (a tuple result's rows narrow it)."""
        return True

    # -- the rules, once -------------------------------------------------------------------

    def in_version(self, version: str | None) -> bool:
        return in_line(self.lines, version)

    def fn(self, attr: str | None = None) -> Callable[..., Any]:
        """An entry point as installed now (a workaround's wrapper, when one is)."""
        return getattr(sys.modules[self.module], attr or self.entry_names()[0])

    def installed(self) -> bool:
        """The running FlagGems has the row's module and entry points."""
        return has_entries(self.module, *self.entry_names())

    def known_defects(self, call: Any, version: str | None = None, emulated: bool = False) -> tuple[str, ...]:
        """The FlagGems defects this call runs into, in FlagGems ``version`` (None: installed);
        those only the emulator sees count only when ``emulated``, those only compiled code
        shows only when not."""
        version = version if version is not None else flag_gems_version()
        found = [
            d.id
            for d in self.defects
            if d.in_version(version)
            and (emulated or not (d.emulator_only or d.corrupts))
            and not (emulated and d.hardware_only)
            and self.spoils(d)
            and d.applies(call)
        ]
        return tuple(dict.fromkeys(found))

    def corrupting(self, call: Any, version: str | None = None) -> tuple[str, ...]:
        """The defects this call runs into that write past their tensor on hardware (``corrupts``)."""
        version = version if version is not None else flag_gems_version()
        return tuple(
            dict.fromkeys(
                d.id
                for d in self.defects
                if d.corrupts and d.in_version(version) and self.spoils(d) and d.applies(call)
            )
        )


def flag_gems_version() -> str | None:
    """The installed FlagGems version, from metadata (nothing is imported)."""
    from ..util import installed_version

    return installed_version("flag_gems")


def has_entries(module_name: str, *names: str) -> bool:
    """The running FlagGems has the module, imported now if it was not, and each named
    callable in it: one home for every family's ``installed``."""
    module = sys.modules.get(module_name)
    if module is None:
        try:
            __import__(module_name)
        except ImportError:
            return False
        module = sys.modules.get(module_name)
    return all(callable(getattr(module, name, None)) for name in names)
