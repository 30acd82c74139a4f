"""Issue 57, item 5: the emulated lane without the workaround held against the source scan.

Every overload whose FlagGems function lives in a module the masked-row scan says the defect
reaches (``registry/coverage.py``) should fail there; every overload that fails there should
be reached.  This reads the overload suite's JUnit of that lane (``--report``) and the
installed FlagGems' registration table, and prints both disagreements: reached but passing
(the emulator's measure of each call says why: the defect never touched its loads, or the rows
it read past the end never reached the output, or a known defect's xfail hides it), and failing
but not reached (a kernel the scan misses, or a failure of another cause).

    fl-contract contracts overloads -- --platform iluvatar --fl-emulate --fl-no-workaround \\
        -p xdist -n 2 --junitxml=/tmp/nowa.xml
    python benchmarks/overload_reach.py --report /tmp/nowa.xml [--clean cpu.xml] [--out FILE.md]

``--clean`` (the cpu lane's report of the same line) leaves out overloads that fail there too:
those are FlagGems' own defects, not the injected one's.  Bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pytest_fl_contract.results import cases, scoreboard  # noqa: E402
from pytest_fl_contract.util import FlContractError, one_line  # noqa: E402


def verdicts(path: Path) -> dict[str, scoreboard.Verdict]:
    boards = scoreboard.boards_of(cases.read(path))
    if not boards:
        raise FlContractError(f"{path}: no overload cases in it (not a report of contracts/overloads)")
    return {v.overload: v for board in boards for v in board.verdicts}


def touched(path: Path) -> dict[str, int]:
    """{overload: the most lanes the injected defect made one of its cases read beyond the
    masks} from the cases' ``fl_defect_lanes`` (the emulator measures it per call)."""
    import xml.etree.ElementTree as ET

    found: dict[str, int] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if props.get("fl_overload") and props.get("fl_defect_lanes") is not None:
            name = props["fl_overload"] or ""
            found[name] = max(found.get(name, 0), int(props["fl_defect_lanes"] or 0))
    return found


def modules_of_overloads() -> dict[str, str]:
    """{overload: the module of its FlagGems function} from the installed line's table."""
    from pytest_fl_contract.emulation.interpreter import bring_up

    bring_up("nvidia-small", ())
    import flag_gems

    from pytest_fl_contract.overloads import table

    return {e.name: e.module for e in table.read(flag_gems)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", required=True, type=Path, help="the no-workaround lane's overload JUnit")
    parser.add_argument("--clean", type=Path, help="the plain cpu lane's overload JUnit of the same line")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args(argv)
    try:
        lane = verdicts(args.report)
        lanes = touched(args.report)
        clean = verdicts(args.clean) if args.clean else {}
        from pytest_fl_contract.registry import coverage

        root = coverage.flag_gems_root()
        if root is None:
            raise FlContractError("no flag_gems installed")
        reached = {r.module for r in coverage.scan(root)}
        modules = modules_of_overloads()
    except (FlContractError, OSError) as exc:
        print(f"overload_reach: {one_line(str(exc))}", file=sys.stderr)
        return 2
    # a failing case, not a known defect's strict xfail (a known defect's overload is PARTIAL on
    # every lane); one that fails on the clean lane too is FlagGems' own
    own = {o for o, v in clean.items() if v.failing}
    rows = []
    for overload, verdict in sorted(lane.items()):
        is_reached = modules.get(overload) in reached
        fails = verdict.failing > 0 and overload not in own
        reads = lanes.get(overload)
        if verdict.status in ("UNTESTED", "UNSUPPORTED"):
            kind = "not run"
        elif is_reached and fails:
            kind = "reached, caught"
        elif is_reached and reads == 0:
            kind = "reached, passing: the defect never touched its calls"
        elif is_reached and verdict.known and not verdict.failing:
            kind = "reached, passing: a known defect's xfail hides it"
        elif is_reached:
            kind = "reached, passing: rows read past the end never reach the output"
        elif fails:
            kind = "not reached, failing"
        elif reads:
            kind = "not reached, touched, passing"
        else:
            continue
        shown = "-" if reads is None else str(reads)
        rows.append((kind, overload, modules.get(overload, "?"), verdict.status, shown, verdict.reason[:100]))
    counts = {k: sum(1 for r in rows if r[0] == k) for k in dict.fromkeys(r[0] for r in rows)}
    lines = [
        f"no-workaround lane {args.report.name}: " + ", ".join(f"{k} {n}" for k, n in counts.items()),
        "",
        "| | overload | module | status | lanes the defect read | first failure |",
        "|---|---|---|---|---:|---|",
    ]
    lines += [f"| {k} | `{o}` | `{m}` | {s} | {n} | {d} |" for k, o, m, s, n, d in sorted(rows)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
