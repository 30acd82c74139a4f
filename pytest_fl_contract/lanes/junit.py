"""JUnit reports of a lane: synthesize cases for steps that left none, merge, summarise.

Merging uses junitparser; every step's suite is renamed ``LANE/STEP`` so a lane file has
no duplicate suites, and statistics are recomputed after the merge.  Per-op failures,
known defects and skip reasons come from the ``fl_summary`` suite property the plugin
writes (``outcomes.Summary``); a step run without the plugin is summarised from its cases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from ..outcomes import PROPERTY, Summary


def _one_case(lane: str, step: str, seconds: float, result: Error | Failure | Skipped | None) -> JUnitXml:
    case = TestCase(name=step, classname=f"{lane}.{step}", time=round(seconds, 3))
    if result is not None:
        case.result = [result]
    suite = TestSuite(f"{lane}/{step}")
    suite.add_testcase(case)
    suite.update_statistics()
    xml = JUnitXml()
    xml.add_testsuite(suite)
    return xml


def error_suite(lane: str, step: str, message: str, output_tail: str, seconds: float) -> JUnitXml:
    """A suite with one error case: how a crash, a timeout or a missing report is kept."""
    error = Error(message=message, type_="fl-contract.step")
    error.text = output_tail
    return _one_case(lane, step, seconds, error)


def skipped_suite(lane: str, step: str, message: str) -> JUnitXml:
    """A step that never ran: a skipped case that says why, so the report lists every step."""
    return _one_case(lane, step, 0.0, Skipped(message=message, type_="fl-contract.not-run"))


def command_suite(lane: str, step: str, passed: bool, message: str, output_tail: str, seconds: float) -> JUnitXml:
    """A command step (no pytest) as one case: passed, or failed with its output."""
    if passed:
        return _one_case(lane, step, seconds, None)
    failure = Failure(message=message, type_="fl-contract.command")
    failure.text = output_tail
    return _one_case(lane, step, seconds, failure)


def read(path: Path) -> JUnitXml:
    """Parse a report; raises ValueError with a one-line reason when it is not one."""
    try:
        xml = JUnitXml.fromfile(str(path))
    except Exception as exc:
        raise ValueError(
            f"malformed JUnit XML {path.name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    if isinstance(xml, TestSuite):
        wrapped = JUnitXml()
        wrapped.add_testsuite(xml)
        xml = wrapped
    return xml


def rename_suites(xml: JUnitXml, name: str) -> JUnitXml:
    for suite in xml:
        suite.name = name
    return xml


def merge(parts: Iterable[JUnitXml], name: str) -> JUnitXml:
    merged = JUnitXml(name)
    for part in parts:
        for suite in part:
            merged.add_testsuite(suite)
    merged.update_statistics()
    return merged


@dataclass
class StepCounts:
    name: str
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    seconds: float = 0.0
    summary: Summary = field(default_factory=Summary)

    @property
    def xpassed(self) -> int:
        """Strict xpasses of known defects (the plugin's summary says which failures they are)."""
        return self.summary.outcomes["xpassed"]


def count(xml: JUnitXml, name: str) -> StepCounts:
    """Outcomes of every case of a report (one step, or any JUnit file), and its summary:
    the plugin's ``fl_summary`` property where present, else one made from the cases."""
    counts = StepCounts(name)
    written: list[Summary] = []
    for suite in xml:
        for prop in suite.properties():
            if prop.name == PROPERTY:
                written.append(Summary.from_json(prop.value or ""))
    from_cases = Summary()
    for case in (case for suite in xml for case in suite):
        counts.tests += 1
        counts.seconds += float(case.time or 0)
        results = case.result
        if not results:
            counts.passed += 1
            continue
        result = results[0]
        if isinstance(result, Skipped):
            if (result.type or "").endswith("xfail"):
                counts.xfailed += 1
                from_cases.outcomes["xfailed"] += 1
            else:
                counts.skipped += 1
                from_cases.skips[(result.message or "").removeprefix("Skipped: ") or "(no reason)"] += 1
        elif isinstance(result, Failure):
            counts.failed += 1
        elif isinstance(result, Error):
            counts.errors += 1
    if written:
        counts.summary = written[0]
        for extra in written[1:]:
            counts.summary.merge(extra)
    else:
        counts.summary = from_cases
    return counts


def summary_markdown(title: str, rows: list[tuple[StepCounts, str]]) -> str:
    """rows: (counts, verdict).  A lane engineer reads this at a glance."""
    out = [f"### {title}", "", "| step | verdict | passed | failed | errors | skipped | xfailed | xpassed | seconds |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for c, verdict in rows:
        out.append(f"| {c.name} | {verdict} | {c.passed} | {c.failed - c.xpassed} | {c.errors} | {c.skipped} | "
                   f"{c.xfailed} | {c.xpassed} | {c.seconds:.1f} |")  # fmt: skip
    for c, _ in rows:
        out += c.summary.markdown(c.name)
    return "\n".join(out) + "\n"
