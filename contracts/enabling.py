"""How a contract lets torch dispatch reach FlagGems: the one home for ``use_gems``.

``include``: only the row's own entry points (``use_gems(include=...)``), so a failure names
the row.  ``everything``: FlagGems enabled for every op it registers (``use_gems()``), as
torch_fl and model servers run it - the row's call then meets every other FlagGems op it
dispatches to, a workaround route's own arithmetic included (on the emulated 5.4 line such a
route once recursed through FlagGems' ``mul`` until Python's limit).  Every family runs its
rows at least once each way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ENABLING = ("include", "everything")


def use_gems(gems: Any, names: Iterable[str], enabling: str = "include") -> Any:
    """FlagGems' registration context for a call: the row's ``names`` only, or every op."""
    if enabling not in ENABLING:
        raise ValueError(f"enabling {enabling!r}: expected one of {', '.join(ENABLING)}")
    return gems.use_gems(include=list(names)) if enabling == "include" else gems.use_gems()


def scope_text(names: Iterable[str], enabling: str) -> str:
    """How a failure message names the registration it ran under."""
    return f"use_gems(include={list(names)})" if enabling == "include" else "use_gems() (every op)"
