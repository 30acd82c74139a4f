"""A step's verdict from what its process did and what its JUnit report holds: pure.

The runner and ``merge`` decide with these same functions, so a lane job's colour and the
merged report cannot disagree.  An exit status alone proves nothing: a conftest can set
``session.exitstatus``, a typo exits 127, a segfault under ``bash -c`` exits 139.  So a
pytest step's exit must agree with its report, and a step that exists to show a defect is
caught (``expect: fail``) holds only when its report has at least one failed case (a
strict xpass - a known defect gone - is not one), no errored case and no crash, timeout or
cancel: the summary names what failed.

Everything here is read from the cases, never from what a step writes of itself (its
``fl_summary``, its exit status): a step passes only when some case passed (a run that
skipped everything ran nothing), and an op named in ``catch`` is caught only by a failed
case of its own (docs/verdicts.md).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..reporting import junit
from ..util import safe_text

STEP_PROPERTY = "fl_step"  # on each step's suites in LANE.xml: the runner's record of the step
NOT_RUN_TYPE = "fl-contract.not-run"


@dataclass(frozen=True)
class Expectation:
    ok: bool  # the verdict the lane wanted (allow_failure not applied)
    note: str  # "defect caught: ...", "NOT caught: ...", or ""


def ran_nothing(counts: junit.StepCounts) -> str | None:
    """Why a report that failed nothing still shows nothing held: no case passed (every one
    skipped, or only known defects xfailed), or None when some case passed."""
    if counts.passed or counts.failed or counts.errors:
        return None
    return (
        f"no case passed ({counts.skipped} skipped, {counts.xfailed} xfailed of {counts.tests}): a run that "
        "ran nothing is not a pass"
    )


def pytest_verdict(code: int, counts: junit.StepCounts) -> tuple[str, str]:
    """A pytest step that exited 0 or 1: its verdict, if its report agrees with the exit and
    shows something held (``ran_nothing``)."""
    failed, errors = counts.failed, counts.errors
    if code == 0 and (failed or errors):
        return "error", (
            f"exit 0, but its JUnit report holds {failed} failed and {errors} errored case(s): the "
            "exit status was changed (a conftest or plugin) and cannot be trusted"
        )
    if code == 1 and not (failed or errors):
        return "error", (
            f"exit 1, but none of the {counts.tests} case(s) in its JUnit report failed: the exit "
            "status was changed (a conftest or plugin) and cannot be trusted"
        )
    nothing = ran_nothing(counts)
    if nothing:
        return "error", nothing
    return ("passed" if code == 0 else "failed"), f"exit {code}"


def command_verdict(code: int) -> tuple[str, str]:
    if code == 0:
        return "passed", "exit 0"
    if code in (126, 127):
        return "error", f"exit {code}: the command {'is not executable' if code == 126 else 'was not found'}"
    return "failed", f"exit {code}"


def names_op(name: str, op: str) -> bool:
    """Whether a case's name names ``op`` as a word of its own (``test_dims[sum-2x3-d0]``,
    ``test_backward[softmax_backward-...]``; never ``cumsum`` for sum)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(op)}(?![A-Za-z0-9])", name) is not None


def failed_ops(counts: junit.StepCounts, ops: tuple[str, ...] = ()) -> Counter:
    """Failed cases by op, read from the cases: a case counts for an op when its own name
    names the op and the plugin's tag, where there is one, agrees - not from the summary a
    step writes of itself, which a conftest can rewrite.  ``ops``: the ops to look for (a
    ``catch``); without them each failure counts for its tagged op, as its name bears out."""
    found: Counter = Counter()
    for name, tag in counts.failed_cases:
        wanted = ops or ((tag,) if tag else ())
        for op in wanted:
            if names_op(name, op) and tag in (None, op):
                found[op] += 1
    return found


def failing(counts: junit.StepCounts) -> str:
    """What failed, for a lane engineer: by op where the cases say, else by case count."""
    by_op = sorted(failed_ops(counts).items(), key=lambda t: (-t[1], t[0]))
    real = counts.failed - counts.xpassed
    if by_op:
        return f"{real} failed ({', '.join(f'{op} {n}' for op, n in by_op[:8])}{', ...' if len(by_op) > 8 else ''})"
    return f"{real} failed"


def expectation(expect: str, verdict: str, counts: junit.StepCounts, catch: tuple[str, ...] = ()) -> Expectation:
    """Did the step get the verdict it exists for?  ``catch``: ops each of which must fail a
    contract (a defect caught for one op and missed for another is not caught)."""
    if expect == "pass":
        return Expectation(verdict == "passed", "")
    if verdict != "failed":
        return Expectation(False, f"NOT caught: the step {'passed' if verdict == 'passed' else verdict}")
    if counts.errors:
        return Expectation(
            False,
            f"NOT caught: {counts.errors} case(s) errored - a broken environment fails "
            "that way too, a caught defect does not",
        )
    if counts.failed - counts.xpassed < 1:
        return Expectation(False, "NOT caught: only strict xpasses failed (known defects that no longer show)")
    caught = failed_ops(counts, catch)
    missed = [op for op in catch if not caught[op]]
    if missed:
        return Expectation(
            False, f"NOT caught for {', '.join(missed)} (no contract of theirs failed): {failing(counts)}"
        )
    return Expectation(True, f"defect caught: {failing(counts)}")


def from_cases(report: junit.Report) -> str:
    """A step's verdict read back from its cases alone (``merge``): a runner's crash,
    timeout or missing report is an error case, a step never started a not-run skip, and
    one in which no case passed or failed ran nothing (``ran_nothing``): an error."""
    outcomes = [case.outcome for case in report.cases]
    if any(r.type == NOT_RUN_TYPE for case in report.cases for r in case.results):
        return "not run"
    if not outcomes or "error" in outcomes:
        return "error"
    if "failed" in outcomes:
        return "failed"
    return "passed" if "passed" in outcomes else "error"


def record(
    step: str,
    expect: str,
    allow_failure: bool,
    verdict: str,
    ok: bool,
    notes: tuple[str, ...] = (),
    catch: tuple[str, ...] = (),
) -> tuple[str, str]:
    """The runner's record of a step, a suite property: its expectation, its verdict, and
    what the runner saw beside it (processes it killed, a log it could not keep)."""
    return STEP_PROPERTY, json.dumps(
        {
            "step": step,
            "expect": expect,
            "allow_failure": allow_failure,
            "verdict": verdict,
            "ok": ok,
            "notes": list(notes),
            "catch": list(catch),
        },
        sort_keys=True,
    )


def read_record(value: str) -> dict[str, Any] | None:
    try:
        data = safe_text(json.loads(value))
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("expect") not in ("pass", "fail")
        or not isinstance(data.get("step"), str)
    ):
        return None
    return data
