"""The op registry: every FlagGems op the project knows, as rows of one schema (``schema``),
a family module each (``reductions``, ``layers``, ``tensorops``), read through one object.

``ROWS.rows()`` is what every consumer iterates - the contracts' parametrization, the
workaround's targets and routes, the defect catalogue's reach, the coverage scan, the
generated tables - so a row registered before they run (``ROWS.register``: a vendor's row, a
test's copy under a new name) is picked up everywhere with no other edit.  The family
modules import only ``schema``; this package aggregates them, and nothing here imports
anything above the registry.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from . import layers, reductions, tensorops
from .schema import Row, flag_gems_version

SUITES = ("reductions", "layers", "tensorops")  # the row types, each a contract suite and a family behaviour


class Rows:
    """The registry's rows, in registration order, by name."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self._rows: list[Row] = []
        self._by_name: dict[str, Row] = {}
        self._sources: dict[str, tuple[str, str]] = {}  # a row registered at run time -> (module, file) that did
        for row in rows:
            self._add(row)

    def register(self, row: Row) -> Row:
        """Add a row at run time (a vendor's, a test's copy under a new name); a name already
        taken is refused, as is a row of no known suite.  The module that registers it is
        remembered: a fresh process that must know the row (an isolated hardware call) imports
        it again (``sources``)."""
        self._add(row)
        caller = sys._getframe(1).f_globals
        if caller.get("__file__"):
            self._sources[row.name] = (str(caller.get("__name__")), str(caller["__file__"]))
        return row

    def _add(self, row: Row) -> None:
        if not isinstance(row, Row) or getattr(row, "suite", None) not in SUITES:
            raise ValueError(f"{row!r}: a registry row is a row of one of the suites {', '.join(SUITES)}")
        if row.name in self._by_name:
            raise ValueError(f"op {row.name!r} is already in the registry")
        self._rows.append(row)
        self._by_name[row.name] = row

    def unregister(self, name: str) -> None:
        """Take a registered row out again (a test's copy, once the test is done)."""
        row = self._by_name.pop(name)
        self._rows.remove(row)
        self._sources.pop(name, None)

    def sources(self) -> tuple[tuple[str, str], ...]:
        """The modules (name, file) that registered rows at run time, once each, in order."""
        return tuple(dict.fromkeys(self._sources.values()))

    def load_sources(self, sources: Iterable[tuple[str, str]]) -> None:
        """Import again, in this process, the modules that registered rows in another (by file:
        a conftest is on no path), so their rows are here too."""
        import importlib.util

        for name, path in sources:
            if name in sys.modules:
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"cannot import {path}, which registered rows")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)

    def rows(self, suite: str | None = None) -> tuple[Any, ...]:
        """Every row, or those of one suite (``reductions``, ``layers``, ``tensorops``)."""
        if suite is not None and suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
        return tuple(row for row in self._rows if suite is None or row.suite == suite)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str, suite: str | None = None) -> Any:
        """A row by name, or a reduction row's view (``max_dim.indices``, ``aminmax.max``)."""
        base, _, view = name.partition(".")
        row = self._by_name.get(base)
        found = row if row is not None and not view else getattr(row, "view", lambda _: None)(view) if row else None
        if found is None or (suite is not None and found.suite != suite):
            known = ", ".join(r.name for r in self.rows(suite))
            raise KeyError(f"unknown op {name!r}; known: {known}")
        return found

    def installed(self, suite: str | None = None, version: str | None = None) -> list[Any]:
        """The rows of the installed FlagGems line (``version``: another's) whose module and entry
        points it has."""
        version = version if version is not None else flag_gems_version()
        return [row for row in self.rows(suite) if row.in_version(version) and row.installed()]

    def modules(self) -> tuple[str, ...]:
        """Every FlagGems module a row names, and the namespaces that re-export them."""
        return ("flag_gems", "flag_gems.ops", *dict.fromkeys(row.module for row in self._rows))

    def op_name(self, name: str) -> str:
        """A row's name for a name a vendor file may use (the row's, or one of its entry points)."""
        if name in self._by_name:
            return name
        for row in self._rows:
            if name in row.entry_names() or any(name == e.attr for e in getattr(row, "entries", ())):
                return row.name
        return name  # a vendor registry may name ops we do not know: shown as written

    def feature_reach(self, defect_id: str) -> tuple[str, ...]:
        """The rows whose kernels rely on the compiler feature a compiler defect breaks."""
        return tuple(dict.fromkeys(row.name for row in self._rows if defect_id in row.features))

    def defect_reach(self, defect_id: str) -> dict[str, tuple[str, ...]]:
        """Per row, the FlagGems versions whose calls run into a FlagGems defect (an empty
        tuple: every version); rows that do not name it are absent."""
        found: dict[str, tuple[str, ...]] = {}
        for row in self._rows:
            named = [d for d in row.defects if d.id == defect_id]
            if named:
                found[row.name] = (
                    ()
                    if any(not d.flag_gems for d in named)
                    else tuple(sorted({v for d in named for v in d.flag_gems}))
                )
        return found

    def reach(self, defect: Any) -> tuple[str, ...]:
        """The rows a catalogue defect reaches: a FlagGems defect the rows whose predicates name
        it, a compiler defect the rows whose kernels rely on its feature; for a defect no row
        knows, the ops a vendor file named."""
        found = tuple(self.defect_reach(defect.id)) if defect.flag_gems else self.feature_reach(defect.id)
        return found or tuple(dict.fromkeys(self.op_name(n) for n in defect.ops))


ROWS = Rows([*reductions.OPS, *layers.LAYERS, *tensorops.OPS])
