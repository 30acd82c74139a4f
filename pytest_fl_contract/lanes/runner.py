"""Run a lane's steps as subprocesses and turn every outcome into JUnit.

Nothing is lost: a step that crashes (exit by signal), times out, is cancelled, cannot
start, or leaves no or malformed XML still becomes an error case carrying its output.
All steps run by default, even after a failure; the exit code is 0 only when every step
whose failure is not allowed got its expected verdict.

Every step runs in its own session (process group) with a token in its environment.
When it ends - it exits, it times out, or the runner gets SIGTERM/SIGINT - its group and
every process carrying its token are killed, so no process of a step outlives it (one
that starts its own session and drops its environment too is beyond anyone's reach).
Its output is read as bytes through a selector (no non-blocking read that can return
None), written whole to ``STEP.log`` and kept for the JUnit case capped in bytes (head
and tail).  The merged ``LANE.xml`` is built from the results in memory, never by
reading back files a later step could have overwritten.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Callable, TextIO

from .. import safeyaml
from ..errors import FlContractError
from . import junit
from .manifest import DEFAULT_OUTPUT_CAP, PACKAGE_VAR, PACKAGES_STEP, SETUP_STEP, Lane, Step

KILL_GRACE = 2.0  # seconds a cancelled step's group gets between SIGTERM and SIGKILL
DRAIN_SECONDS = 1.0  # reading what is left in the pipe once the group is dead
POLL = 0.1  # seconds between looks at exit, deadline and cancel
READ_CHUNK = 64 * 1024
STEP_TOKEN = "FL_CONTRACT_STEP_TOKEN"  # in every step's environment: finds the processes it left


@dataclass(frozen=True)
class StepResult:
    step: Step
    verdict: str  # passed | failed | error | not run
    ok: bool  # the verdict the lane wanted (expect/allow_failure applied)
    detail: str  # "exit 1", "crashed: -11 SIGSEGV", "timed out after 30s", "cancelled by SIGTERM", ...
    seconds: float
    report: Path
    xml: junit.Report  # what the merged LANE.xml holds for this step


@dataclass(frozen=True)
class LaneRun:
    ok: bool
    markdown: str
    results: tuple[StepResult, ...]
    report: Path  # reports/LANE.xml
    cancelled: int | None = None  # the signal that cancelled the run
    problem: str | None = None  # the merged report could not be written
    skipped: str | None = None  # why the lane could not run at all (an input it was not given)

    @property
    def exit_code(self) -> int:
        """128 + the signal when cancelled (130 SIGINT, 143 SIGTERM); 4 when the lane was
        skipped (never green: it ran nothing); else 0 or 1."""
        if self.cancelled:
            return 128 + self.cancelled
        if self.skipped:
            return SKIPPED_EXIT
        return 0 if self.ok and self.problem is None else 1


SKIPPED_EXIT = 4


def missing_inputs(lane: Lane, environ: Mapping[str, str]) -> list[str]:
    """The variables the lane's package specs name that the environment does not give."""
    return [name for name in lane.inputs() if not environ.get(name, "").strip()]


def package_step(lane: Lane, site: str, environ: Mapping[str, str]) -> Step:
    """Install the lane's packages into its own directory (never the running environment:
    ``--target``, no dependencies: the lane brings them)."""
    specs = [PACKAGE_VAR.sub(lambda m: environ[m.group(1)], spec) for spec in lane.packages]
    return Step(PACKAGES_STEP, "command", (sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                           "--no-deps", "--no-compile", "--target", site, *specs), timeout=900)  # fmt: skip


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"{code} {signal.Signals(-code).name}"
        except ValueError:
            return f"{code} (signal)"
    return f"exit {code}"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def expanded(args: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, ...]:
    """Pytest arguments may name ``${VAR}`` from the step's environment (``${FL_LANE_SITE}``:
    the lane's package directory); one it does not have stays as written, and pytest says
    what it could not find."""
    return tuple(PACKAGE_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), a) for a in args)


def step_argv(lane: Lane, step: Step, report: Path) -> list[str] | str:
    if step.kind == "command":
        return step.args if isinstance(step.args, str) else list(step.args)
    lane_args = ["--platform", lane.platform, "--fl-junit-prefix", lane.name, f"--junitxml={report}",
                 *lane.pytest_args, *step.args]  # fmt: skip
    if step.suites:
        from ..suites import pytest_argv

        return pytest_argv(step.suites, lane_args)
    return [sys.executable, "-m", "pytest", "-p", "fl_contract", *lane_args]


# -- cancellation -----------------------------------------------------------------------


class Cancel:
    """Set by the runner's SIGTERM/SIGINT handlers; the running step polls it."""

    def __init__(self) -> None:
        self.signum: int | None = None

    @property
    def reason(self) -> str:
        return f"cancelled by {signal_name(self.signum or 0)}"


@contextmanager
def cancel_on_signals() -> Iterator[Cancel]:
    """While a lane runs, SIGTERM and SIGINT cancel it instead of killing the runner: the
    current step's group is stopped, the rest are reported not run, the reports written.
    Outside the main thread (no handlers can be set) nothing is installed."""
    cancel = Cancel()
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return

    def handler(signum: int, frame: object) -> None:
        if cancel.signum is None:
            cancel.signum = signum

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield cancel
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# -- output -----------------------------------------------------------------------------


class OutputCap:
    """The first ``cap // 2`` and the last ``cap - cap // 2`` bytes of a stream, and its size."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: -self.tail_cap]

    def text(self) -> str:
        """Decoded (undecodable bytes replaced) and XML-safe; the cut, if any, is said."""
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        cut = self.total - len(self.head) - len(tail)
        if cut <= 0:
            text = (bytes(self.head) + tail).decode("utf-8", "replace")
        else:
            text = (
                f"{bytes(self.head).decode('utf-8', 'replace')}\n"
                f"[... {cut} bytes of output cut by fl-contract (output cap {self.cap} bytes) ...]\n"
                f"{tail.decode('utf-8', 'replace')}"
            )
        return junit.xml_safe(text)


def capped(data: bytes, cap: int) -> str:
    """What a step's JUnit case keeps of ``data``."""
    keep = OutputCap(cap)
    keep.feed(data)
    return keep.text()


class _Reader:
    """Reads a pipe as bytes without ever blocking past ``wait``; everything goes to the log.
    ``wake`` (a pidfd) ends a wait the moment the process exits, where the kernel has them."""

    def __init__(self, fd: int, log: BinaryIO | None, keep: OutputCap, wake: int | None = None) -> None:
        self.fd = fd
        self.log = log
        self.keep = keep
        self.eof = False
        self.wake = wake
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)
        if wake is not None:
            self.selector.register(wake, selectors.EVENT_READ)

    def pump(self, wait: float, max_chunks: int = 64) -> None:
        """Read what is there, waiting at most ``wait`` seconds for it; bounded per call so
        a step that floods its output cannot starve the exit, timeout and cancel checks."""
        if self.eof and self.wake is None:
            time.sleep(max(wait, 0.0))
            return
        timeout = max(wait, 0.0)
        for _ in range(max_chunks):
            events = self.selector.select(timeout)
            if not any(key.fd == self.fd for key, _ in events):
                return  # nothing to read, or the process exited
            chunk = os.read(self.fd, READ_CHUNK)
            if not chunk:
                self.eof = True
                self.selector.unregister(self.fd)
                return
            self.keep.feed(chunk)
            if self.log is not None:
                try:
                    self.log.write(chunk)
                except OSError:
                    self.log = None  # a full disk loses the log, not the lane
            timeout = 0.0

    def drain(self, seconds: float) -> None:
        """What is left in the pipe once the group is dead (bounded: a daemon may hold it)."""
        if self.wake is not None:
            self.selector.unregister(self.wake)
            self.wake = None
        end = time.monotonic() + seconds
        while not self.eof and time.monotonic() < end:
            self.pump(min(POLL, end - time.monotonic()))

    def close(self) -> None:
        self.selector.close()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined]  # Linux >= 5.3, Python >= 3.9
    except (AttributeError, OSError):
        return None


# -- processes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Execution:
    code: int | None  # exit status (negative: the signal); None when it never started
    ended: str  # exited | timeout | cancelled | not started
    output: str  # capped, XML-safe
    seconds: float
    left_behind: int = 0  # its processes still alive after it exited (all killed)
    pipe_held: bool = False  # a process outside its group still held its output


def _exited(proc: subprocess.Popen) -> bool:
    """Has the process exited?  Looks without reaping it, so its group id stays reserved
    and killing the group afterwards cannot hit a stranger that reused the number."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def leftovers(pgid: int, token: str) -> set[int]:
    """Live (not zombie) processes of the step other than its leader: those of its process
    group, and those that carry its ``STEP_TOKEN`` in their environment (a child that
    started its own session, as daemons do - Jenkins finds a build's processes the same
    way).  Empty where /proc is not there."""
    found: set[int] = set()
    mark = f"{STEP_TOKEN}={token}".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == pgid:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # state, ppid, pgrp, ...
        if len(fields) < 3 or fields[0] in ("Z", "X"):
            continue
        if fields[2] == str(pgid):
            found.add(int(entry))
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0"):
            found.add(int(entry))
    return found


def _kill_all(pgid: int, token: str, rounds: int = 5) -> int:
    """SIGKILL the step's group and every process carrying its token, again until none is
    left (one may fork while we look); how many there were besides the leader."""
    first = None
    for _ in range(rounds):
        strays = leftovers(pgid, token)
        _signal_group(pgid, signal.SIGKILL)
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        first = len(strays) if first is None else first
        if not strays:
            break
        time.sleep(0.01)
    return first or 0


def execute(
    argv: list[str] | str,
    shell: bool,
    env: dict[str, str],
    timeout: float,
    log: BinaryIO | None,
    cap: int = DEFAULT_OUTPUT_CAP,
    cancel: Cancel | None = None,
) -> Execution:
    """Run one step in a new session; whatever way it ends, its whole group is killed."""
    cancel = cancel or Cancel()
    start = time.monotonic()
    keep = OutputCap(cap)
    token = uuid.uuid4().hex
    try:
        proc = subprocess.Popen(argv, shell=shell, env={**env, STEP_TOKEN: token}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    except (OSError, ValueError) as exc:
        return Execution(None, "not started", junit.xml_safe(f"cannot start: {exc}"), time.monotonic() - start)
    assert proc.stdout is not None
    wake = _pidfd(proc.pid)
    reader = _Reader(proc.stdout.fileno(), log, keep, wake)
    deadline = start + timeout
    ended = "exited"
    try:
        while not _exited(proc):
            if cancel.signum is not None:
                ended = "cancelled"
                break
            left = deadline - time.monotonic()
            if left <= 0:
                ended = "timeout"
                break
            reader.pump(min(POLL, left))
        if ended == "cancelled":
            _signal_group(proc.pid, signal.SIGTERM)
            grace = time.monotonic() + KILL_GRACE
            while not _exited(proc) and time.monotonic() < grace:
                reader.pump(POLL)
        strays = _kill_all(proc.pid, token)
        left_behind = strays if ended == "exited" else 0
        proc.wait()
        reader.drain(DRAIN_SECONDS)
    finally:
        if proc.returncode is None:  # an exception above: still leave nothing behind
            _kill_all(proc.pid, token)
            proc.wait()
        reader.close()
        proc.stdout.close()
        if wake is not None:
            os.close(wake)
    return Execution(proc.returncode, ended, keep.text(), time.monotonic() - start, left_behind, not reader.eof)


# -- steps ------------------------------------------------------------------------------


def _say(progress: TextIO, line: str) -> None:
    """A progress line; a closed stdout (``| head``) must not cost the lane its reports."""
    try:
        print(line, file=progress, flush=True)
    except (OSError, ValueError):
        pass


@contextmanager
def _log_file(path: Path, notes: list[str]) -> Iterator[BinaryIO | None]:
    try:
        sink = path.open("wb")
    except OSError as exc:
        notes.append(f"no log ({path.name}: {exc.strerror})")
        yield None
        return
    with sink:
        yield sink


def _verdict(step: Step, run: Execution) -> tuple[str, str]:
    code = run.code
    if run.ended == "not started":
        return "error", junit.one_line(run.output)
    if run.ended == "timeout":
        return "error", f"timed out after {step.timeout:g}s"
    if run.ended == "cancelled":
        return "error", "cancelled"
    assert code is not None
    if code < 0:
        return "error", f"crashed: {describe_exit(code)}"
    if step.kind == "command":
        return ("passed" if code == 0 else "failed"), describe_exit(code)
    if code == 5:
        return "error", "no tests ran (pytest exit 5)"
    if code in (0, 1):
        return ("passed" if code == 0 else "failed"), describe_exit(code)
    return "error", f"pytest {describe_exit(code)} (interrupted, internal or usage error)"


def run_step(lane: Lane, step: Step, reports: Path, progress: TextIO, cancel: Cancel | None = None) -> StepResult:
    cancel = cancel or Cancel()
    lane_dir = reports / lane.name
    report = lane_dir / f"{step.name}.xml"
    notes: list[str] = []
    try:
        lane_dir.mkdir(parents=True, exist_ok=True)  # again: an earlier step may have removed it
        report.unlink(missing_ok=True)
    except OSError as exc:
        notes.append(f"cannot prepare {report.name}: {exc.strerror}")
    env = {**os.environ, **lane.env, **step.env}
    _say(progress, f"[{lane.name}] {step.name}: start ({step.kind}, timeout {step.timeout:g}s)")
    with _log_file(lane_dir / f"{step.name}.log", notes) as log:
        if step.kind == "pytest":
            lane = replace(lane, pytest_args=expanded(lane.pytest_args, env))
            step = replace(step, args=expanded(tuple(step.args), env))
        run = execute(step_argv(lane, step, report), step.shell, env, step.timeout, log, step.output_cap, cancel)
    verdict, detail = _verdict(step, run)
    if run.ended == "cancelled":
        detail = cancel.reason
    if run.left_behind:
        notes.append(f"killed {run.left_behind} process(es) it left behind")
    if run.pipe_held:
        notes.append("a process it started still holds its output (it dropped the step's environment)")

    if step.kind == "command":
        xml = junit.command_suite(lane.name, step.name, verdict, detail, run.output, run.seconds)
    else:
        xml = None
        if report.is_file():
            try:
                xml = junit.rename_suites(junit.read(report), f"{lane.name}/{step.name}")
                trouble = junit.problems(xml) + junit.count(xml, step.name).problems
                if trouble and verdict != "error":
                    verdict, detail = "error", f"JUnit report {report.name}: {trouble[0]}"
            except (ValueError, OSError) as exc:
                verdict, detail = "error", junit.one_line(str(exc))
        elif verdict != "error":
            verdict, detail = "error", f"no JUnit report ({describe_exit(run.code or 0)})"
        if verdict == "error":  # keep what the step said: its output becomes an error case
            crash = junit.error_suite(lane.name, step.name, detail, run.output, run.seconds)
            xml = crash if xml is None else junit.with_case(xml, crash)
    try:
        junit.write(xml, report, cap=step.output_cap)
    except OSError as exc:
        problem = f"cannot write {report.name}: {exc.strerror}"
        if verdict != "error":
            xml = junit.with_case(xml, junit.error_suite(lane.name, step.name, problem, run.output, run.seconds))
            verdict, detail = "error", problem
        else:
            notes.append(problem)
    if notes:
        detail = f"{detail}; {'; '.join(notes)}"

    ok = (verdict == "passed") if step.expect == "pass" else (verdict == "failed")
    shown = (
        verdict if step.expect == "pass" else f"{verdict} (expected to fail: {'defect caught' if ok else 'NOT caught'})"
    )
    _say(progress, f"[{lane.name}] {step.name}: end {shown}, {detail}, {run.seconds:.1f}s"
         + (" (failure allowed)" if not ok and step.allow_failure else ""))  # fmt: skip
    return StepResult(step, verdict, ok or step.allow_failure, detail, run.seconds, report, xml)


def broken(lane: Lane, step: Step, reports: Path, exc: BaseException, progress: TextIO) -> StepResult:
    """The step runner itself failed (a bug of ours, or a lane that broke its own report
    directory beyond repair): still an error case, so LANE.xml lists the step."""
    detail = f"fl-contract runner error: {type(exc).__name__}: {junit.one_line(str(exc), 300)}"
    _say(progress, f"[{lane.name}] {step.name}: end error, {detail}")
    xml = junit.error_suite(lane.name, step.name, detail, "", 0.0)
    return StepResult(step, "error", step.allow_failure, detail, 0.0, reports / lane.name / f"{step.name}.xml", xml)


def not_run(lane: Lane, step: Step, reports: Path, reason: str, progress: TextIO) -> StepResult:
    """A step the lane never started still gets its JUnit case (skipped, with the reason)."""
    report = reports / lane.name / f"{step.name}.xml"
    xml = junit.skipped_suite(lane.name, step.name, f"not run: {reason}")
    try:
        junit.write(xml, report)
    except OSError:
        pass  # the merged LANE.xml still has it
    _say(progress, f"[{lane.name}] {step.name}: not run ({reason})")
    return StepResult(step, "not run", step.allow_failure, f"not run: {reason}", 0.0, report, xml)


def run_lane(lane: Lane, reports: Path, *, only: str | None = None, fail_fast: bool = False,
             progress: TextIO | None = None, step_runner: Callable[..., StepResult] = run_step,
             output_cap: int | None = None) -> LaneRun:  # fmt: skip
    """Run the lane: its setup commands first, then every step (all of them unless
    --fail-fast), inside the lane's timeout_minutes; SIGTERM/SIGINT cancel the rest.
    Writes reports/LANE.xml with one case per step (or the step's own cases) whatever
    happened, and returns the outcome with its Markdown summary."""
    progress = progress or sys.stdout
    lane_dir = reports / lane.name
    merged_path = reports / f"{lane.name}.xml"
    try:
        lane_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FlContractError(
            f"cannot create the report directory {safeyaml.shown(lane_dir)}: {exc.strerror}"
        ) from None
    if merged_path.is_dir():
        raise FlContractError(f"cannot write the lane report {safeyaml.shown(merged_path)}: it is a directory")
    steps = [s for s in lane.steps if only is None or s.name == only]
    if lane.setup:
        script = "set -euo pipefail\n" + "\n".join(lane.setup)
        steps.insert(0, Step(SETUP_STEP, "command", ("bash", "-c", script)))
    skipped = None
    site = None
    if lane.packages:
        missing = missing_inputs(lane, os.environ)
        if missing:
            skipped = (f"{', '.join(missing)} not set: the pip spec{'s' if len(missing) > 1 else ''} of what this "
                       f"lane installs ({', '.join(lane.packages)})")  # fmt: skip
        else:
            site = tempfile.mkdtemp(prefix=f"fl-lane-{lane.name}-")
            steps.insert(0, package_step(lane, site, os.environ))
            path = lane.env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
            lane = replace(lane, env={**lane.env, "FL_LANE_SITE": site,
                                      "PYTHONPATH": os.pathsep.join(p for p in (site, path) if p)})  # fmt: skip
    if output_cap is not None:
        steps = [replace(s, output_cap=output_cap) for s in steps]
    deadline = time.monotonic() + lane.timeout_minutes * 60 if lane.timeout_minutes else None
    results: list[StepResult] = []
    stop_reason = f"lane skipped: {skipped}" if skipped else None
    with cancel_on_signals() as cancel:
        for step in steps:
            if stop_reason is None and cancel.signum is not None:
                stop_reason = cancel.reason
            remaining = None if deadline is None else deadline - time.monotonic()
            if stop_reason is None and remaining is not None and remaining <= 0:
                stop_reason = f"lane timeout of {lane.timeout_minutes:g} min reached"
            if stop_reason is not None:
                results.append(not_run(lane, step, reports, stop_reason, progress))
                continue
            if remaining is not None and remaining < step.timeout:
                step = replace(step, timeout=remaining)
            try:
                result = step_runner(lane, step, reports, progress, cancel=cancel)
            except Exception as exc:  # nothing is lost, not even to our own bug
                result = broken(lane, step, reports, exc, progress)
            results.append(result)
            if cancel.signum is not None:
                stop_reason = cancel.reason
            elif step.name == SETUP_STEP and lane.setup and result.verdict != "passed":
                stop_reason = "the lane's setup failed"
            elif step.name == PACKAGES_STEP and site and result.verdict != "passed":
                stop_reason = "the lane's packages could not be installed"
            elif fail_fast and not result.ok:
                stop_reason = f"--fail-fast after {step.name}"
        for result in results:  # again: a later step may have written over an earlier one's file
            try:
                junit.write(result.xml, result.report, cap=result.step.output_cap)
            except OSError:
                pass  # said in the step's case already; LANE.xml has it
        problem = None
        try:
            junit.write(junit.merge(r.xml for r in results), merged_path, name=lane.name)
        except OSError as exc:
            problem = f"cannot write the lane report {safeyaml.shown(merged_path)}: {exc.strerror}"
    rows = []
    for result in results:
        counts = junit.count(result.xml, result.step.name)
        verdict = result.verdict if result.step.expect == "pass" else f"{result.verdict} (expected fail)"
        mark = "ok" if result.ok else ("skipped" if skipped else "FAIL")
        rows.append((counts, f"{mark}: {verdict}, {result.detail}"))
    if site:
        shutil.rmtree(site, ignore_errors=True)
    ok = all(r.ok for r in results) and cancel.signum is None and not skipped
    state = cancel.reason.upper() if cancel.signum is not None else ("passed" if ok else "FAILED")
    if skipped:
        state = f"SKIPPED ({skipped})"
    markdown = junit.summary_markdown(f"fl-contract lane `{lane.name}` (platform {lane.platform}): {state}", rows)
    if problem:
        markdown += f"\n**{problem}**\n"
    return LaneRun(ok, markdown, tuple(results), merged_path, cancel.signum, problem, skipped)


def publish(markdown: str, out: TextIO | None = None) -> str | None:
    """Print the summary, and append it to $GITHUB_STEP_SUMMARY when that is set; returns
    why the latter failed (one line), or None."""
    try:
        (out or sys.stdout).write(markdown)
    except (OSError, ValueError):
        pass
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as sink:
                sink.write(markdown + "\n")
        except OSError as exc:
            return f"cannot append the summary to $GITHUB_STEP_SUMMARY ({safeyaml.shown(target)}): {exc.strerror}"
    return None
