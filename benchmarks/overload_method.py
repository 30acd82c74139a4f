"""Measure the method (issue 57, item 7): which inputs catch the defects - power-of-two shapes of
at most 32 (the Torch-FL survey's profiles: the suite's ``pow2`` transform), OpInfo's samples
as they are (``none``), or the boundary and layout transforms (``boundary``, ``transposed``,
``strided``, ``expanded``, ``empty``).  The value of boundary shapes is measured here, not
claimed.

It reads the overload suite's JUnit (``contracts/overloads``, a full sweep so every transform
ran) of a clean run and of defective ones, and counts a case as a catch where it fails (or is a
known defect's strict xfail) in the defective run and passes in the clean one: a case failing
on the clean run too is no catch of this defect, and is counted apart.

- ``--lane NAME=REPORT``: a defective lane (the emulated Iluvatar lane without the workaround);
  each overload with a catch is one defect reached (the denominator: overloads caught by any
  input; the reach scan is ``registry/coverage.py``'s).
- ``--mutant NAME=REPORT``: one mutant of the zoo (``pytest_fl_contract/testing/zoo.py``), the
  suite run with it applied (``--run-zoo`` does that); the mutant is one defect, caught or not
  (the denominator: the mutants given).

    python benchmarks/overload_method.py --clean cpu.xml --lane no-workaround=iluvatar.xml --json m.json
    python benchmarks/overload_method.py --run-zoo last_row_tile_dropped,mean_wrong_count --work /tmp/zoo-ov

Bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pytest_fl_contract.results import cases, scoreboard  # noqa: E402
from pytest_fl_contract.util import FlContractError, one_line  # noqa: E402

# the three ways of choosing inputs the issue compares, by the suite's fl_transform
CLASSES = (
    ("pow2", "power-of-two shapes <= 32", ("pow2",)),
    ("opinfo", "OpInfo samples as they are", ("none",)),
    ("transforms", "boundary and layout transforms", ("boundary", "transposed", "strided", "expanded", "empty")),
)
CLASS_OF = {t: name for name, _, ts in CLASSES for t in ts}
CAUGHT = ("fail", "known")  # a failure, or a known defect's strict xfail: the defect showed


@dataclass(frozen=True)
class Unit:
    """One defect: an overload the defective lane breaks, or one mutant."""

    name: str
    caught_by: frozenset[str]  # the classes with a catch
    catches: int  # cases that fail here and pass on the clean run


@dataclass(frozen=True)
class Condition:
    """A defective run, its defects and what caught them."""

    name: str
    kind: str  # lane | mutant
    units: tuple[Unit, ...]
    ran: Mapping[str, int]  # class -> cases of it compared (a class with none was not measured)
    clean_failures: int  # cases failing in both runs: left out, never a catch
    unpaired: int  # cases of the defective run the clean run has not


def _cases(path: Path) -> dict[str, scoreboard.Case]:
    """The overload cases of one lane's report, by key (the lane left out: two runs meet)."""
    report = cases.read_one(path)
    found = {c.key: c for c in scoreboard.cases_of(report)}
    if not found:
        raise FlContractError(f"{path}: no overload cases (fl_overload): not a report of contracts/overloads")
    return found


def condition(
    name: str, kind: str, clean: Mapping[str, scoreboard.Case], defective: Mapping[str, scoreboard.Case]
) -> Condition:
    """What caught the defects of ``defective``, against ``clean`` (pure: cases in, counts out)."""
    ran = {cls: 0 for cls, _, _ in CLASSES}
    by_unit: dict[str, set[str]] = {}
    catches: dict[str, int] = {}
    clean_failures = unpaired = 0
    for key, case in defective.items():
        cls = CLASS_OF.get(case.transform)
        base = clean.get(key)
        if base is None:
            unpaired += 1
            continue
        if cls is None or not (case.ran and base.ran):
            continue
        ran[cls] += 1
        if case.kind not in CAUGHT:
            continue
        if base.kind != "pass":
            clean_failures += 1
            continue
        unit = case.overload if kind == "lane" else name
        by_unit.setdefault(unit, set()).add(cls)
        catches[unit] = catches.get(unit, 0) + 1
    if kind == "mutant" and name not in by_unit:
        by_unit[name] = set()  # a mutant nothing caught: a defect missed, in the denominator
    units = tuple(Unit(u, frozenset(c), catches.get(u, 0)) for u, c in sorted(by_unit.items()))
    return Condition(name, kind, units, ran, clean_failures, unpaired)


def _share(n: int, total: int, measured: bool = True) -> str:
    if not measured:
        return "not run"
    return f"{n}/{total} ({100 * n / total:.0f}%)" if total else "0/0"


def row_of(c: Condition) -> dict:
    total = len(c.units)
    by = {cls: sum(cls in u.caught_by for u in c.units) for cls, _, _ in CLASSES}
    return {
        "condition": c.name,
        "kind": c.kind,
        "defects": total,
        "caught": sum(bool(u.caught_by) for u in c.units),
        "by": by,
        "measured": {cls: c.ran[cls] > 0 for cls in by},
        "cases": dict(c.ran),
        "opinfo_or_transforms": sum(bool(u.caught_by & {"opinfo", "transforms"}) for u in c.units),
        "only_transforms": sum(u.caught_by == {"transforms"} for u in c.units),
        "clean_failures": c.clean_failures,
        "unpaired": c.unpaired,
        "units": {u.name: sorted(u.caught_by) for u in c.units},
    }


def table(conditions: Sequence[Condition]) -> str:
    """The Markdown table: one row per defective run (and one for the zoo's mutants together)."""
    head = (
        "| condition | defects | caught by (a) pow2 <= 32 | by (b) OpInfo as is | by (c) boundary / layout "
        "| by (b) or (c) | only by (c) | cases compared (a / b / c) | failing on the clean run too "
        "| not in the clean run |"
    )
    out = [head, "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    rows = [row_of(c) for c in conditions]
    mutants = [c for c in conditions if c.kind == "mutant"]
    if len(mutants) > 1:  # the zoo as one row: every mutant one defect
        units = tuple(u for c in mutants for u in c.units)
        ran = {cls: sum(c.ran[cls] for c in mutants) for cls, _, _ in CLASSES}
        rows.append(
            row_of(
                Condition(
                    f"mutant zoo ({len(mutants)} mutants)",
                    "zoo",
                    units,
                    ran,
                    sum(c.clean_failures for c in mutants),
                    sum(c.unpaired for c in mutants),
                )
            )
        )
    for r in rows:
        n = r["defects"]
        cells = [_share(r["by"][cls], n, r["measured"][cls]) for cls, _, _ in CLASSES]
        out.append(
            f"| {r['condition']} | {n} | {' | '.join(cells)} | {_share(r['opinfo_or_transforms'], n)} | "
            f"{_share(r['only_transforms'], n)} | {r['cases']['pow2']} / {r['cases']['opinfo']} / "
            f"{r['cases']['transforms']} | {r['clean_failures']} | {r['unpaired']} |"
        )
    out += [
        "",
        "A catch: a case failing (or a known defect's strict xfail) on the defective run that passes on the "
        "clean run; a case the clean run has not (its plan chose other samples) is no catch and counted apart. "
        "A lane's defects: the overloads with a catch; a mutant is one defect, caught or not. "
        "'not run': the reports hold no case of that input class (a quick sweep runs none and boundary only).",
    ]
    return "\n".join(out) + "\n"


def _named(values: Sequence[str], what: str) -> list[tuple[str, Path]]:
    out = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise FlContractError(f"{what} {value!r}: expected NAME=REPORT")
        out.append((name, Path(path)))
    return out


# -- running the suite under the zoo --------------------------------------------------


def run_zoo(
    names: Sequence[str], work: Path, clean: Path | None = None, extra: Sequence[str] = ()
) -> tuple[Path, list[tuple[str, Path]]]:
    """The overload suite (full sweep) on the CPU lane once per mutant, applied as the zoo applies
    it (``--fl-mutant``), each run selecting the overloads whose names hold the mutated op
    (``-k OP``); and clean over all of them unless ``clean`` is that run's report already."""
    from pytest_fl_contract.testing.run import PLUGIN
    from pytest_fl_contract.testing.zoo import MUTANTS as by_name

    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise FlContractError(f"--run-zoo: no mutant {unknown[0]!r} in the zoo (fl-contract mutants --list)")
    chosen = [by_name[n] for n in names]
    work.mkdir(parents=True, exist_ok=True)
    suite = ROOT / "contracts" / "overloads"

    def pytest(report: Path, select: str, *args: str) -> None:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(suite),
            "-p",
            "fl_contract",
            "--platform",
            "cpu",
            "--fl-sweep",
            "full",
            "-k",
            select,
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-c",
            str(ROOT / "contracts" / "pytest.ini"),
            "--rootdir",
            str(ROOT / "contracts"),
            f"--junitxml={report}",
            *args,
            *extra,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=work, timeout=3600)
        if done.returncode not in (0, 1) or not report.is_file():
            tail = " | ".join(done.stdout.strip().splitlines()[-3:])
            raise FlContractError(f"the overload suite ({report.stem}) exited {done.returncode}: {tail}")

    def op(m: Any) -> str:  # the mutated op: the first word of the mutant's contract selection
        return str(m.select.split()[0])

    if clean is None:
        clean = work / "clean.xml"
        pytest(clean, " or ".join(sorted({op(m) for m in chosen})))
    out = []
    for m in chosen:
        path = work / f"{m.name}.xml"
        pytest(path, op(m), "-p", PLUGIN, "--fl-mutant", m.name, *m.args)
        out.append((m.name, path))
    return clean, out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clean",
        help="the suite's report of the clean run (no defect, no mutant); with --run-zoo: its run is not repeated",
    )
    parser.add_argument("--lane", action="append", default=[], metavar="NAME=REPORT", help="a defective lane")
    parser.add_argument("--mutant", action="append", default=[], metavar="NAME=REPORT", help="one mutant's run")
    parser.add_argument("--run-zoo", metavar="M1,M2", help="run the suite clean and under these mutants first")
    parser.add_argument("--work", default="overload-method", help="--run-zoo: where its reports go")
    parser.add_argument("--json", metavar="PATH", help="also write the rows (and each defect's classes) as JSON")
    args = parser.parse_args(argv)
    try:
        lanes, mutants = _named(args.lane, "--lane"), _named(args.mutant, "--mutant")
        clean_path = Path(args.clean) if args.clean else None
        if args.run_zoo:
            clean_path, ran = run_zoo(
                [n.strip() for n in args.run_zoo.split(",") if n.strip()], Path(args.work), clean_path
            )
            mutants += ran
        if clean_path is None or not (lanes or mutants):
            raise FlContractError("name the clean run (--clean) and a defective one (--lane, --mutant or --run-zoo)")
        clean = _cases(clean_path)
        conditions = [condition(name, "lane", clean, _cases(path)) for name, path in lanes]
        conditions += [condition(name, "mutant", clean, _cases(path)) for name, path in mutants]
        print(table(conditions), end="")
        if args.json:
            Path(args.json).write_text(
                json.dumps([row_of(c) for c in conditions], indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
    except FlContractError as exc:
        print(f"overload_method: error: {one_line(str(exc), 600)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"overload_method: error: {one_line(str(exc), 600)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
