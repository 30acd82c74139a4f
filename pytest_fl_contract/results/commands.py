"""The results commands of ``fl-contract``: compare, parity, html, history."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import files
from ..config.safeyaml import shown
from ..util import FlContractError, md_text


def _write(path: str | None, text: str, what: str) -> None:
    if path is None:
        return
    try:
        files.write_atomic(Path(path), text.encode("utf-8"))
    except OSError as exc:
        raise FlContractError(f"{what} {shown(path)}: cannot write: {exc.strerror}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from ..reporting.publish import publish
    from . import cases, compare

    baseline = cases.read_one(Path(args.baseline))
    current = cases.read_one(Path(args.current))
    result = compare.compare(baseline, current)
    _write(args.json, compare.to_json(result), "--json")
    publish(compare.markdown(result))
    return 0 if result.holds(args.same_failures) else 1


def cmd_parity(args: argparse.Namespace) -> int:
    from ..reporting.publish import publish
    from . import cases, parity, scoreboard

    reports = [report for name in args.reports for report in cases.read(Path(name))]
    result = parity.matrix(reports)
    boards, trouble = scoreboard.view(reports)  # the overload suite's lanes: where their overloads' statuses differ
    if args.json is not None:
        data = json.loads(parity.to_json(result))
        if boards:
            data["overloads"] = {
                "summaries": {b.lane: b.summary() for b in boards},
                "differ": scoreboard.across_dict(boards),
            }
        _write(args.json, json.dumps(data, indent=1, sort_keys=True), "--json")
    publish(
        parity.markdown(result, only_disagreeing=args.disagreeing)
        + (("\n" + scoreboard.across_markdown(boards)) if boards else "")
        + (f"\n**{md_text(trouble, 600)}**\n" if trouble else "")
    )
    return 0


def cmd_html(args: argparse.Namespace) -> int:
    from . import html

    for path in html.render(args.reports, args.out, args.bench, args.triage or ()):
        print(f"html: wrote {path}")
    return 0


def cmd_scoreboard(args: argparse.Namespace) -> int:
    """Each lane's overload scoreboard: its one-line summary and the lines where lanes differ
    on stdout (and the step summary), ``LANE.scoreboard.json`` and ``.md`` in ``--out``.
    Every report is read and every board made before anything is written."""
    from ..reporting.publish import publish
    from . import cases, scoreboard

    reports = [report for name in args.reports for report in cases.read(Path(name))]
    boards = scoreboard.boards_of(reports)
    if not boards:
        raise FlContractError(
            f"no lane holds overload cases (fl_overload) in {', '.join(map(shown, args.reports))}: "
            "not reports of the overload suite (contracts/overloads)"
        )
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = [path for board in boards for path in scoreboard.write(board, folder)]
    except OSError as exc:
        raise FlContractError(f"--out {shown(args.out)}: cannot write the scoreboard: {exc.strerror or exc}") from None
    publish(scoreboard.lane_lines(boards))
    for path in written:
        print(f"scoreboard: wrote {path}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from datetime import datetime, timezone

    from . import cases, history

    db = Path(args.db)
    if args.top < 1:
        raise FlContractError(f"--top {args.top}: a number of cases, 1 or more")
    if args.action == "add":
        if not args.items:
            raise FlContractError("history add: name the lane reports to record")
        reports = [r for name in args.items for r in cases.read(Path(name))]
        ids = history.add(db, reports, datetime.now(timezone.utc).isoformat(timespec="seconds"))
        print(
            f"history: recorded {len(ids)} run(s) in {db}: "
            + ", ".join(f"{r.lane} #{i} ({len(r.rows)} cases)" for r, i in zip(reports, ids))
        )
        return 0
    if not db.is_file():
        raise FlContractError(f"history database {shown(db)}: no such file (record runs with history add)")
    if args.action == "case":
        if len(args.items) != 1:
            raise FlContractError("history case: name one case (its key as compare prints it, or its end)")
        for h in history.case_history(db, args.items[0], args.lane):
            first = (
                f"first seen failing in run #{h.first_failing[0]} ({h.first_failing[1]}, commit "
                f"{h.first_failing[2] or '?'})"
                if h.first_failing
                else "never seen failing"
            )
            print(f"{h.lane}: {h.key}: {h.runs} run(s), {first}, flipped {h.flips} time(s), last {h.last}")
        return 0
    for lane, key, flips, runs in history.flaky(db, args.top):
        print(f"{flips:4d} flips in {runs:3d} runs  {lane}: {key}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    comp = sub.add_parser(
        "compare",
        help="what changed from BASELINE to CURRENT (JUnit files or report "
        "directories): new failures, fixed, new skips, ...; exit 1 on a regression "
        "or when no case passed in both",
    )
    comp.add_argument("baseline")
    comp.add_argument("current")
    comp.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    comp.add_argument(
        "--same-failures",
        action="store_true",
        help="exit 1 unless both fail exactly the same cases (a lane held to a reference lane)",
    )
    comp.set_defaults(fn=cmd_compare)
    par = sub.add_parser("parity", help="op x contract x lane from several lanes' reports, with pass rates")
    par.add_argument("reports", nargs="+", help="LANE.xml files or report directories")
    par.add_argument("--json", metavar="PATH", help="also write the matrix as JSON here")
    par.add_argument("--disagreeing", action="store_true", help="only the rows where the lanes disagree")
    par.set_defaults(fn=cmd_parity)
    page = sub.add_parser("html", help="one self-contained HTML page per lane, and the parity matrix's for two or more")
    page.add_argument("reports", nargs="+", help="LANE.xml files or report directories")
    page.add_argument(
        "--out", default="reports/html", help="directory for LANE.html and matrix.html (default reports/html)"
    )
    page.add_argument(
        "--bench",
        metavar="JSON",
        help="a benchmark JSON (bench_reductions.py --json): its fast/native ratio distribution on each lane page",
    )
    page.add_argument(
        "--triage",
        metavar="DIR",
        action="append",
        help="an fl-contract triage directory (its groups.json): the lane's page lists its failures by cause, "
        "each linked to its reproduction and issue draft (repeat for several lanes)",
    )
    page.set_defaults(fn=cmd_html)
    board = sub.add_parser(
        "scoreboard",
        help="the overload suite's scoreboard: per lane every registered overload "
        "STRICT, PARTIAL, FAILED, UNSUPPORTED or UNTESTED, one summary line "
        "each, and the overloads whose status differs between lanes",
    )
    board.add_argument("reports", nargs="+", help="LANE.xml files or report directories")
    board.add_argument(
        "--out",
        default="reports/scoreboard",
        help="directory for LANE.scoreboard.json and LANE.scoreboard.md (default reports/scoreboard)",
    )
    board.set_defaults(fn=cmd_scoreboard)
    hist = sub.add_parser("history", help="keep lane reports in SQLite: first seen failing, how often a case flipped")
    hist.add_argument("action", choices=("add", "case", "flaky"))
    hist.add_argument("items", nargs="*", help="add: LANE.xml files or directories; case: one case key")
    hist.add_argument(
        "--db", default="fl-contract-history.sqlite", help="the database (default ./fl-contract-history.sqlite)"
    )
    hist.add_argument("--lane", help="case: only this lane")
    hist.add_argument("--top", type=int, default=20, help="flaky: how many cases")
    hist.set_defaults(fn=cmd_history)
