"""``fl-contract compare BASELINE CURRENT``: what changed between two reports of a lane (or of
two lanes: the no-workaround lane against the workaround lane names the contracts the
defect breaks), in deqp-runner's terms - new failures, fixed, still failing, known defects
that now pass, new skips with their reasons, cases that disappeared - grouped by op,
contract and defect.

What holds (docs/verdicts.md): a comparison rests on the cases that passed in both runs;
with none, it shows nothing and fails, whatever else it finds.  A regression is a new
failure, a case that disappeared, a failure that is now skipped or xfailed (hidden, not
shown fixed) and a case that now xfails where it passed or skipped: exit 1.  Two runs fail
the same cases (``--same-failures``, a lane's ``compare:`` step) when every case fails
alike in both - a plain failure and a known defect's xfail are not alike - and none of the
reference's cases is missing from the other.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..util import FlContractError, md_code, md_text
from .cases import FAILING, LaneReport, Row, worst

KINDS = (
    "new_failures",
    "fixed",
    "still_failing",
    "xpassed",
    "hidden",
    "new_xfails",
    "new_skips",
    "disappeared",
    "new_cases",
)
TITLES = {
    "new_failures": "new failures",
    "fixed": "fixed",
    "still_failing": "still failing",
    "xpassed": "known defects that now pass (strict xpass)",
    "hidden": "failures now skipped or xfailed (not shown fixed)",
    "new_xfails": "cases that now xfail",
    "new_skips": "new skips",
    "disappeared": "cases that disappeared",
    "new_cases": "new cases",
}
REGRESSIONS = ("new_failures", "disappeared", "hidden", "new_xfails")


def fail_class(outcome: str) -> str:
    """What an outcome says of a case for "the same failures": fails (failed, error, strict
    xpass), known (a known defect's xfail), ok (passed, skipped), absent."""
    if outcome in FAILING:
        return "fails"
    return {"xfailed": "known", "absent": "absent"}.get(outcome, "ok")


@dataclass(frozen=True)
class Change:
    kind: str
    key: str
    op: str | None
    contract: str | None
    defect: str | None
    before: str  # the baseline's outcome, or "absent"
    after: str
    message: str  # the current side's (the baseline's for a case that disappeared)
    rerun: str | None = None


@dataclass(frozen=True)
class Comparison:
    baseline: str
    current: str
    changes: tuple[Change, ...]
    common: int  # cases in both
    passed_in_both: int = 0  # cases both sides ran and passed: what agreement rests on

    def of(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def differs(self) -> list[Change]:
        """Cases the two sides do not fail alike (``--same-failures``, a compare step): one
        fails or xfails a case the other does not, or fails it the other way, or lost it."""
        return [
            c
            for c in self.changes
            if c.kind == "disappeared"
            or (
                fail_class(c.before) != fail_class(c.after)
                and not (c.before == "absent" and fail_class(c.after) == "ok")
            )
        ]

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind in REGRESSIONS]

    @property
    def proves_nothing(self) -> bool:
        """No case passed in both runs: neither agreement nor "no regression" rests on anything."""
        return self.passed_in_both == 0

    def holds(self, same_failures: bool) -> bool:
        """The comparison's verdict: something passed in both, and the two runs fail the same
        cases (``same_failures``) or the current one has no regression."""
        return not self.proves_nothing and not (self.differs if same_failures else self.regressions)

    def counts(self) -> dict[str, int]:
        seen = Counter(c.kind for c in self.changes)
        return {kind: seen[kind] for kind in KINDS}

    def contracts(self, kind: str) -> set[str]:
        return {c.contract for c in self.of(kind) if c.contract}


def _kind(before: Row | None, after: Row | None) -> str | None:
    """The change of one case; None where nothing a reader needs changed (passed -> passed,
    skipped -> passed, xfailed -> xfailed).  A failure goes away only by passing: skipped or
    xfailed it is hidden; a case that passed or skipped and now xfails is a new xfail."""
    if after is None:
        return "disappeared"
    if after.outcome == "xpassed":
        return "xpassed" if before is None or before.outcome != "xpassed" else "still_failing"
    if before is None:
        return "new_failures" if after.failing else "new_cases"
    if after.failing:
        return "still_failing" if before.failing else "new_failures"
    was_failing = before.failing or before.outcome == "xfailed"
    if was_failing and after.outcome == "passed":
        return "fixed"
    if (
        before.failing
        and after.outcome in ("skipped", "xfailed")
        or before.outcome == "xfailed"
        and after.outcome == "skipped"
    ):
        return "hidden"
    if after.outcome == "xfailed" and before.outcome in ("passed", "skipped"):
        return "new_xfails"
    if after.outcome == "skipped" and before.outcome != "skipped":
        return "new_skips"
    return None


def _keyed(report: LaneReport, by_case: bool) -> dict[str, Row]:
    """Rows by key; a key met twice (two steps' rows keyed by case) keeps its worst row."""
    grouped: dict[str, list[Row]] = {}
    for row in report.rows:
        grouped.setdefault(row.key.partition("/")[2] if by_case else row.key, []).append(row)
    return {key: worst(rows) for key, rows in grouped.items()}


def compare(baseline: LaneReport, current: LaneReport) -> Comparison:
    """Case by case; two reports of one step each (two steps of a lane that ran one suite
    under different flags) meet whatever their steps are called."""
    steps = ({row.step for row in baseline.rows}, {row.step for row in current.rows})
    by_case = len(steps[0]) == 1 and len(steps[1]) == 1 and steps[0] != steps[1]
    before, after = _keyed(baseline, by_case), _keyed(current, by_case)
    common = set(before) & set(after)
    if not common:
        raise FlContractError(
            f"{current.path} and {baseline.path} share no case: reports of different suites "
            f"({len(after)} and {len(before)} cases)"
        )
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        kind = _kind(old, new)
        if kind is None:
            continue
        shown = new or old
        assert shown is not None
        changes.append(
            Change(
                kind,
                key,
                shown.op,
                shown.contract,
                shown.defect or (old.defect if old else None),
                old.outcome if old else "absent",
                new.outcome if new else "absent",
                shown.message,
                new.rerun if new else None,
            )
        )
    both = sum(1 for key in common if before[key].outcome == "passed" and after[key].outcome == "passed")
    return Comparison(
        f"{baseline.lane} ({baseline.path})", f"{current.lane} ({current.path})", tuple(changes), len(common), both
    )


def _groups(changes: Iterable[Change]) -> str:
    by_op = Counter(c.op or "-" for c in changes)
    return ", ".join(f"{op} {n}" for op, n in sorted(by_op.items()))


def markdown(result: Comparison, limit: int = 40) -> str:
    counts = result.counts()
    verdict = f"{len(result.regressions)} regression(s)" if result.regressions else "no regression"
    if result.proves_nothing:
        verdict += ", and no case passed in both: the comparison shows nothing held"
    out = [
        f"### fl-contract compare: {md_text(result.current)} against {md_text(result.baseline)}: {verdict}",
        "",
        f"{result.common} cases in both, {result.passed_in_both} passed in both. "
        + ", ".join(f"{TITLES[k]}: {counts[k]}" for k in KINDS),
        "",
    ]
    for kind in KINDS:
        changes = result.of(kind)
        if not changes or kind == "new_cases":
            continue
        out += [f"**{TITLES[kind]}** ({len(changes)}; by op: {md_text(_groups(changes))})", ""]
        by_contract: dict[tuple[str, str], list[Change]] = {}
        for change in changes:
            by_contract.setdefault((change.op or "-", change.contract or "-"), []).append(change)
        out += ["| op | contract | cases | defect | example | outcome |", "|---|---|---:|---|---|---|"]
        for (op, contract), group in sorted(by_contract.items())[:limit]:
            first = group[0]
            defects = sorted({c.defect for c in group if c.defect})
            label = f" ({first.rerun})" if first.rerun else ""
            out.append(
                f"| {md_code(op)} | {md_text(contract)} | {len(group)} | "
                f"{', '.join(md_code(d) for d in defects) or '-'} | {md_code(first.key)} | "
                f"{first.before} -> {first.after}{label} |"
            )
        if len(by_contract) > limit:
            out.append(f"| ... | {len(by_contract) - limit} more groups | | | | |")
        out.append("")
    return "\n".join(out) + "\n"


def to_json(result: Comparison) -> str:
    return json.dumps(
        {
            "baseline": result.baseline,
            "current": result.current,
            "common": result.common,
            "counts": result.counts(),
            "passed_in_both": result.passed_in_both,
            "regressions": len(result.regressions),
            "differs": len(result.differs),
            "changes": [c.__dict__ for c in result.changes],
        },
        indent=1,
        sort_keys=True,
    )
