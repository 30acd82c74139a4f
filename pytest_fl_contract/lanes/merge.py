"""``fl-contract merge``: every lane's ``LANE.xml`` back into one report, each lane's verdicts
read again from its cases (``verdict``), lane in classname, so the one check a workflow
requires is red exactly when a lane did not get its verdict, left no report or was lost.

Only a current report is a result: a lane whose run holds its lock is still running (what
is there is the last run's, or none: ``run`` removes its last report before it starts),
and the merged report is never written where it would be read back as a lane's."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files
from ..config import safeyaml
from ..reporting import junit
from ..util import FlContractError
from . import verdict
from .manifest import NAME_RE, NAME_RULE
from .runner import lane_running

VERDICTS = {0: "ok", 1: "FAIL", 4: "SKIPPED (an input it needs was not set)"}  # a lane job's exit status


@dataclass(frozen=True)
class Merged:
    report: junit.Report
    rows: list[tuple[junit.StepCounts, str]]
    failures: list[str]  # one line per lane that has no report, an untrusted one, or a failed run


def _exit_status(directory: Path, lane: str) -> int | None:
    path = directory / f"{lane}.exit"
    try:
        text = files.read_bytes(path, 64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if re.fullmatch(r"\d{1,3}", text) else -1


def _verdict(status: int | None) -> str:
    if status is None:
        return "no exit status recorded"
    if status < 0:
        return "FAIL (unreadable exit status)"
    if status > 128:
        return f"CANCELLED (exit {status})"
    return f"{VERDICTS.get(status, 'FAIL')} (exit {status})"


def check_output(directory: Path, output: Path) -> None:
    """Refuse an output the merge would read back as a lane's report: ``NAME.xml`` in the
    reports directory (a lane's own report overwritten, and left out of the merge that
    overwrote it), or any file standing where one is."""
    target = Path(os.path.realpath(output))
    if target.parent == Path(os.path.realpath(directory)) and target.suffix == ".xml" and NAME_RE.match(target.stem):
        raise FlContractError(
            f"--output {safeyaml.shown(output)}: in --reports {safeyaml.shown(directory)} it is (or "
            f"would be read as) the report of lane {target.stem}; write the merged report outside "
            "--reports"
        )


def lane_names(directory: Path, lanes: str | None, output: Path | None = None) -> list[str]:
    """``--lanes a,b`` (the matrix's lanes: every one must have reported), else each
    ``LANE.xml`` in the directory."""
    if lanes is not None:
        names = [name.strip() for name in lanes.replace(" ", ",").split(",") if name.strip()]
        bad = [name for name in names if not NAME_RE.match(name)]
        if bad:
            raise FlContractError(f"--lanes: {bad[0]!r} is not a lane name ({NAME_RULE})")
        if not names:
            raise FlContractError("--lanes names no lane")
        return list(dict.fromkeys(names))
    if not directory.is_dir():
        raise FlContractError(f"--reports {safeyaml.shown(directory)}: not a directory")
    skip = output.resolve() if output is not None else None
    names = sorted(
        p.stem for p in directory.glob("*.xml") if p.is_file() and NAME_RE.match(p.stem) and p.resolve() != skip
    )
    if not names:
        raise FlContractError(f"no lane reports (LANE.xml) in {safeyaml.shown(directory)}")
    return names


def lane_problems(report: junit.Report) -> list[str]:
    """Why a lane's report is not a lane that got its verdicts, step by step, from its cases
    (``verdict``: the rules the runner applied) - never from an exit status alone.  A step
    is read with the expectation the runner recorded for it (``fl_step``); a report with no
    such record (not written by ``run``) is read as steps that must pass."""
    groups: dict[str, list[junit.Suite]] = {}
    records: dict[str, dict[str, Any]] = {}
    for suite in report.suites:
        record = next(
            (
                r
                for name, value in suite.properties
                if name == verdict.STEP_PROPERTY
                for r in [verdict.read_record(value)]
                if r
            ),
            None,
        )
        step = record["step"] if record else suite.name
        groups.setdefault(step, []).append(suite)
        if record:
            records.setdefault(step, record)
    problems = []
    for step, suites in groups.items():
        part = junit.Report(tuple(suites))
        record = records.get(step)
        expect = record["expect"] if record else "pass"
        state = verdict.from_cases(part)
        catch = record.get("catch") if record else None
        catch = tuple(c for c in catch if isinstance(c, str)) if isinstance(catch, list) else ()
        wanted = verdict.expectation(expect, state, junit.count(part, step), catch)
        if not wanted.ok and not (record and record.get("allow_failure") is True):
            problems.append(
                f"step {step}: {state}" + (f" (expected to fail: {wanted.note})" if expect == "fail" else "")
            )
        elif record and record.get("ok") is not wanted.ok and not record.get("allow_failure"):
            problems.append(
                f"step {step}: recorded as {'ok' if record.get('ok') else 'failed'}, but its cases say "
                f"{'ok' if wanted.ok else 'not'}"
            )
    return problems


def merge(directory: Path, lanes: list[str]) -> Merged:
    """Every lane's report under its lane; a lane whose report is missing or cannot be
    trusted still gets an error case saying so, so the merged report lists every lane.
    A lane fails the merge when its report says a step did not get its verdict (read from
    the cases, whatever ``LANE.exit`` says) or when its job's exit status is non-zero."""
    parts: list[junit.Report] = []
    rows: list[tuple[junit.StepCounts, str]] = []
    failures: list[str] = []
    for lane in lanes:
        path = directory / f"{lane}.xml"
        status = _exit_status(directory, lane)
        trouble = None
        report = None
        if lane_running(directory, lane):
            trouble = (
                f"lane {lane} is still running into {safeyaml.shown(directory)}: its report is not this run's "
                "until the run ends"
            )
        elif not path.is_file():
            trouble = (
                f"no report {path.name}: its job uploaded no reports/ (cancelled, timed out, or its runner was lost)"
            )
        else:
            try:
                report = junit.read(path)
            except (OSError, ValueError) as exc:
                trouble = junit.one_line(getattr(exc, "strerror", None) or str(exc), 300)
            else:
                found = junit.problems(report)
                trouble = f"{path.name} cannot be trusted: {found[0]}" if found else None
        steps = lane_problems(report) if report is not None and not trouble else []
        report = junit.under_lane(report, lane) if report is not None else junit.Report()
        if trouble:
            report = junit.merge([report, junit.error_suite(lane, "report", trouble, "", 0.0)])
            failures.append(f"lane {lane}: {trouble}")
        failures += [f"lane {lane}: {problem}" for problem in steps]
        if status is not None and status != 0:
            failures.append(f"lane {lane}: fl-contract run {_verdict(status)}")
        parts.append(report)
        if trouble:
            shown = f"FAIL: {trouble}"
        elif steps:
            shown = f"FAIL: {steps[0]}" + (f" (and {len(steps) - 1} more)" if len(steps) > 1 else "")
        elif status not in (None, 0):
            shown = _verdict(status)
        else:
            shown = "ok" + (" (exit 0)" if status == 0 else " (verdicts from its report)")
        rows.append((junit.count(report, lane), shown))
    return Merged(junit.merge(parts), rows, failures)
