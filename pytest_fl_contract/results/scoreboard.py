"""The overload scoreboard (issue 57): every overload the lane's FlagGems registers, one status each.

The overload suite (``contracts/overloads/``) writes one case per (overload, sample, dtype,
transform), and one skipped ``UNTESTED`` case per registered overload it has no case for, each
carrying ``fl_overload``, ``fl_status``, ``fl_detail``, ``fl_transform`` and ``fl_sample``
(``cases.Row.fields``).  This folds a lane's cases into one verdict per overload:

- STRICT: every case that ran passed;
- PARTIAL: n of m passed;
- FAILED: none passed;
- UNSUPPORTED: none ran, FlagGems refused them (a dtype or layout torch takes);
- UNTESTED: none ran, with the reason.

"Ran" counts passes, failures and the strict xfails of known defects: a known defect's case is
not a pass (its overload is PARTIAL or FAILED), and an overload whose every failing case is a
known defect's strict xfail says so (``known_only``, "known defects only" in the summary line):
the lane is green for it, and what FAILED / PARTIAL hold beyond those are the new failures.  A
strict xfail that passed (the defect no longer shows) fails, as everywhere in this project.

Nothing is taken from the suite's word alone: a case's ``fl_status`` is held against its pytest
outcome, and a case that passed without saying PASS (or failed saying PASS) is an ERROR here.
Pure functions over ``cases.LaneReport``; bad input is ``FlContractError``, one line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..reporting import junit
from ..util import FlContractError, md_code, md_text, one_line, safe_text
from .cases import LaneReport, Row, lanes_of

CASE_STATUSES = ("PASS", "WRONG", "FAULT", "ERROR", "UNSUPPORTED", "TIMEOUT", "UNTESTED")
FAILING = ("WRONG", "FAULT", "ERROR", "TIMEOUT")
SKIPPING = ("UNSUPPORTED", "UNTESTED")
TRANSFORMS = ("none", "boundary", "transposed", "strided", "expanded", "empty", "pow2")
STATUSES = ("STRICT", "PARTIAL", "FAILED", "UNSUPPORTED", "UNTESTED")
ORDER = ("FAILED", "PARTIAL", "UNSUPPORTED", "UNTESTED", "STRICT")  # the tables: what needs a look first
# A suite property the overload suite may write: its FlagGems' registration table (a JSON list of
# the overload names, or their number), so an overload with no case at all is still counted.
REGISTERED = "fl_overloads_registered"
# suite properties that are data, not provenance
NOT_PROVENANCE = frozenset({"fl_cases", "fl_summary", "fl_step", "fl_defect_reach", REGISTERED})
SCHEMA = "fl-contract-scoreboard/1"
ABSENT = "registered, but no case of it in this report"


@dataclass(frozen=True)
class Case:
    """One case of the overload suite, its status held against its outcome."""

    key: str
    overload: str
    status: str  # one of CASE_STATUSES
    kind: str  # pass | fail | xpass | known | unsupported | untested
    detail: str = ""
    transform: str = ""
    sample: str = ""
    defect: str | None = None
    seed: int | None = None

    @property
    def ran(self) -> bool:
        return self.kind in ("pass", "fail", "xpass", "known")


@dataclass(frozen=True)
class Verdict:
    """One overload on one lane."""

    overload: str
    status: str  # one of STATUSES
    passed: int = 0
    ran: int = 0  # m of "n of m": passed + failing + known
    failing: int = 0  # failed, errored or a strict xpass
    known: int = 0  # strict xfails of known defects
    unsupported: int = 0
    untested: int = 0
    defects: tuple[str, ...] = ()
    reason: str = ""  # UNTESTED / UNSUPPORTED: why; PARTIAL / FAILED: the first failing case's status and detail
    first: str = ""  # that case's key
    transforms: tuple[tuple[str, int, int, int], ...] = ()  # (transform, passed, failing, known) of the cases that ran

    @property
    def known_only(self) -> bool:
        """Its every non-passing case is a known defect's strict xfail: no new failure."""
        return self.status in ("PARTIAL", "FAILED") and self.failing == 0

    @property
    def label(self) -> str:
        if self.status == "STRICT":
            text = f"STRICT {self.passed}/{self.ran}"
        elif self.status in ("PARTIAL", "FAILED"):
            text = f"{self.status} {self.passed} of {self.ran}"
        else:
            return f"{self.status}: {self.reason}"
        if self.defects:
            text += f" (known defect{'s' if len(self.defects) > 1 else ''} {', '.join(self.defects)}" + (
                " only)" if self.known_only else ")"
            )
        return text


@dataclass(frozen=True)
class Board:
    """A lane's scoreboard: every overload's verdict, the counts and where they came from."""

    lane: str
    source: str  # the report it was read from
    verdicts: tuple[Verdict, ...]
    registered: int  # N: the registration table's count where the report carries it, else the overloads seen
    registered_from: str
    provenance: Mapping[str, str] = field(default_factory=dict)
    seeds: tuple[int, ...] = ()
    unnamed: int = 0  # registered (by count) but named by no case: counted UNTESTED, not listed
    notes: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        seen = Counter(v.status for v in self.verdicts)
        seen["UNTESTED"] += self.unnamed
        return {status: seen[status] for status in STATUSES}

    @property
    def known_only(self) -> int:
        return sum(v.known_only for v in self.verdicts)

    def summary(self) -> str:
        """The line a lane engineer reads."""
        counts = self.counts()
        line = f"registered {self.registered}: " + " / ".join(f"{s} {counts[s]}" for s in STATUSES)
        if self.known_only:
            line += f"; known defects only: {self.known_only}"
        return line

    def get(self, overload: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.overload == overload), None)


# -- cases ----------------------------------------------------------------------------


def _prefixed(message: str) -> tuple[str | None, str]:
    """``UNSUPPORTED: why`` -> (UNSUPPORTED, why); a skip reason the suite did not prefix -> (None, it)."""
    head, sep, rest = message.partition(":")
    return (head.strip(), rest.strip()) if sep and head.strip() in SKIPPING else (None, message)


def case_of(row: Row) -> Case | None:
    """The overload case a row is, or None for a case of another suite (no ``fl_overload``).
    FlContractError for one that breaks the interface (a status or transform it does not know)."""
    fields = dict(row.fields)
    overload = fields.get("overload", "")
    if not overload:
        if "status" in fields:  # the suite could not name its overloads (no FlagGems table): the run is broken
            raise FlContractError(
                f"case {one_line(row.key, 200)}: fl_status {fields['status']} without fl_overload"
                + (f": {fields['detail']}" if fields.get("detail") else "")
            )
        return None
    status, detail = fields.get("status", ""), fields.get("detail", "")
    transform, sample = fields.get("transform", ""), fields.get("sample", "")
    where = f"case {one_line(row.key, 200)}"
    if status and status not in CASE_STATUSES:
        raise FlContractError(f"{where}: fl_status {status!r} is not one of {', '.join(CASE_STATUSES)}")
    if transform and transform not in TRANSFORMS:
        raise FlContractError(f"{where}: fl_transform {transform!r} is not one of {', '.join(TRANSFORMS)}")
    outcome, said = row.outcome, status or "none"

    def make(status: str, kind: str, detail: str) -> Case:
        return Case(row.key, overload, status, kind, one_line(detail, 300), transform, sample, row.defect, row.seed)

    if outcome == "passed":
        if status == "PASS":
            return make("PASS", "pass", detail)
        return make("ERROR", "fail", f"the case passed but recorded fl_status {said}")
    if outcome in ("failed", "error"):
        if status in FAILING:
            return make(status, "fail", detail or row.message)
        return make("ERROR", "fail", f"{outcome} (fl_status {said}): {row.message}")
    if outcome == "xpassed":
        return make(
            status or "PASS",
            "xpass",
            f"known defect {row.defect or '(no id)'} did not show (strict xpass): its entry is due",
        )
    if outcome == "xfailed":
        return make(status if status in FAILING else "ERROR", "known", detail or row.message)
    if status and status not in SKIPPING:  # skipped, yet it says it ran: the suite contradicts itself
        return make("ERROR", "fail", f"skipped but recorded fl_status {status}: {row.message}")
    prefix, rest = _prefixed(row.message)
    chosen = status or prefix or "UNTESTED"
    return make(chosen, chosen.lower(), detail or rest or row.message or "skipped with no reason")


def cases_of(report: LaneReport) -> list[Case]:
    return [case for row in report.rows for case in [case_of(row)] if case is not None]


# -- verdicts -------------------------------------------------------------------------


def _commonest(texts: Iterable[str]) -> str:
    seen = Counter(t for t in texts if t)
    return min(seen, key=lambda t: (-seen[t], t)) if seen else ""


def verdict_of(overload: str, cases: Sequence[Case]) -> Verdict:
    """One overload's verdict from its cases (none: UNTESTED, registered but absent)."""
    kinds = Counter(c.kind for c in cases)
    passed, failing, known = kinds["pass"], kinds["fail"] + kinds["xpass"], kinds["known"]
    ran = passed + failing + known
    defects = tuple(sorted({c.defect or "(no id)" for c in cases if c.kind == "known"}))
    by_transform: dict[str, Counter[str]] = {}
    for c in cases:
        if c.ran:
            by_transform.setdefault(c.transform or "-", Counter())[c.kind] += 1
    transforms = tuple((t, n["pass"], n["fail"] + n["xpass"], n["known"]) for t, n in sorted(by_transform.items()))
    if ran == 0:
        status = "UNSUPPORTED" if kinds["unsupported"] else "UNTESTED"
        reason = _commonest(c.detail for c in cases if c.kind == status.lower()) or ABSENT
        first = ""
    else:
        status = "STRICT" if passed == ran else "FAILED" if passed == 0 else "PARTIAL"
        bad = next((c for c in cases if c.kind in ("fail", "xpass")), None) or next(
            (c for c in cases if c.kind == "known"), None
        )
        label = "XPASS(strict)" if bad is not None and bad.kind == "xpass" else bad.status if bad is not None else ""
        reason, first = (f"{label}: {bad.detail}", bad.key) if bad is not None else ("", "")
    return Verdict(
        overload,
        status,
        passed,
        ran,
        failing,
        known,
        kinds["unsupported"],
        kinds["untested"],
        defects,
        reason,
        first,
        transforms,
    )


def _registered(report: LaneReport, steps: Iterable[str]) -> tuple[list[str], int | None, list[str]]:
    """(names, count, notes) of the registration table the overload steps wrote, if any."""
    names: list[str] = []
    count: int | None = None
    notes = []
    for step in steps:
        value = report.step_properties.get(step, {}).get(REGISTERED)
        if value is None:
            continue
        try:
            data = safe_text(json.loads(value))
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, list) and all(isinstance(n, str) and n for n in data):
            names += [n for n in data if n not in names]
        elif isinstance(data, int) and not isinstance(data, bool) and data >= 0:
            count = max(count or 0, data)
        else:
            notes.append(f"step {step}: {REGISTERED} is neither a list of overload names nor a count (ignored)")
    return names, count, notes


def board_of(report: LaneReport) -> Board:
    """The lane's scoreboard.  FlContractError where the report holds no overload case (not a
    report of the overload suite: a board of nothing would read as nothing to fix)."""
    found = cases_of(report)
    if not found:
        raise FlContractError(
            f"{report.path}: lane {report.lane} has no overload cases (fl_overload): not a report "
            "of the overload suite (contracts/overloads)"
        )
    keys = {c.key for c in found}
    steps = list(dict.fromkeys(row.step for row in report.rows if row.key in keys))
    names, count, notes = _registered(report, steps)
    by_overload: dict[str, list[Case]] = {}
    for case in found:
        by_overload.setdefault(case.overload, []).append(case)
    for name in names:
        by_overload.setdefault(name, [])
    verdicts = tuple(verdict_of(name, cases) for name, cases in sorted(by_overload.items()))
    if names:
        registered, source = len(names), f"the report's registration table ({REGISTERED})"
        extra = sorted(set(by_overload) - set(names))
        if extra:
            notes.append(
                f"{len(extra)} overload(s) with cases are not in the registration table: "
                f"{', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}"
            )
            registered = len(by_overload)
    elif count is not None:
        registered, source = max(count, len(by_overload)), f"the report's registration count ({REGISTERED})"
        if count < len(by_overload):
            notes.append(f"the report names {len(by_overload)} overloads, more than its registration count {count}")
    else:
        registered, source = len(by_overload), "the overloads the report's cases name (no registration table in it)"
    props = next((report.step_properties[s] for s in steps if report.step_properties.get(s)), report.properties)
    provenance = {k: v for k, v in sorted(props.items()) if k not in NOT_PROVENANCE}
    seeds = tuple(sorted({c.seed for c in found if c.seed is not None}))
    return Board(
        report.lane,
        report.path,
        verdicts,
        registered,
        source,
        provenance,
        seeds,
        max(registered - len(by_overload), 0),
        tuple(notes),
    )


def has_overloads(report: LaneReport) -> bool:
    return any(dict(row.fields).get("overload") for row in report.rows)


def boards_of(reports: Sequence[LaneReport]) -> list[Board]:
    """The boards of the lanes whose reports hold overload cases (the others are left out)."""
    return [board_of(report) for report in reports if has_overloads(report)]


# -- across lanes ---------------------------------------------------------------------


def compared(v: Verdict) -> str:
    """What lanes are compared by: the status, and for PARTIAL how many of how many passed (12 of
    18 on one lane and 3 of 18 on another is a difference a lane engineer wants to see)."""
    return f"PARTIAL {v.passed} of {v.ran}" if v.status == "PARTIAL" else v.status


def _badness(v: Verdict) -> tuple[int, float]:
    return ORDER.index(v.status), v.passed / v.ran if v.ran else 1.0


@dataclass(frozen=True)
class Disagreement:
    """An overload whose status differs between lanes (STRICT on one, FAILED on another)."""

    overload: str
    verdicts: tuple[tuple[str, Verdict], ...]  # (lane, verdict) of each lane that has it

    def line(self) -> str:
        """``mm: FAILED on b; STRICT on a (WRONG: ...)``: worst first, the worst lane's first failing case."""
        groups: dict[str, list[str]] = {}
        first: dict[str, Verdict] = {}
        for lane, verdict in self.verdicts:
            groups.setdefault(compared(verdict), []).append(lane)
            first.setdefault(compared(verdict), verdict)
        parts = [f"{shown} on {', '.join(groups[shown])}" for shown in sorted(groups, key=lambda s: _badness(first[s]))]
        failing = [v for _, v in self.verdicts if v.status in ("FAILED", "PARTIAL")]
        worst = min(failing, key=_badness) if failing else None
        why = f" ({worst.reason})" if worst is not None and worst.reason else ""
        return f"{self.overload}: " + "; ".join(parts) + why


def across(boards: Sequence[Board]) -> list[Disagreement]:
    """The overloads not the same on every lane that has them (``compared``)."""
    names = sorted({v.overload for board in boards for v in board.verdicts})
    out = []
    for name in names:
        held = tuple((board.lane, v) for board in boards for v in [board.get(name)] if v is not None)
        if len({compared(v) for _, v in held}) > 1:
            out.append(Disagreement(name, held))
    return out


# -- outputs --------------------------------------------------------------------------


PROVENANCE_SHOWN = (
    ("version_torch", "torch"),
    ("version_triton", "triton"),
    ("version_flag_gems", "flag_gems"),
    ("fl_flag_gems_commit", "flag_gems commit"),
    ("fl_device", "device"),
    ("fl_platform", "platform"),
    ("fl_emulated", "emulated"),
    ("fl_workaround", "workaround"),
    ("fl_sweep", "sweep"),
    ("fl_seed", "seed"),
    ("fl_checkout_commit", "checkout"),
)


def provenance_line(board: Board) -> str:
    shown = [f"{label} {board.provenance[name]}" for name, label in PROVENANCE_SHOWN if board.provenance.get(name)]
    if board.seeds and not board.provenance.get("fl_seed"):
        seeds = ", ".join(str(s) for s in board.seeds[:5]) + (" ..." if len(board.seeds) > 5 else "")
        shown.append(f"case seeds {seeds}")
    return "; ".join(shown) or "the report records no versions or device"


def ordered(board: Board) -> list[Verdict]:
    return sorted(board.verdicts, key=lambda v: (ORDER.index(v.status), v.overload))


def markdown(board: Board, only_problems: bool = False) -> str:
    """The lane's board as Markdown; ``only_problems``: STRICT rows left out (a step summary)."""
    out = [
        f"### fl-contract overload scoreboard: lane {md_code(board.lane)}",
        "",
        f"**{md_text(board.summary())}**",
        "",
        f"from {md_code(board.source, 500)}; {md_text(provenance_line(board), 1000)}; "
        f"denominator: {md_text(board.registered_from)}",
        "",
    ]
    out += [f"- note: {md_text(note, 500)}" for note in board.notes]
    if board.unnamed:
        out.append(f"- {board.unnamed} registered overload(s) are named by no case: counted UNTESTED ({ABSENT})")
    rows = [v for v in ordered(board) if not (only_problems and v.status == "STRICT")]
    if rows:
        out += [""] if out[-1] else []
        out += [
            "| overload | status | passed | ran | known defects | unsupported | untested | why / first failing |",
            "|---|---|---:|---:|---|---:|---:|---|",
        ]
        out += [
            f"| {md_code(v.overload)} | {v.status}{' (known only)' if v.known_only else ''} | {v.passed} | {v.ran} | "
            f"{md_text(', '.join(v.defects)) or '-'} | {v.unsupported} | {v.untested} | "
            f"{md_text(v.reason, 300) or '-'} |"
            for v in rows
        ]
    return "\n".join(out) + "\n"


def file_stem(lane: str) -> str:
    """A lane's name as a file name: anything but ``[A-Za-z0-9._-]`` as ``_`` (a lane named
    ``../x`` writes nothing outside the folder), as ``html.page_name`` does."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", lane).lstrip(".") or "lane"


def to_dict(board: Board) -> dict:
    return {
        "schema": SCHEMA,
        "lane": board.lane,
        "report": board.source,
        "provenance": dict(board.provenance),
        "seeds": list(board.seeds),
        "registered": board.registered,
        "registered_from": board.registered_from,
        "summary": board.summary(),
        "counts": board.counts(),
        "known_only": board.known_only,
        "unnamed": board.unnamed,
        "notes": list(board.notes),
        "overloads": [
            {
                "overload": v.overload,
                "status": v.status,
                "label": v.label,
                "known_only": v.known_only,
                "passed": v.passed,
                "ran": v.ran,
                "failing": v.failing,
                "known": v.known,
                "unsupported": v.unsupported,
                "untested": v.untested,
                "defects": list(v.defects),
                "reason": v.reason,
                "first_failing": v.first,
                "transforms": {t: {"passed": p, "failing": f, "known": k} for t, p, f, k in v.transforms},
            }
            for v in board.verdicts
        ],
    }


def to_json(board: Board) -> str:
    return json.dumps(to_dict(board), indent=1, sort_keys=True)


def across_markdown(boards: Sequence[Board]) -> str:
    """The parity view's overload lines: one per overload whose status differs between lanes."""
    lines = across(boards)
    out = [
        f"### overloads across lanes: {len(lines)} differ",
        "",
        "| lane | " + " | ".join(md_text(b.lane) for b in boards) + " |",
        "|---|" + "---|" * len(boards),
        "| summary | " + " | ".join(md_text(b.summary()) for b in boards) + " |",
        "",
    ]
    out += [f"- {md_text(d.line(), 600)}" for d in lines]
    return "\n".join(out) + "\n"


def across_dict(boards: Sequence[Board]) -> list[dict]:
    return [
        {"overload": d.overload, "line": d.line(), "lanes": {lane: compared(v) for lane, v in d.verdicts}}
        for d in across(boards)
    ]


# -- files ----------------------------------------------------------------------------

SUFFIXES = (".scoreboard.json", ".scoreboard.md")


def paths_of(folder: Path, lane: str) -> tuple[Path, Path]:
    """Where a lane's board lands in ``folder``: ``LANE.scoreboard.json`` and ``.md`` (never
    ``*.xml``: a reports directory's readers take those for lanes' reports)."""
    stem = file_stem(lane)
    return folder / f"{stem}{SUFFIXES[0]}", folder / f"{stem}{SUFFIXES[1]}"


def write(board: Board, folder: Path) -> tuple[Path, Path]:
    """The board's JSON and Markdown, each whole or not at all (``files.write_atomic``)."""
    from .. import files

    json_path, md_path = paths_of(folder, board.lane)
    files.write_atomic(json_path, (to_json(board) + "\n").encode("utf-8"))
    files.write_atomic(md_path, markdown(board).encode("utf-8"))
    return json_path, md_path


def forget(folder: Path, lane: str) -> None:
    """A lane's last board goes before its run writes a new one: a run with no overload cases
    leaves no board of an earlier run to be read as its own."""
    for path in paths_of(folder, lane):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def lane_lines(boards: Sequence[Board]) -> str:
    """The lanes' one-line summaries and the lines where they differ (a step summary's part)."""
    if not boards:
        return ""
    out = ["", "**overload scoreboard**", ""]
    out += [f"- {md_code(b.lane)}: {md_text(b.summary(), 400)}" for b in boards]
    if len(boards) > 1:
        lines = across(boards)
        out += ["", f"{len(lines)} overload(s) differ between lanes" + (":" if lines else "")]
        out += [f"- {md_text(d.line(), 600)}" for d in lines]
    return "\n".join(out) + "\n"


def view(reports: Sequence[LaneReport]) -> tuple[list[Board], str | None]:
    """The boards where a command shows them beside its own output (parity, merge, the HTML
    pages): a view, so an overload case it cannot read is said (the second item, one line)
    and takes nothing else of that command's output with it."""
    try:
        return boards_of(reports), None
    except FlContractError as exc:
        return [], f"overload scoreboard: {exc}"


def report_lines(parsed: junit.Report, path: str, fallback_lane: str) -> str:
    """``lane_lines`` of a parsed report of several lanes (``fl-contract merge``'s)."""
    boards, trouble = view(lanes_of(parsed, path, fallback_lane))
    return f"\n**{md_text(trouble, 600)}**\n" if trouble else lane_lines(boards)
