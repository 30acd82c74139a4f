"""FlagGems' own tests of the op families the registry holds: where they are, which files.

A manifest step ``flaggems_tests: [FAMILY, ...]`` runs FlagGems' own test files of every row of
those families (``all``: every family) - derived from the rows when the step runs, never a list
kept by hand: a row added to a family is picked up with no other edit.  A row's files are the
``test_<name>.py`` FlagGems ships for its name, its module's or one of its registration names
(``max_dim`` -> ``test_max.py``).

The files come from the lane's FlagGems tests, found in this order: ``$FL_LANE_TESTS`` (the
lane's ``flaggems_tests_from``: a wheel or a directory holding ``flaggems_tests``, unpacked by
the runner), ``$FL_LANE_SITE/flaggems_tests`` (the lane's ``packages:`` installed a FlagGems that
ships them), then ``flaggems_tests`` importable in the environment.  PyPI's FlagGems 5.0.2 ships
no tests: its lane runs the 5.4 wheel's against its own flag_gems."""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..util import FlContractError

PACKAGE = "flaggems_tests"
ALL = "all"


def families() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """Family -> its rows, each (name, the test names FlagGems may file it under)."""
    from ..registry import ROWS

    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for row in ROWS.rows():
        names = (row.name, row.module.rsplit(".", 1)[-1], *row.gems_names)
        found.setdefault(row.family, []).append((row.name, tuple(dict.fromkeys(names))))
    return found


def check_selection(selection: Sequence[str]) -> str | None:
    """Why ``selection`` names no family of the registry, or None."""
    known = families()
    unknown = [s for s in selection if s != ALL and s not in known]
    if not selection or unknown:
        return f"flaggems_tests names families of the registry ({', '.join(sorted(known))}) or {ALL}" + (
            f"; unknown: {unknown[0]!r}" if unknown else ""
        )
    return None


def directory(env: Mapping[str, str]) -> Path:
    """The ``flaggems_tests`` directory this step runs from (see the module's docstring)."""
    tried = []
    for root in (env.get("FL_LANE_TESTS"), env.get("FL_LANE_SITE")):
        if root:
            candidate = Path(root) / PACKAGE
            if candidate.is_dir():
                return candidate
            tried.append(str(candidate))
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    raise FlContractError(
        f"no FlagGems tests to run: {PACKAGE} is in none of {', '.join(tried) or 'no lane directory'}"
        " and not importable (flaggems_tests_from: names a FlagGems wheel that ships them)"
    )


def files(selection: Sequence[str], where: Path) -> list[Path]:
    """The test files of the selected families' rows that ``where`` holds, in registry order;
    refused when there is none: a step that ran nothing proves nothing."""
    known = families()
    chosen = list(known) if ALL in selection else [s for s in selection if s in known]
    out: list[Path] = []
    for family in chosen:
        for _, names in known[family]:
            out += [where / f"test_{n}.py" for n in names if (where / f"test_{n}.py").is_file()]
    out = list(dict.fromkeys(out))
    if not out:
        raise FlContractError(f"{where} holds no FlagGems test file of {', '.join(chosen)}: nothing to run")
    return out


def unpack(spec: str, into: Path) -> Path:
    """``flaggems_tests`` of a FlagGems wheel (or a directory holding it) copied under ``into``;
    returns ``into``.  Only that package is taken: the lane keeps its own flag_gems."""
    source = Path(spec)
    into.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        package = source / PACKAGE if (source / PACKAGE).is_dir() else source
        if not (package / "__init__.py").is_file():
            raise FlContractError(f"flaggems_tests_from: {spec} holds no {PACKAGE} package")
        shutil.copytree(package, into / PACKAGE, dirs_exist_ok=True)
        return into
    try:
        with zipfile.ZipFile(source) as wheel:
            members = [m for m in wheel.namelist() if m.startswith(f"{PACKAGE}/") and ".." not in m.split("/")]
            if not members:
                raise FlContractError(f"flaggems_tests_from: {spec} ships no {PACKAGE}")
            wheel.extractall(into, members)
    except (OSError, zipfile.BadZipFile) as exc:
        raise FlContractError(f"flaggems_tests_from: cannot read {spec}: {exc}") from None
    return into
