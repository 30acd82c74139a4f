"""A lane's cases as rows: what ``compare``, ``parity``, the HTML report and ``history`` read.

A row is one JUnit case with what the plugin wrote about it (``fl_cases``: the op and
contract it checks, the known defect it was a strict xfail for, the seed it drew from) and
what the runner wrote about its step (``fl_step``).  Its key leaves the lane out
(``reduction_contract/reductions.test_dims::test_every_dim[sum-2x3-d0]``), so the same case
of two lanes, or of two runs of one lane, meet.  Nothing is read out of human-readable text
but the skip reason and the failure message, which are shown, never parsed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..reporting import junit
from ..reporting.junit import case_ident, split_suite, tags_of
from ..reporting.outcomes import OVERLOAD_FIELDS, overload_fields
from ..util import FlContractError

FAILING = ("failed", "error", "xpassed")
XPASS = "[XPASS(strict)]"
RERUN = "fl-contract rerun:"  # a failure message the runner re-ran begins so


@dataclass(frozen=True)
class Row:
    lane: str
    step: str
    key: str  # step/classname::name, the lane left out
    outcome: str  # passed | failed | error | skipped | xfailed | xpassed
    op: str | None = None
    contract: str | None = None
    defect: str | None = None
    seed: int | None = None
    message: str = ""  # the skip reason, xfail reason or failure message, one line
    seconds: float = 0.0
    rerun: str | None = None  # deterministic | intermittent, where the runner re-ran it
    fields: tuple[tuple[str, str], ...] = ()  # the overload suite's (OVERLOAD_FIELDS): overload, status, ...

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


@dataclass(frozen=True)
class LaneReport:
    lane: str
    path: str
    rows: tuple[Row, ...]
    properties: Mapping[str, str] = field(default_factory=dict)  # the first suite's, provenance among them
    # each step's own (its first suite's): what a step's run wrote of itself (the overload scoreboard's provenance)
    step_properties: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def by_key(self) -> dict[str, Row]:
        return {row.key: row for row in self.rows}


def _outcome(case: junit.Case) -> str:
    outcome = case.outcome
    if outcome == "failed" and any(r.message.startswith(XPASS) for r in case.results):
        return "xpassed"
    return outcome


def _message(case: junit.Case) -> str:
    result = next((r for r in case.results if r.kind in junit.RESULT_KINDS), None)
    if result is None:
        return ""
    return junit.one_line(result.message.removeprefix("Skipped: ") or result.type, 300)


def _rerun_label(message: str) -> str | None:
    if not message.startswith(RERUN):
        return None
    if "nondeterministic result" in message:
        return "intermittent"
    return "deterministic" if "deterministic:" in message else "not re-run"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _fields(case: junit.Case, tag: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The overload suite's fields of a case: its own ``<properties>`` as pytest wrote them,
    else its ``fl_cases`` tag (what is left of them once the runner has rewritten the file)."""
    found = overload_fields(case.properties) or overload_fields(
        (f"fl_{name}", tag[name])
        for name in OVERLOAD_FIELDS
        if isinstance(tag.get(name), (str, int)) and not isinstance(tag.get(name), bool)
    )
    return tuple((name, found[name]) for name in OVERLOAD_FIELDS if name in found)


def _untagged(classname: str, name: str, tags: Mapping[str, Any]) -> dict[str, Any]:
    """A report written before ``fl_cases`` (or a case the plugin did not tag): the contract
    is its module (``test_dims`` checks ``dims``, as the contracts tag it), the op the first
    field of its parameter id when that is a registry op."""
    if tags:
        return {}
    from ..registry import ROWS

    module = classname.rsplit(".", 1)[-1]
    first = name.partition("[")[2].split("-", 1)[0]
    return {
        "contract": module.removeprefix("test_") if module.startswith("test_") else None,
        "op": first if first in ROWS.names() else None,
    }


# How bad an outcome is: a case written twice in one report (pytest writes a test that fails
# in call and again in teardown as two cases; a retrying plugin may write each attempt) is
# as good as its worst entry, never its last one.
SEVERITY = ("passed", "skipped", "xfailed", "xpassed", "error", "failed")


def worst(rows: list[Row]) -> Row:
    """The row of a case written more than once: its worst outcome's, the times added."""
    worst = max(rows, key=lambda row: SEVERITY.index(row.outcome) if row.outcome in SEVERITY else len(SEVERITY))
    return worst if len(rows) == 1 else replace(worst, seconds=sum(row.seconds for row in rows))


def rows_of(report: junit.Report, fallback_lane: str) -> list[Row]:
    """One row per case of each step; entries of one case are merged into one (``worst``)."""
    by_key: dict[tuple[str, str], list[Row]] = {}
    for row in _entries(report, fallback_lane):
        by_key.setdefault((row.lane, row.key), []).append(row)
    return [worst(rows) for rows in by_key.values()]


def _entries(report: junit.Report, fallback_lane: str) -> list[Row]:
    rows = []
    for suite in report.suites:
        lane, step = split_suite(suite.name, fallback_lane)
        tags = tags_of(suite)
        for case in suite.cases:
            ident, classname = case_ident(case.classname, case.name, lane, fallback_lane, tags)
            tag = tags.get(ident) or _untagged(classname, case.name, tags)
            message = _message(case)
            seed = tag.get("seed")
            rows.append(
                Row(
                    lane,
                    step,
                    f"{step}/{ident}",
                    _outcome(case),
                    _text(tag.get("op")),
                    _text(tag.get("contract")),
                    _text(tag.get("defect")),
                    seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                    message,
                    case.time,
                    _rerun_label(message),
                    _fields(case, tag),
                )
            )
    return rows


def from_report(report: junit.Report, lane: str, path: str) -> LaneReport:
    """A report held in memory (a step of the run in progress) as the one lane it is of."""
    return LaneReport(
        lane,
        path,
        tuple(row for row in rows_of(report, lane) if row.lane == lane),
        dict(report.suites[0].properties) if report.suites else {},
        _step_properties(report, lane)[lane],
    )


def _step_properties(report: junit.Report, fallback: str) -> dict[str, dict[str, dict[str, str]]]:
    """lane -> step -> the step's first suite's properties."""
    out: dict[str, dict[str, dict[str, str]]] = {fallback: {}}
    for suite in report.suites:
        lane, step = split_suite(suite.name, fallback)
        out.setdefault(lane, {}).setdefault(step, dict(suite.properties))
    return out


def lanes_of(parsed: junit.Report, path: str, fallback: str) -> list[LaneReport]:
    """A parsed report (a lane's, or several lanes' merged) as one LaneReport per lane."""
    by_lane: dict[str, list[Row]] = {}
    props: dict[str, dict[str, str]] = {}
    for row in rows_of(parsed, fallback):
        by_lane.setdefault(row.lane, []).append(row)
    for suite in parsed.suites:
        props.setdefault(split_suite(suite.name, fallback)[0], dict(suite.properties))
    steps = _step_properties(parsed, fallback)
    return [
        LaneReport(name, path, tuple(rows), props.get(name, {}), steps.get(name, {})) for name, rows in by_lane.items()
    ]


def read(path: Path, lane: str | None = None) -> list[LaneReport]:
    """One JUnit file (a LANE.xml, a step's file, a merged report of several lanes) or a
    report directory (its LANE.xml files), as one LaneReport per lane.  Raises
    FlContractError, one line, for anything that is not such a report."""
    if path.is_dir():
        files = sorted(p for p in [*path.glob("*.xml"), *path.glob("*.xml.gz")] if p.is_file())
        if not files:
            raise FlContractError(f"{path}: no JUnit reports (LANE.xml) in this directory")
        return [report for file in files for report in read(file)]
    if not path.is_file():
        raise FlContractError(f"{path}: {'not a regular file' if path.exists() else 'no such report'}")
    try:
        parsed = junit.read(path)
    except (ValueError, OSError) as exc:
        raise FlContractError(f"{path}: not a JUnit report ({junit.one_line(str(exc), 200)})") from None
    if not parsed.suites:
        raise FlContractError(f"{path}: a JUnit report with no test suites")
    return lanes_of(parsed, str(path), lane or path.name.split(".", 1)[0])


def read_one(path: Path) -> LaneReport:
    """A report of one lane (compare's two sides): a file or directory holding several is bad input."""
    reports = read(path)
    if len(reports) != 1:
        raise FlContractError(
            f"{path}: holds {len(reports)} lanes ({', '.join(r.lane for r in reports)}); name one lane's report"
        )
    return reports[0]


def group(rows: Iterable[Row], by: str) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for row in rows:
        out.setdefault(getattr(row, by) or "-", []).append(row)
    return dict(sorted(out.items()))
