"""How a mutant is made: the ``Mutant`` record and the ways one patches the process under
test - wrapping a row's entry point (``wrap``, ``wrap_tensor_op``, ``replace``: the module
attribute and every FlagGems registration of it, ``rewire``) or editing a real kernel's
source under the interpreter (``kernel_edits``, from ``KERNEL_EDITS``, which the zoo's
tables fill).  The zoo's catalogues (``zoo``, ``outside3``) build on these; this module
knows none of them."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

from ..registry import ROWS

# mutant name -> its kernel edits: (module, kernel, old expression, new expression, count; -1 all)
KERNEL_EDITS: dict[str, tuple[tuple[str, str, str, str, int], ...]] = {}


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    select: str  # pytest -k expression: the contracts relevant to the mutated op
    apply: Callable[[], None] | None = None  # patches the process under test
    args: tuple[str, ...] = ()  # extra pytest arguments (emulator defects, workaround)
    suite: str = "reductions"  # the contract suite that must kill it (a sibling of reductions/: layers)


def entry(op: str, attr: str | None = None) -> tuple[Any, Any]:
    row = ROWS.get(op)
    mod = sys.modules[row.module]
    return mod, getattr(mod, attr or row.entry)


def wrap(op: str, attr: str | None, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace an op's entry point (module attribute and its registration) with a mutant."""

    row = ROWS.get(op)
    replace(sys.modules[row.module], attr or row.entry, make)


def replace(mod: Any, attr: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """``mod.attr`` and its registrations become ``make``'s mutant of it."""
    import functools

    import flag_gems

    original = getattr(mod, attr)
    mutant = functools.wraps(original)(make(original))
    setattr(mod, attr, mutant)
    rewire(flag_gems, original, mutant)


def rewire(flag_gems: Any, original: Any, mutant: Any) -> None:
    """The registrations of ``original`` now register ``mutant``: ``_FULL_CONFIG`` (enable,
    use_gems()) and, where the line has it, ``FULL_CONFIG_BY_FUNC`` (use_gems(include=...))."""

    def swap(item: tuple[Any, ...]) -> tuple[Any, ...]:
        return (item[0], mutant, *item[2:]) if len(item) > 1 and item[1] is original else item

    flag_gems._FULL_CONFIG = tuple(swap(item) for item in flag_gems._FULL_CONFIG)
    by_func = getattr(flag_gems, "FULL_CONFIG_BY_FUNC", None)
    if isinstance(by_func, dict):
        flag_gems.FULL_CONFIG_BY_FUNC = {k: [swap(i) for i in v] for k, v in by_func.items()}


def kernel_edits(name: str) -> Callable[[], None]:
    def apply() -> None:
        from .rejit import rejit

        for module, kernel, old, new, count in KERNEL_EDITS[name]:
            rejit(module, kernel, old, new, count)

    return apply


def wrap_tensor_op(name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """``_wrap`` for a matmul or index-op row (registry.tensorops)."""
    row = ROWS.get(name)
    replace(sys.modules[row.module], row.entry, make)
