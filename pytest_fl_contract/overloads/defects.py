"""FlagGems' defects the overload suite's cases run into, each an id of the catalogue
(``config/platforms.yaml``) with the exact cases it holds: a strict xfail there, so a fixed
defect shows as an XPASS and a new one as a failure.  Each entry's catalogue description has a
minimal reproduction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..registry.schema import in_line


@dataclass(frozen=True)
class Known:
    id: str  # the catalogue's
    applies: Callable[[Any], bool]  # takes a Case
    flag_gems: tuple[str, ...] = ()  # FlagGems lines it is in (none: every line)


KNOWN: tuple[Known, ...] = ()


def known(case: Any, version: str | None) -> list[str]:
    """The catalogue ids of the known defects ``case`` runs into on FlagGems ``version``."""
    return [k.id for k in KNOWN if in_line(k.flag_gems, version) and k.applies(case)]
