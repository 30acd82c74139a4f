"""Run a lane's steps as subprocesses and turn every outcome into JUnit.

Nothing is lost: a step that crashes (exit by signal), times out, or leaves no or
malformed XML still becomes an error case carrying the tail of its output.  All steps
run by default, even after a failure; the exit code is 0 only when every step whose
failure is not allowed got its expected verdict.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, TextIO

from . import junit
from .manifest import Lane, Step

TAIL_LINES = 60


@dataclass(frozen=True)
class StepResult:
    step: Step
    verdict: str  # passed | failed | error
    ok: bool  # the verdict the lane wanted (expect/allow_failure applied)
    detail: str  # "exit 1", "-11 SIGSEGV", "timed out after 30s", "no JUnit report", ...
    seconds: float
    report: Path


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"{code} {signal.Signals(-code).name}"
        except ValueError:
            return f"{code} (signal)"
    return f"exit {code}"


def step_argv(lane: Lane, step: Step, report: Path) -> list[str] | str:
    if step.kind == "command":
        return step.args if isinstance(step.args, str) else list(step.args)
    lane_args = ["--platform", lane.platform, "--fl-junit-prefix", lane.name, f"--junitxml={report}",
                 *lane.pytest_args, *step.args]  # fmt: skip
    if step.suites:
        from ..suites import pytest_argv

        return pytest_argv(step.suites, lane_args)
    return [sys.executable, "-m", "pytest", "-p", "fl_contract", *lane_args]


def _run(
    argv: list[str] | str, shell: bool, env: dict[str, str], timeout: float, log: Path
) -> tuple[int | None, str, float]:
    """Returns (exit code or None on timeout, output tail, seconds); output also goes to ``log``."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    start = time.monotonic()
    with log.open("w", encoding="utf-8", errors="replace") as sink:
        try:
            proc = subprocess.Popen(argv, shell=shell, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", start_new_session=True)  # fmt: skip
        except OSError as exc:
            return 127, f"cannot start: {exc}", time.monotonic() - start
        deadline = start + timeout
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        timed_out = False
        while True:
            line = proc.stdout.readline()
            if line:
                sink.write(line)
                tail.append(line.rstrip("\n"))
                continue
            if proc.poll() is not None:
                rest = proc.stdout.read() or ""
                sink.write(rest)
                tail.extend(rest.splitlines())
                break
            if time.monotonic() > deadline:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.05)
    return (None if timed_out else proc.returncode), "\n".join(tail), time.monotonic() - start


def run_step(lane: Lane, step: Step, reports: Path, progress: TextIO) -> StepResult:
    lane_dir = reports / lane.name
    lane_dir.mkdir(parents=True, exist_ok=True)
    report = lane_dir / f"{step.name}.xml"
    report.unlink(missing_ok=True)
    env = {**os.environ, **lane.env, **step.env}
    print(f"[{lane.name}] {step.name}: start ({step.kind}, timeout {step.timeout:g}s)", file=progress, flush=True)
    code, tail, seconds = _run(
        step_argv(lane, step, report), step.shell, env, step.timeout, lane_dir / f"{step.name}.log"
    )

    if code is None:
        verdict, detail = "error", f"timed out after {step.timeout:g}s"
    elif code < 0:
        verdict, detail = "error", f"crashed: {describe_exit(code)}"
    elif step.kind == "command":
        verdict, detail = ("passed" if code == 0 else "failed"), describe_exit(code)
    elif code == 5:
        verdict, detail = "error", "no tests ran (pytest exit 5)"
    elif code in (0, 1):
        verdict, detail = ("passed" if code == 0 else "failed"), describe_exit(code)
    else:
        verdict, detail = "error", f"pytest {describe_exit(code)} (interrupted, internal or usage error)"

    if step.kind == "command":
        xml = junit.command_suite(lane.name, step.name, verdict == "passed", detail, tail, seconds)
    else:
        xml = None
        if report.exists():
            try:
                xml = junit.rename_suites(junit.read(report), f"{lane.name}/{step.name}")
            except ValueError as exc:
                verdict, detail = "error", str(exc)
        elif verdict != "error":
            verdict, detail = "error", f"no JUnit report ({describe_exit(code or 0)})"
        if verdict == "error":  # keep what the step said: its output tail becomes an error case
            crash = junit.error_suite(lane.name, step.name, detail, tail, seconds)
            xml = crash if xml is None else junit.merge([xml, crash], "")
    xml.write(str(report))

    ok = (verdict == "passed") if step.expect == "pass" else (verdict == "failed")
    shown = (
        verdict if step.expect == "pass" else f"{verdict} (expected to fail: {'defect caught' if ok else 'NOT caught'})"
    )
    print(f"[{lane.name}] {step.name}: end {shown}, {detail}, {seconds:.1f}s"
          + (" (failure allowed)" if not ok and step.allow_failure else ""), file=progress, flush=True)  # fmt: skip
    return StepResult(step, verdict, ok or step.allow_failure, detail, seconds, report)


def not_run(lane: Lane, step: Step, reports: Path, reason: str, progress: TextIO) -> StepResult:
    """A step the lane never started still gets its JUnit case (skipped, with the reason)."""
    report = reports / lane.name / f"{step.name}.xml"
    report.parent.mkdir(parents=True, exist_ok=True)
    junit.skipped_suite(lane.name, step.name, f"not run: {reason}").write(str(report))
    print(f"[{lane.name}] {step.name}: not run ({reason})", file=progress, flush=True)
    return StepResult(step, "not run", step.allow_failure, f"not run: {reason}", 0.0, report)


def run_lane(lane: Lane, reports: Path, *, only: str | None = None, fail_fast: bool = False,
             progress: TextIO | None = None, step_runner: Callable[..., StepResult] = run_step) -> tuple[bool, str]:  # fmt: skip
    """Run the lane: its setup commands first, then every step (all of them unless
    --fail-fast), inside the lane's timeout_minutes; write reports/LANE.xml and return
    (ok, markdown summary)."""
    progress = progress or sys.stdout
    steps = [s for s in lane.steps if only is None or s.name == only]
    if lane.setup:
        script = "set -euo pipefail\n" + "\n".join(lane.setup)
        steps.insert(0, Step("setup", "command", ("bash", "-c", script)))
    deadline = time.monotonic() + lane.timeout_minutes * 60 if lane.timeout_minutes else None
    results: list[StepResult] = []
    stop_reason = None
    for step in steps:
        remaining = None if deadline is None else deadline - time.monotonic()
        if stop_reason is None and remaining is not None and remaining <= 0:
            stop_reason = f"lane timeout of {lane.timeout_minutes:g} min reached"
        if stop_reason is not None:
            results.append(not_run(lane, step, reports, stop_reason, progress))
            continue
        if remaining is not None and remaining < step.timeout:
            step = replace(step, timeout=remaining)
        result = step_runner(lane, step, reports, progress)
        results.append(result)
        if step.name == "setup" and result.verdict != "passed":
            stop_reason = "the lane's setup failed"
        elif fail_fast and not result.ok:
            stop_reason = f"--fail-fast after {step.name}"
    parts = [junit.read(r.report) for r in results]
    merged = junit.merge(parts, lane.name)
    merged.write(str(reports / f"{lane.name}.xml"))
    rows = []
    for result, part in zip(results, parts):
        counts = junit.count(part, result.step.name)
        verdict = result.verdict if result.step.expect == "pass" else f"{result.verdict} (expected fail)"
        mark = "ok" if result.ok else "FAIL"
        rows.append((counts, f"{mark}: {verdict}, {result.detail}"))
    title = f"fl-contract lane `{lane.name}` (platform {lane.platform}): {'passed' if all(r.ok for r in results) else 'FAILED'}"
    return all(r.ok for r in results), junit.summary_markdown(title, rows)


def publish(markdown: str, out: TextIO | None = None) -> None:
    """Print the summary, and append it to $GITHUB_STEP_SUMMARY when that is set."""
    (out or sys.stdout).write(markdown)
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as sink:
            sink.write(markdown + "\n")
