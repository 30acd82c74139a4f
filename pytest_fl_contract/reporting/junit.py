"""JUnit reports of a lane: read any file defensively, write only valid xunit2, summarise.

Reading turns a file into small frozen records (``Report`` > ``Suite`` > ``Case`` >
``Result``) and never trusts it: an unreadable time or count is noted as a problem, not
raised later from deep inside a merge.  Writing builds the XML from those records, so
every file we write holds what the xunit2 schema pytest validates against
(``junit-10.xsd``) allows: no ``skipped`` on ``<testsuites>``, properties only on suites,
times with three decimals, and text from which ANSI escapes are stripped and every
character XML 1.0 cannot carry (NUL, other C0 controls) is written as a visible ``\\xNN``.

Per-op failures, known defects and skip reasons come from the ``fl_summary`` suite
property the plugin writes (``outcomes.Summary``); a step run without the plugin is
summarised from its cases.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from xml.parsers import expat

from .. import files, util
from ..util import md_text, safe_text
from .outcomes import CASES, PROPERTY, Summary

MAX_REPORT_BYTES = 64 * 1024 * 1024  # the largest H200 lane report (17k cases) is 5.6 MB unzipped
MAX_ELEMENTS = 1_000_000  # XML elements one report may hold (that report: ~60k); each costs memory once parsed
READ_CHUNK = 1024 * 1024
TEXT_CAP = 64 * 1024  # characters kept of one failure text / system-out read from a step's own XML
RESULT_KINDS = ("failure", "error", "skipped")
_COUNT_ATTRS = ("tests", "failures", "errors", "skipped")

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with ANSI escapes removed and every character XML 1.0 cannot carry written
    as ``\\xNN`` (``\\uNNNN`` above 0xff): NUL and colour codes never reach the XML."""
    return _NOT_XML.sub(lambda m: _escape_char(m.group()), _ANSI.sub("", text))


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def cap_text(text: str, cap: int) -> str:
    """Head and tail of ``text`` when it is longer than ``cap`` characters, with the cut said."""
    if len(text) <= cap:
        return text
    head = cap // 2
    tail = cap - head
    return f"{text[:head]}\n[... {len(text) - cap} characters cut by fl-contract ...]\n{text[-tail:]}"


def one_line(text: str, limit: int = 500) -> str:
    """A message attribute: ``util.one_line`` of the XML-safe text."""
    return util.one_line(xml_safe(text), limit)


# -- records --------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    kind: str  # failure | error | skipped
    message: str = ""
    type: str = ""
    text: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    classname: str = ""
    time: float = 0.0
    results: tuple[Result, ...] = ()
    system_out: str = ""
    system_err: str = ""
    # what the test recorded (``record_property``): pytest writes it inside the case, read here;
    # never written back (xunit2 has no ``<properties>`` in a case): the plugin keeps what it
    # needs in its suite properties (``fl_cases``)
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def outcome(self) -> str:
        """passed, failed, error, skipped or xfailed: the worst of its results decides.  pytest
        writes a skip (or an xfail) and then the error of its teardown into one case: that case
        errored, it did not skip."""
        kinds = {r.kind for r in self.results}
        if "failure" in kinds:
            return "failed"
        if "error" in kinds:
            return "error"
        skip = next((r for r in self.results if r.kind == "skipped"), None)
        if skip is None:
            return "passed"
        return "xfailed" if skip.type.endswith("xfail") else "skipped"


@dataclass(frozen=True)
class Suite:
    name: str
    cases: tuple[Case, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    time: float | None = None  # as the file said (pytest: wall time of the session)
    timestamp: str = ""
    hostname: str = ""
    declared: Mapping[str, int] = field(default_factory=dict)  # tests/failures/errors/skipped as read
    stray: tuple[Result, ...] = ()  # <error>/<failure> directly under <testsuite>: no case, no verdict


@dataclass(frozen=True)
class Report:
    suites: tuple[Suite, ...] = ()
    declared: Mapping[str, int] = field(default_factory=dict)  # the root's counts, as read
    notes: tuple[str, ...] = ()  # what could not be read as it stood (a time of "abc", ...)

    @property
    def cases(self) -> list[Case]:
        return [case for suite in self.suites for case in suite.cases]


def single_case(lane: str, step: str, seconds: float, result: Result | None) -> Report:
    case = Case(step, f"{lane}.{step}", seconds, (result,) if result else ())
    return Report((Suite(f"{lane}/{step}", (case,)),))


def error_suite(lane: str, step: str, message: str, output: str, seconds: float) -> Report:
    """One error case: how a crash, a timeout, a cancel or a missing report is kept."""
    return single_case(lane, step, seconds, Result("error", message, "fl-contract.step", output))


def skipped_suite(lane: str, step: str, message: str) -> Report:
    """A step that never ran: a skipped case that says why, so the report lists every step."""
    return single_case(lane, step, 0.0, Result("skipped", message, "fl-contract.not-run"))


def command_suite(
    lane: str, step: str, verdict: str, message: str, output: str, seconds: float, note: str = ""
) -> Report:
    """A command step (no pytest) as one case: passed, failed (non-zero exit) or error
    (crash, timeout, cancel: the verdict says error, so the case does too); ``note``, what
    the runner saw beside it (the processes it left and were killed), is its system-out."""
    kind = "error" if verdict == "error" else "failure"
    result = None if verdict == "passed" else Result(kind, message, f"fl-contract.{kind}", output)
    report = single_case(lane, step, seconds, result)
    if not note:
        return report
    case = replace(report.suites[0].cases[0], system_out=note)
    return replace(report, suites=(replace(report.suites[0], cases=(case,)),))


def rename_suites(report: Report, name: str) -> Report:
    return replace(report, suites=tuple(replace(suite, name=name) for suite in report.suites))


def with_case(report: Report, extra: Report) -> Report:
    """``report`` plus the cases of ``extra`` (a crash case added to what pytest wrote)."""
    if not report.suites:
        return replace(report, suites=extra.suites)
    last = report.suites[-1]
    added = replace(last, cases=last.cases + tuple(extra.cases))
    return replace(report, suites=report.suites[:-1] + (added,))


def merge(parts: Iterable[Report]) -> Report:
    return Report(tuple(suite for part in parts for suite in part.suites))


def under_lane(report: Report, lane: str) -> Report:
    """Every case's classname under ``LANE.`` and every suite's name under ``LANE/``, so a
    report merged across lanes still says which lane each case came from.  What ``run``
    writes is there already (``--fl-junit-prefix``) and is kept as it is."""

    def classname(name: str) -> str:
        return name if name == lane or name.startswith(f"{lane}.") else f"{lane}.{name}" if name else lane

    def suite_name(name: str) -> str:
        return name if name == lane or name.startswith(f"{lane}/") else f"{lane}/{name}" if name else lane

    return replace(
        report,
        suites=tuple(
            replace(
                suite,
                name=suite_name(suite.name),
                cases=tuple(replace(case, classname=classname(case.classname)) for case in suite.cases),
            )
            for suite in report.suites
        ),
    )


# -- reading --------------------------------------------------------------------------


def read(path: Path) -> Report:
    """Read a report file; raises ValueError (one line) when it is not JUnit XML, OSError
    when it cannot be read.  Bounded: a file over MAX_REPORT_BYTES is refused unread, a gzip
    one is unzipped chunk by chunk and refused at the same size, so what it costs is the
    cap, never what the archive expands to."""
    data = files.read_bytes(path, MAX_REPORT_BYTES)
    if len(data) > MAX_REPORT_BYTES:
        raise ValueError(f"{path.name}: larger than {MAX_REPORT_BYTES} bytes: refused")
    if data[:2] == b"\x1f\x8b":  # a gzipped report (an archived lane's): bounded as the plain one is
        data = gunzip(data, path.name, MAX_REPORT_BYTES)
    return parse(data, path.name)


def gunzip(data: bytes, name: str, cap: int) -> bytes:
    """``data`` unzipped, refused (ValueError, one line) past ``cap`` bytes: read a chunk at a
    time, so a small archive of zeros never costs more than the cap."""
    import zlib

    out = bytearray()
    unzip = zlib.decompressobj(wbits=47)  # gzip (or zlib) framing
    rest = data
    try:
        while True:
            chunk = unzip.decompress(rest, READ_CHUNK)
            out += chunk
            if len(out) > cap:
                raise ValueError(f"{name}: larger than {cap} bytes unzipped: refused")
            rest = unzip.unconsumed_tail
            if unzip.eof:
                if unzip.unused_data[:2] != b"\x1f\x8b":  # the last member (trailing bytes are ignored)
                    break
                rest, unzip = unzip.unused_data, zlib.decompressobj(wbits=47)
            elif not chunk and not rest:
                raise ValueError(f"{name}: a broken gzip file (it ends before its end-of-stream marker)")
    except zlib.error as exc:
        raise ValueError(f"{name}: a broken gzip file ({one_line(str(exc), 100)})") from None
    return bytes(out)


def _refuse_dtd(data: bytes, name: str) -> None:
    """JUnit has no DTD: a document that declares one (entities, in whatever encoding it is
    written: UTF-16 slips past a byte search) is refused by the parser itself, before any
    entity can expand or replace a case."""
    parser = expat.ParserCreate()

    def refuse(*_: Any) -> None:
        raise ValueError(f"malformed JUnit XML {name}: declares a DTD or entities (refused)")

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise ValueError(f"malformed JUnit XML {name}: ParseError: {one_line(str(exc))}") from None


class _Bounded(ET.TreeBuilder):
    """A tree builder that refuses its MAX_ELEMENTS + 1st element."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name, self.seen = name, 0

    def start(self, tag: Any, attrs: Any) -> ET.Element:
        self.seen += 1
        if self.seen > MAX_ELEMENTS:
            raise ValueError(
                f"{self.name}: more than {MAX_ELEMENTS} XML elements: refused (a lane report has a few per case)"
            )
        return super().start(tag, attrs)


def _tree(data: bytes, name: str) -> ET.Element:
    """The document's tree, refused (ValueError) past MAX_ELEMENTS elements: what a parsed
    report costs grows with its elements, and a few bytes make one."""
    parser = ET.XMLParser(target=_Bounded(name))
    try:
        for at in range(0, len(data), READ_CHUNK):
            parser.feed(data[at : at + READ_CHUNK])
        return parser.close()
    except ET.ParseError as exc:
        raise ValueError(f"malformed JUnit XML {name}: ParseError: {one_line(str(exc))}") from None


def parse(data: bytes, name: str) -> Report:
    """Parse JUnit XML (``<testsuites>`` or one ``<testsuite>``); ValueError when it is not."""
    _refuse_dtd(data, name)
    root = _tree(data, name)
    notes: list[str] = []
    if root.tag == "testsuites":
        elements = list(root.iter("testsuite"))
        declared = _counts(root, "the root", notes)
    elif root.tag == "testsuite":
        elements = list(root.iter("testsuite"))
        declared = {}
    else:
        raise ValueError(f"malformed JUnit XML {name}: root element <{one_line(root.tag, 40)}>, not <testsuites>")
    suites = tuple(_suite(element, notes) for element in elements)
    return Report(suites, declared, tuple(notes))


def parse_text(text: str, name: str = "report") -> Report:
    return parse(text.encode("utf-8"), name)


def _number(value: str | None, what: str, notes: list[str]) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value.replace(",", ""))
    except ValueError:
        notes.append(f"{what}: time {one_line(value, 40)!r} is not a number")
        return None
    if not math.isfinite(number) or number < 0:
        notes.append(f"{what}: time {one_line(value, 40)!r} is not a duration")
        return None
    return number


def _counts(element: ET.Element, what: str, notes: list[str]) -> dict[str, int]:
    out = {}
    for attr in _COUNT_ATTRS:
        value = element.get(attr)
        if value is None:
            continue
        try:
            out[attr] = int(value)
        except ValueError:
            notes.append(f"{what}: {attr}={one_line(value, 40)!r} is not a count")
    return out


def _result(element: ET.Element) -> Result:
    return Result(element.tag, element.get("message") or "", element.get("type") or "", element.text or "")


def _suite(element: ET.Element, notes: list[str]) -> Suite:
    name = element.get("name") or ""
    what = f"suite {one_line(name, 60)!r}"
    cases = []
    stray = []
    properties = []
    nested = False
    for child in element:
        nested |= child.tag == "testsuite"
        if child.tag == "testcase":
            cases.append(_case(child, notes))
        elif child.tag in ("failure", "error"):
            stray.append(_result(child))
        elif child.tag == "properties":
            properties += [(p.get("name") or "", p.get("value") or p.text or "") for p in child.iter("property")]
    return Suite(
        name=name,
        cases=tuple(cases),
        properties=tuple(properties),
        time=_number(element.get("time"), what, notes),
        timestamp=element.get("timestamp") or "",
        hostname=element.get("hostname") or "",
        declared={} if nested else _counts(element, what, notes),  # an outer suite counts its inner ones
        stray=tuple(stray),
    )


def _case(element: ET.Element, notes: list[str]) -> Case:
    name = element.get("name") or ""
    results = tuple(_result(child) for child in element if child.tag in RESULT_KINDS)
    out = "".join(child.text or "" for child in element if child.tag == "system-out")
    err = "".join(child.text or "" for child in element if child.tag == "system-err")
    seconds = _number(element.get("time"), f"case {one_line(name, 60)!r}", notes)
    properties = tuple(
        (p.get("name") or "", p.get("value") or p.text or "")
        for child in element
        if child.tag == "properties"
        for p in child.iter("property")
    )
    return Case(name, element.get("classname") or "", seconds or 0.0, results, out, err, properties)


# -- checking -------------------------------------------------------------------------


def problems(report: Report) -> list[str]:
    """Why a report cannot be trusted as a verdict, one line each (empty: it can): no test
    case at all, counts that disagree with the cases, suite-level errors, unreadable values."""
    found = list(report.notes)
    cases = report.cases
    if not cases:
        found.append("no test cases: a report that ran nothing is not a pass")
    for suite in report.suites:
        counted = _tally(suite.cases)
        for attr, value in suite.declared.items():
            low, high = counted[attr]
            if not low <= value <= high:
                found.append(
                    f"suite {one_line(suite.name, 60)!r} says {attr}={value} but its cases give {_range(low, high)}"
                )
        for stray in suite.stray:
            found.append(
                f"suite {one_line(suite.name, 60)!r} has a suite-level <{stray.kind}>: {one_line(stray.message, 120)}"
            )
    total = _tally(cases)
    for attr, value in report.declared.items():
        low, high = total[attr]
        if attr != "skipped" and not low <= value <= high:
            found.append(f"the root says {attr}={value} but the cases give {_range(low, high)}")
    return found


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}..{high}"


def _tally(cases: Iterable[Case]) -> dict[str, tuple[int, int]]:
    """(lowest, highest) count each attribute may honestly have: counted by case (what we
    write) up to counted by result element (what pytest writes: it counts reports, so a case
    that skipped and then errored in teardown is one skip and one error, a test that fails in
    call and in teardown may be two cases, and ``tests`` may pass the cases' number)."""
    cases = list(cases)
    outcomes = Counter(case.outcome for case in cases)
    elements = Counter(r.kind for case in cases for r in case.results)
    unique = len({(case.classname, case.name) for case in cases})
    by_case = {
        "failures": outcomes["failed"],
        "errors": outcomes["error"],
        "skipped": outcomes["skipped"] + outcomes["xfailed"],
    }
    by_element = {"failures": elements["failure"], "errors": elements["error"], "skipped": elements["skipped"]}
    results = sum(max(len([r for r in case.results if r.kind in RESULT_KINDS]), 1) for case in cases)
    return {
        "tests": (unique, max(len(cases), results)),
        **{k: (min(v, by_element[k]), max(v, by_element[k])) for k, v in by_case.items()},
    }


# -- writing --------------------------------------------------------------------------


def _time(seconds: float | None) -> str:
    return f"{max(seconds or 0.0, 0.0):.3f}"


def _text(text: str, cap: int) -> str:
    return cap_text(xml_safe(text), cap)


def _suite_element(suite: Suite, cap: int) -> ET.Element:
    outcomes = Counter(case.outcome for case in suite.cases)
    seconds = suite.time if suite.time is not None else sum(case.time for case in suite.cases)
    attrs = {
        "name": one_line(suite.name, 200),
        "tests": str(len(suite.cases)),
        "failures": str(outcomes["failed"]),
        "errors": str(outcomes["error"]),
        "skipped": str(outcomes["skipped"] + outcomes["xfailed"]),
        "time": _time(seconds),
    }
    if suite.timestamp:
        attrs["timestamp"] = one_line(suite.timestamp, 64)
    if suite.hostname:
        attrs["hostname"] = one_line(suite.hostname, 200)
    element = ET.Element("testsuite", attrs)
    if suite.properties:
        props = ET.SubElement(element, "properties")
        for name, value in suite.properties:
            ET.SubElement(props, "property", {"name": xml_safe(name), "value": xml_safe(value)})
    for case in suite.cases:
        node = ET.SubElement(
            element,
            "testcase",
            {"classname": one_line(case.classname, 500), "name": one_line(case.name, 2000), "time": _time(case.time)},
        )
        for result in case.results:
            child = ET.SubElement(
                node, result.kind, {"message": one_line(result.message), "type": one_line(result.type)}
            )
            if result.text:
                child.text = _text(result.text, cap)
        for tag, text in (("system-out", case.system_out), ("system-err", case.system_err)):
            if text:
                ET.SubElement(node, tag).text = _text(text, cap)
    return element


def to_bytes(
    report: Report, name: str | None = None, cap: int = TEXT_CAP, caps: Mapping[str, int] | None = None
) -> bytes:
    """The report as xunit2 that ``junit-10.xsd`` accepts; ``<testsuites>`` carries name,
    tests, failures, errors and time, never ``skipped`` (the schema has no such attribute).
    ``caps``: per suite name, the characters each text keeps (a step's ``output_cap``)."""
    suites = [_suite_element(suite, (caps or {}).get(suite.name, cap)) for suite in report.suites]
    attrs = {"name": one_line(name, 200)} if name else {}
    attrs.update(
        tests=str(sum(int(s.get("tests", "0")) for s in suites)),
        failures=str(sum(int(s.get("failures", "0")) for s in suites)),
        errors=str(sum(int(s.get("errors", "0")) for s in suites)),
        time=_time(sum(float(s.get("time", "0")) for s in suites)),
    )
    root = ET.Element("testsuites", attrs)
    root.extend(suites)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write(
    report: Report, path: Path, name: str | None = None, cap: int = TEXT_CAP, caps: Mapping[str, int] | None = None
) -> None:
    """Atomically: the file holds the whole report or what it held before (a full disk)."""
    files.write_atomic(path, to_bytes(report, name, cap, caps))


# -- counting and the summary ---------------------------------------------------------


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
    problems: list[str] = field(default_factory=list)  # e.g. a malformed fl_summary property
    xpass_cases: int = 0  # failures pytest wrote as "[XPASS(strict)]"
    failed_cases: list[tuple[str, str | None]] = field(default_factory=list)  # (name, op tag) of each real failure

    @property
    def xpassed(self) -> int:
        """Strict xpasses of known defects (failures in JUnit), read from the cases (pytest's
        "[XPASS(strict)]" message), never from the summary the step wrote of itself."""
        return self.xpass_cases


def _as_report(xml: Any) -> Report:
    """A Report, also from a junitparser object (what other callers may hold)."""
    if isinstance(xml, Report):
        return xml
    return parse(xml.tostring() if hasattr(xml, "tostring") else bytes(xml), "report")


def count(xml: Report | Any, name: str) -> StepCounts:
    """Outcomes of every case of a report (one step, or any JUnit file), and its summary:
    the plugin's ``fl_summary`` property where present and readable, else one made from
    the cases (a malformed property is a problem, not a crash)."""
    report = _as_report(xml)
    counts = StepCounts(name)
    written: list[Summary] = []
    for suite in report.suites:
        for prop, value in suite.properties:
            if prop == PROPERTY:
                try:
                    written.append(Summary.from_json(value))
                except ValueError as exc:
                    counts.problems.append(f"suite {one_line(suite.name, 60)!r}: {one_line(str(exc), 200)}")
    from_cases = Summary()
    ops = _op_tags(report)
    for case, op in zip(report.cases, ops):
        counts.tests += 1
        counts.seconds += case.time
        outcome = case.outcome
        if outcome == "passed":
            counts.passed += 1
        elif outcome == "xfailed":
            counts.xfailed += 1
            from_cases.outcomes["xfailed"] += 1
        elif outcome == "skipped":
            counts.skipped += 1
            reason = next(r.message for r in case.results if r.kind == "skipped")
            from_cases.skips[reason.removeprefix("Skipped: ") or "(no reason)"] += 1
        elif outcome == "failed":
            counts.failed += 1
            if any(r.message.startswith("[XPASS(strict)]") for r in case.results):
                counts.xpass_cases += 1
            else:
                counts.failed_cases.append((case.name, op))
        else:
            counts.errors += 1
    if written:
        counts.summary = written[0]
        for extra in written[1:]:
            counts.summary.merge(extra)
    else:
        counts.summary = from_cases
    return counts


# A case's identity across reports (the results' rows and the lane's op tags share it)


def tags_of(suite: Suite) -> dict[str, dict[str, Any]]:
    """The plugin's per-case tags (``fl_cases``) of a suite; its text made printable (a JSON
    escape can carry a lone surrogate no output encodes); {} where it is unreadable."""
    for name, value in suite.properties:
        if name == CASES:
            try:
                data = safe_text(json.loads(value))
            except (ValueError, RecursionError):
                return {}
            return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
    return {}


def split_suite(name: str, fallback_lane: str) -> tuple[str, str]:
    lane, sep, step = name.partition("/")
    return (lane, step) if sep else (fallback_lane, name)


def case_ident(classname: str, name: str, lane: str, fallback_lane: str, tags: dict[str, Any]) -> tuple[str, str]:
    """(the case's key within its step, its classname less the lane prefix): the one rule
    ``rows_of`` and a re-run's relabelling share."""
    for prefix in (f"{lane}.", f"{fallback_lane}."):
        if classname.startswith(prefix):
            classname = classname[len(prefix) :]
            break
    # a report pytest wrote under another prefix (--fl-junit-prefix, the platform by default)
    parts = classname.split(".")
    found = next(
        (f"{'.'.join(parts[i:])}::{name}" for i in range(len(parts)) if f"{'.'.join(parts[i:])}::{name}" in tags), None
    )
    return found or f"{classname}::{name}", classname


def case_keys(suite: Suite, fallback_lane: str) -> list[str]:
    """Each case's key within its step (``Row.key`` after the step), in the suite's order."""
    lane, _ = split_suite(suite.name, fallback_lane)
    tags = tags_of(suite)
    return [case_ident(case.classname, case.name, lane, fallback_lane, tags)[0] for case in suite.cases]


def _op_tags(report: Report) -> list[str | None]:
    """Each case's op as the plugin tagged it (``fl_cases``), None where it did not."""
    out: list[str | None] = []
    for suite in report.suites:
        tags = tags_of(suite)
        for key in case_keys(suite, ""):
            op = tags.get(key, {}).get("op")
            out.append(op if isinstance(op, str) and op else None)
    return out


def summary_markdown(title: str, rows: list[tuple[StepCounts, str]]) -> str:
    """rows: (counts, verdict).  A lane engineer reads this at a glance."""
    out = [
        f"### {title}",
        "",
        "| step | verdict | passed | failed | errors | skipped | xfailed | xpassed | seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c, verdict in rows:
        out.append(
            f"| {_cell(c.name)} | {_cell(verdict)} | {c.passed} | {c.failed - c.xpassed} | {c.errors} | "
            f"{c.skipped} | {c.xfailed} | {c.xpassed} | {c.seconds:.1f} |"
        )
    for c, _ in rows:
        out += c.summary.markdown(c.name)
        out += [f"- {_cell(c.name)}: {_cell(problem)}" for problem in c.problems]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    """Text that stays inside one Markdown table cell, inert (``text.md_text``)."""
    return md_text(xml_safe(text), 300)
