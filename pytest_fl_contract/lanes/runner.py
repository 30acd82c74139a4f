"""Run a lane's steps (``supervise``) and turn every outcome into JUnit (``verdict``).

Nothing is lost: a step that crashes (exit by signal, also through a shell), times out,
is cancelled, cannot start, or leaves no or malformed XML still becomes an error case
carrying its output.  All steps run by default, even after a failure; the exit code is
0 only when every step whose failure is not allowed got its expected verdict.

The merged ``LANE.xml`` is built from the results in memory, never by reading back files
a later step could have overwritten, and written atomically.  One run of a lane at a time
writes a reports directory (``LANE.lock``); a run that was killed before it finished is
named by the next one, which also kills what its last step left.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Callable, TextIO

from .. import files
from ..config import safeyaml
from ..reporting import junit
from ..util import FlContractError, md_code, md_text
from . import verdict
from .manifest import PACKAGE_VAR, PACKAGES_STEP, RESERVED_NAMES, SETUP_STEP, Lane, Step
from .supervise import (
    Cancel,
    Execution,
    cancel_on_signals,
    describe_exit,
    execute,
    kill_token,
    shell_signal,
    signal_name,
)


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


PACKAGES_TIMEOUT = 900.0  # seconds the lane's package install may take


def package_specs(lane: Lane, environ: Mapping[str, str]) -> list[str]:
    """The lane's pip specs with ``${VAR}`` expanded; a value that would reach pip as an
    option (``-r/dev/null``), or as nothing, is refused: it is not a package to install."""
    specs = [PACKAGE_VAR.sub(lambda m: environ[m.group(1)], spec).strip() for spec in lane.packages]
    for raw, spec in zip(lane.packages, specs):
        if not spec or spec.startswith("-") or "\0" in spec or "\n" in spec:
            raise FlContractError(
                f"lane {lane.name}: packages: {raw!r} expands to {spec[:80]!r}, which is not a pip "
                "spec (a wheel path, a version or a URL)"
            )
    return specs


def package_step(lane: Lane, site: str, environ: Mapping[str, str]) -> Step:
    """Install the lane's packages into its own directory (never the running environment:
    ``--target``, no dependencies: the lane brings them); a pip that "passes" and installs
    nothing fails the step."""
    specs = package_specs(lane, environ)
    check = (
        "import pathlib, sys; sys.exit(0 if any(pathlib.Path(sys.argv[1]).glob('*.dist-info')) else "
        "'pip installed nothing into the lane directory')"
    )
    script = (
        '"$0" -m pip install -q --disable-pip-version-check --no-deps --no-compile --target "$1" "${@:2}" '
        '&& "$0" -c "$FL_CHECK_INSTALLED" "$1"'
    )
    return Step(
        PACKAGES_STEP,
        "command",
        ("bash", "-c", script, sys.executable, site, *specs),
        timeout=PACKAGES_TIMEOUT,
        env={"FL_CHECK_INSTALLED": check},
    )


def expanded(args: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, ...]:
    """Pytest arguments may name ``${VAR}`` from the step's environment (``${FL_LANE_SITE}``:
    the lane's package directory); one it does not have stays as written, and pytest says
    what it could not find."""
    return tuple(PACKAGE_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), a) for a in args)


def step_argv(lane: Lane, step: Step, report: Path) -> list[str] | str:
    if step.kind == "command":
        return step.args if isinstance(step.args, str) else list(step.args)
    lane_args = [
        "--platform",
        lane.platform,
        "--fl-junit-prefix",
        lane.name,
        f"--junitxml={report}",
        *lane.pytest_args,
        *step.args,
    ]
    if step.suites:
        from ..config.suites import pytest_argv

        return pytest_argv(step.suites, lane_args)
    return [sys.executable, "-m", "pytest", "-p", "fl_contract", *lane_args]


# -- steps ------------------------------------------------------------------------------


def _say(progress: TextIO, line: str) -> None:
    """A progress line; a closed stdout (``| head``) must not cost the lane its reports."""
    try:
        print(line, file=progress, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


@contextmanager
def _log_file(path: Path, notes: list[str]) -> Iterator[BinaryIO | None]:
    try:
        sink = files.fresh_log(path)
    except OSError as exc:
        notes.append(f"no log ({path.name}: {exc.strerror})")
        yield None
        return
    with sink:
        yield sink


def text_cap(step: Step) -> int:
    """Characters a text of the step's cases keeps in its XML and in LANE.xml: its output cap,
    and room for the line that says where the output was cut."""
    return step.output_cap + 1024


def _ended(step: Step, argv: list[str] | str, run: Execution) -> tuple[str, str] | None:
    """An end no report can overrule: not started, timed out, cancelled, crashed."""
    if run.ended == "not started":
        return "error", junit.one_line(run.output)
    if run.ended == "timeout":
        return "error", f"timed out after {step.timeout:g}s"
    if run.ended == "cancelled":
        return "error", "cancelled"
    assert run.code is not None
    if run.code < 0:
        return "error", f"crashed: {describe_exit(run.code)}"
    lost = shell_signal(run.code, argv, step.shell)
    if lost is not None:
        return "error", f"crashed: exit {run.code}, its shell's report of {signal_name(lost)}"
    if step.kind == "pytest" and run.code == 5:
        return "error", "no tests ran (pytest exit 5)"
    if step.kind == "pytest" and run.code not in (0, 1):
        return "error", f"pytest {describe_exit(run.code)} (interrupted, internal or usage error)"
    return None


def _own_properties(report: junit.Report) -> junit.Report:
    """A step's report without the properties only the runner writes (a step cannot
    record its own verdict)."""
    return replace(
        report,
        suites=tuple(
            replace(s, properties=tuple(p for p in s.properties if p[0] != verdict.STEP_PROPERTY))
            for s in report.suites
        ),
    )


def _with_record(report: junit.Report, record: tuple[str, str]) -> junit.Report:
    return replace(report, suites=tuple(replace(s, properties=(*s.properties, record)) for s in report.suites))


def _rerun_failures(
    lane: Lane, step: Step, xml: junit.Report, env: dict[str, str], log_dir: Path, cancel: Cancel, deadline: float
) -> tuple[junit.Report, str | None]:
    """Each failing case again, ``step.rerun`` times in fresh processes (lanes/rerun.py),
    each round inside what is left of the step's own time (``deadline``, monotonic): re-runs
    never carry the lane past its budget."""
    from . import rerun

    keys = rerun.failing_keys(xml, lane.name)
    if not keys:
        return xml, None

    def run_round(report: Path, extra: dict[str, str]) -> Path | None:
        left = deadline - time.monotonic()
        if cancel.signum is not None or left <= 0:
            raise rerun.NotRun()
        with _log_file(log_dir / f"{step.name}.rerun.log", []) as log:
            execute(step_argv(lane, step, report), False, {**env, **extra}, left, log, step.output_cap, cancel)
        return report if report.is_file() else None

    result = rerun.rerun(keys, step.rerun, lane.name, run_round)
    return rerun.label(xml, lane.name, result), result.note()


def _this_run(lane: Lane, name: str, earlier: Mapping[str, StepResult]):
    """The report step ``name`` left in this run, in memory: a file from an earlier run (or
    one a later step wrote over) is never a result."""
    from ..results import cases

    result = earlier.get(name)
    if result is None or result.verdict == "not run":
        why = result.detail if result is not None else "it did not run in this run of the lane"
        raise FlContractError(f"step {name} has no report to compare: {why}")
    return cases.from_report(result.xml, lane.name, f"{lane.name}/{name} (this run)")


def _compare_step(
    lane: Lane, step: Step, reports: Path, progress: TextIO, earlier: Mapping[str, StepResult] | None = None
) -> StepResult:
    """Two earlier steps of this run of the lane held alike: the step passes when both fail
    exactly the same cases, none of the reference's is missing from the other, and some case
    passed in both (``compare.Comparison.holds``: equal nothing is no agreement); its case
    carries the comparison."""
    from ..results import compare

    start = time.monotonic()
    try:
        reference, current = (_this_run(lane, name, earlier or {}) for name in step.args)
        result = compare.compare(reference, current)
    except FlContractError as exc:
        state, detail, text = "error", junit.one_line(str(exc), 300), ""
    else:
        differ = result.differs
        state = "passed" if result.holds(same_failures=True) else "failed"
        detail = (
            f"{step.args[1]} fails {'other' if differ else 'the same'} cases than {step.args[0]}: "
            f"{len(result.of('new_failures'))} more, {len(result.of('fixed'))} fewer, "
            f"{len(result.of('still_failing'))} in both, {result.passed_in_both} passed in both"
        )
        lost = {kind: len(result.of(kind)) for kind in ("hidden", "new_xfails", "disappeared") if result.of(kind)}
        if lost:
            detail += "; " + ", ".join(f"{n} {compare.TITLES[kind]}" for kind, n in lost.items())
        if result.proves_nothing:  # two runs that proved nothing agree on nothing
            detail += " - no case passed in both: the comparison shows nothing held"
        text = compare.markdown(result)
    xml = junit.command_suite(lane.name, step.name, state, detail, text, time.monotonic() - start, text)
    report = reports / lane.name / f"{step.name}.xml"
    wanted = verdict.expectation(step.expect, state, junit.count(xml, step.name), step.catch)
    xml = _with_record(xml, verdict.record(step.name, step.expect, step.allow_failure, state, wanted.ok))
    try:
        junit.write(xml, report)
    except OSError as exc:
        detail += f"; cannot write {report.name}: {exc.strerror}"
    _say(progress, f"[{lane.name}] {step.name}: end {state}, {detail}")
    return StepResult(step, state, wanted.ok or step.allow_failure, detail, time.monotonic() - start, report, xml)


def run_step(
    lane: Lane,
    step: Step,
    reports: Path,
    progress: TextIO,
    cancel: Cancel | None = None,
    token: str | None = None,
    earlier: Mapping[str, StepResult] | None = None,
) -> StepResult:
    """One step; ``earlier``: this run's results so far (what a compare step compares)."""
    cancel = cancel or Cancel()
    lane_dir = reports / lane.name
    report = lane_dir / f"{step.name}.xml"
    notes: list[str] = []
    try:
        lane_dir.mkdir(parents=True, exist_ok=True)  # again: an earlier step may have removed it
        if report.is_symlink() or report.exists():
            (shutil.rmtree if report.is_dir() and not report.is_symlink() else os.unlink)(report)
    except OSError as exc:
        notes.append(f"cannot prepare {report.name}: {exc.strerror}")
    env = {**os.environ, **lane.env, **step.env}
    if step.kind == "compare":
        return _compare_step(lane, step, reports, progress, earlier)
    if step.flaggems_tests:  # the rows' FlagGems test files, found where the lane's FlagGems tests are now
        from . import owntests

        try:
            found = owntests.files(step.flaggems_tests, owntests.directory(env))
        except FlContractError as exc:
            return broken(lane, step, reports, exc, progress, plain=True)
        step = replace(step, args=(*map(str, found), *step.args))
    _say(progress, f"[{lane.name}] {step.name}: start ({step.kind}, timeout {step.timeout:g}s)")
    with _log_file(lane_dir / f"{step.name}.log", notes) as log:
        if step.kind == "pytest":
            lane = replace(lane, pytest_args=expanded(lane.pytest_args, env))
            step = replace(step, args=expanded(tuple(step.args), env))
        argv = step_argv(lane, step, report)
        started = time.monotonic()
        run = execute(argv, step.shell, env, step.timeout, log, step.output_cap, cancel, token)
    ended = _ended(step, argv, run)
    if run.ended == "cancelled":
        ended = ("error", cancel.reason)
    if run.left_behind:
        shown = ", ".join(run.left_behind[:8]) + (", ..." if len(run.left_behind) > 8 else "")
        notes.append(f"killed {len(run.left_behind)} process(es) it left behind: {shown}")
    if run.pipe_held:
        notes.append("a process it started still held its output when it was killed")

    if step.kind == "command":
        state, detail = ended or verdict.command_verdict(run.code or 0)
        xml = junit.command_suite(lane.name, step.name, state, detail, run.output, run.seconds, "; ".join(notes))
    else:
        xml = None
        state, detail = ended or ("", "")
        try:
            if report.is_symlink() or (report.exists() and not report.is_file()):
                raise ValueError(f"its JUnit report {report.name} is not a regular file (refused unread)")
            if report.is_file():
                xml = _own_properties(junit.rename_suites(junit.read(report), f"{lane.name}/{step.name}"))
                trouble = junit.problems(xml) + junit.count(xml, step.name).problems
                if trouble and state != "error":
                    state, detail = "error", f"JUnit report {report.name}: {trouble[0]}"
            elif state != "error":
                state, detail = "error", f"no JUnit report ({describe_exit(run.code or 0)})"
        except (ValueError, OSError) as exc:
            state, detail = "error", junit.one_line(getattr(exc, "strerror", None) or str(exc))
            xml = None
        if state != "error":
            assert xml is not None and run.code is not None
            state, detail = verdict.pytest_verdict(run.code, junit.count(xml, step.name))
        if state == "failed" and step.rerun > 0 and xml is not None:
            xml, note = _rerun_failures(
                lane, step, xml, env, log_dir=lane_dir, cancel=cancel, deadline=started + step.timeout
            )
            if note:
                notes.append(note)
        if state == "error":  # keep what the step said: its output becomes an error case
            crash = junit.error_suite(lane.name, step.name, detail, run.output, run.seconds)
            xml = crash if xml is None else junit.with_case(xml, crash)
    assert xml is not None  # a command's suite, the step's own report, or its error case
    counts = junit.count(xml, step.name)
    wanted = verdict.expectation(step.expect, state, counts, step.catch)
    try:
        junit.write(
            _with_record(
                xml,
                verdict.record(step.name, step.expect, step.allow_failure, state, wanted.ok, tuple(notes), step.catch),
            ),
            report,
            cap=text_cap(step),
        )
    except OSError as exc:
        problem = f"cannot write {report.name}: {exc.strerror}"
        if state != "error":
            xml = junit.with_case(xml, junit.error_suite(lane.name, step.name, problem, run.output, run.seconds))
            state, detail = "error", problem
            wanted = verdict.expectation(step.expect, state, junit.count(xml, step.name), step.catch)
        else:
            notes.append(problem)
    xml = _with_record(
        xml, verdict.record(step.name, step.expect, step.allow_failure, state, wanted.ok, tuple(notes), step.catch)
    )
    if notes:
        detail = f"{detail}; {'; '.join(notes)}"
    shown = state if step.expect == "pass" else f"{state} (expected to fail: {wanted.note})"
    _say(
        progress,
        f"[{lane.name}] {step.name}: end {shown}, {detail}, {run.seconds:.1f}s"
        + (" (failure allowed)" if not wanted.ok and step.allow_failure else ""),
    )
    return StepResult(step, state, wanted.ok or step.allow_failure, detail, run.seconds, report, xml)


def broken(
    lane: Lane, step: Step, reports: Path, exc: BaseException, progress: TextIO, plain: bool = False
) -> StepResult:
    """The step runner itself failed (a bug of ours, or a lane that broke its own report
    directory beyond repair), or the step could not be made (``plain``: bad input, said as
    it is): still an error case, so LANE.xml lists the step."""
    detail = (
        junit.one_line(str(exc), 300)
        if plain
        else f"fl-contract runner error: {type(exc).__name__}: {junit.one_line(str(exc), 300)}"
    )
    _say(progress, f"[{lane.name}] {step.name}: end error, {detail}")
    xml = _with_record(
        junit.error_suite(lane.name, step.name, detail, "", 0.0),
        verdict.record(step.name, step.expect, step.allow_failure, "error", False),
    )
    return StepResult(step, "error", step.allow_failure, detail, 0.0, reports / lane.name / f"{step.name}.xml", xml)


def not_run(lane: Lane, step: Step, reports: Path, reason: str, progress: TextIO) -> StepResult:
    """A step the lane never started still gets its JUnit case (skipped, with the reason)."""
    report = reports / lane.name / f"{step.name}.xml"
    xml = _with_record(
        junit.skipped_suite(lane.name, step.name, f"not run: {reason}"),
        verdict.record(step.name, step.expect, step.allow_failure, "not run", False),
    )
    try:
        junit.write(xml, report)
    except OSError:
        pass  # the merged LANE.xml still has it
    _say(progress, f"[{lane.name}] {step.name}: not run ({reason})")
    return StepResult(step, "not run", step.allow_failure, f"not run: {reason}", 0.0, report, xml)


# -- one run of a lane at a time ----------------------------------------------------------


def lock_directory() -> Path:
    """A private directory for the lanes' locks, outside every reports directory: a step
    that empties ``--reports`` (or removes it) cannot take the lock of the run it is part of
    along.  ``$XDG_RUNTIME_DIR/fl-contract``, else ``TMPDIR/fl-contract-UID``; ours and no one
    else's (mode 0700, owned by us, not a link)."""
    candidates = [Path(os.environ["XDG_RUNTIME_DIR"]) / "fl-contract"] if os.environ.get("XDG_RUNTIME_DIR") else []
    candidates.append(Path(tempfile.gettempdir()) / f"fl-contract-{os.getuid()}")
    for folder in candidates:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            found = os.lstat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022:
            return folder
    raise FlContractError(
        f"no private directory for the lane locks ({', '.join(map(str, candidates))}: "
        "missing, not ours or writable by others)"
    )


class LaneLock:
    """Held (flock) while a run writes the lane's reports, so a second run of the lane into
    the same directory is refused instead of replacing its files.  Two locks: one in the
    private lock directory, keyed by the reports directory's real path (``lock_directory``:
    no step can delete it), and ``reports/LANE.lock`` (shared by every machine that mounts
    the directory).  Each records the running step's token; a lock found unheld but saying
    "running" is a run that was killed (SIGKILL, a lost machine): the next run names it and
    kills what its last step left."""

    def __init__(self, reports: Path, lane: str) -> None:
        self.path = reports / f"{lane}.lock"
        self.lane = lane
        self.reports = reports
        self.fds: list[int] = []
        self.previous: dict | None = None

    def acquire(self) -> None:
        digest = hashlib.sha256(os.fsencode(os.path.realpath(self.reports))).hexdigest()[:24]
        private = lock_directory() / f"{digest}-{self.lane}.lock"
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            try:
                (shutil.rmtree if self.path.is_dir() else os.unlink)(self.path)
            except OSError:
                pass
        states = []
        try:
            for path in (private, self.path):
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o644)
                self.fds.append(fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    held = _read_state(fd)
                    who = f" (pid {held.get('pid')}, since {held.get('started')})" if held else ""
                    raise FlContractError(
                        f"lane {self.lane} is already running into {safeyaml.shown(self.reports)}{who}: wait for "
                        "it, or give this run another --reports"
                    ) from None
                states.append(_read_state(fd))
        except BaseException:
            self._close()
            raise
        running = [state for state in states if state and state.get("state") == "running"]
        self.previous = running[0] if running else None

    def note(self, step: str, token: str) -> None:
        self._write({"state": "running", "pid": os.getpid(), "started": self._started, "step": step, "token": token})

    _started = time.strftime("%Y-%m-%dT%H:%M:%S")

    def _write(self, state: dict) -> None:
        data = json.dumps(state).encode()
        for fd in self.fds:
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)
            except OSError:
                pass

    def _close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def release(self) -> None:
        if self.fds:
            self._write({"state": "finished", "pid": os.getpid(), "finished": time.strftime("%Y-%m-%dT%H:%M:%S")})
            self._close()


def _read_state(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 4096, 0)
        state = json.loads(data.decode("utf-8")) if data else None
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _unfinished(lock: LaneLock, progress: TextIO) -> str | None:
    """The last run of the lane that never finished, and what its step left (killed now)."""
    last = lock.previous
    if not last:
        return None
    token = str(last.get("token") or "")
    killed = kill_token(token) if token else {}
    line = (
        f"the last run of lane {lock.lane} (pid {last.get('pid')}, started {last.get('started')}) did not "
        f"finish: it was killed during step {last.get('step')!r}"
    )
    if killed:
        line += (
            f"; killed {len(killed)} process(es) that step left: {', '.join(f'{p} ({n})' for p, n in killed.items())}"
        )
    _say(progress, f"[{lock.lane}] {line}")
    return line


def run_lane(
    lane: Lane,
    reports: Path,
    *,
    only: str | None = None,
    fail_fast: bool = False,
    progress: TextIO | None = None,
    step_runner: Callable[..., StepResult] = run_step,
    output_cap: int | None = None,
    rerun_failures: int = 0,
) -> LaneRun:
    """Run the lane: its setup commands first, then every step (all of them unless
    --fail-fast), inside the lane's timeout_minutes; a cancel signal stops the rest.
    Writes reports/LANE.xml with one case per step (or the step's own cases) whatever
    happened, and returns the outcome with its Markdown summary."""
    progress = progress or sys.stdout
    lane_dir = reports / lane.name
    merged_path = reports / f"{lane.name}.xml"
    if lane.name in RESERVED_NAMES:
        raise FlContractError(
            f"lane {lane.name!r}: the name is the runner's own in a reports directory "
            f"({', '.join(sorted(RESERVED_NAMES))}/ keeps the lanes' baselines); rename the lane"
        )
    try:
        lane_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FlContractError(
            f"cannot create the report directory {safeyaml.shown(lane_dir)}: {exc.strerror}"
        ) from None
    if merged_path.is_dir():
        raise FlContractError(f"cannot write the lane report {safeyaml.shown(merged_path)}: it is a directory")
    lock = LaneLock(reports, lane.name)
    try:
        lock.acquire()
    except OSError as exc:
        raise FlContractError(f"cannot lock {safeyaml.shown(lock.path)}: {exc.strerror}") from None
    try:
        _forget_last_run(merged_path)
        _forget_last_board(reports, lane.name)
        return _run_locked(lane, reports, lock, only, fail_fast, progress, step_runner, output_cap, rerun_failures)
    finally:
        lock.release()


def _forget_last_run(merged: Path) -> None:
    """The last run's LANE.xml goes before anything runs: while this run lasts, and if it can
    never write its own (a full disk, a lost machine), no one reads the old one as this run's."""
    try:
        if merged.is_symlink() or merged.exists():
            os.unlink(merged)
    except OSError as exc:
        raise FlContractError(
            f"cannot remove the last run's lane report {safeyaml.shown(merged)} ({exc.strerror}): "
            "it would be read as this run's"
        ) from None


def _forget_last_board(reports: Path, lane: str) -> None:
    """The last run's overload scoreboard goes with its LANE.xml, for the same reason."""
    from ..results import scoreboard

    try:
        scoreboard.forget(reports, lane)
    except OSError as exc:
        raise FlContractError(
            f"cannot remove the last run's overload scoreboard of lane {lane} in "
            f"{safeyaml.shown(reports)} ({exc.strerror}): it would be read as this run's"
        ) from None


def lane_board(lane: Lane, report: junit.Report, reports: Path, merged: Path) -> str:
    """The lane's overload scoreboard, where a step ran the overload suite: written beside
    LANE.xml (``LANE.scoreboard.json`` and ``.md``), its one-line summary for the lane's
    Markdown summary.  A view of the cases, not a verdict: a report it cannot read is said in
    one line there and decides nothing (the lane's verdicts come from its steps' cases)."""
    from ..results import cases, scoreboard

    try:
        found = cases.from_report(report, lane.name, str(merged))
        if not scoreboard.has_overloads(found):
            return ""
        board = scoreboard.board_of(found)
        json_path, md_path = scoreboard.write(board, reports)
    except FlContractError as exc:
        return f"\n**overload scoreboard: {md_text(str(exc), 600)}**\n"
    except OSError as exc:
        return (
            f"\n**overload scoreboard: cannot write it into {md_text(str(reports))}: {md_text(exc.strerror or exc)}**\n"
        )
    return (
        f"\noverload scoreboard: **{md_text(board.summary(), 400)}** "
        f"({md_code(json_path.name)}, {md_code(md_path.name)})\n"
    )


def lane_running(reports: Path, lane: str) -> bool:
    """Whether a run of ``lane`` into ``reports`` holds its lock now (``merge`` reads no report
    of a lane that is still running: what is there is the last run's, or none)."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(reports))).hexdigest()[:24]
    try:
        candidates = [lock_directory() / f"{digest}-{lane}.lock"]
    except FlContractError:
        candidates = []
    for path in (*candidates, reports / f"{lane}.lock"):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
    return False


def _run_locked(
    lane: Lane,
    reports: Path,
    lock: LaneLock,
    only: str | None,
    fail_fast: bool,
    progress: TextIO,
    step_runner: Callable[..., StepResult],
    output_cap: int | None,
    rerun_failures: int = 0,
) -> LaneRun:
    merged_path = reports / f"{lane.name}.xml"
    unfinished = _unfinished(lock, progress)
    steps = [s for s in lane.steps if only is None or s.name == only]
    if lane.setup:
        script = "set -euo pipefail\n" + "\n".join(lane.setup)
        steps.insert(0, Step(SETUP_STEP, "command", ("bash", "-c", script)))
    skipped = None
    site = None
    cleanup: list[Path] = []  # directories the lane made for itself
    results: list[StepResult] = []
    stop_reason = None
    if lane.packages:
        missing = missing_inputs(lane, os.environ)
        if missing:
            skipped = (
                f"{', '.join(missing)} not set: the pip spec{'s' if len(missing) > 1 else ''} of what this "
                f"lane installs ({', '.join(lane.packages)})"
            )
            stop_reason = f"lane skipped: {skipped}"
        else:
            site = tempfile.mkdtemp(prefix=f"fl-lane-{lane.name}-")
            cleanup.append(Path(site))
            try:
                steps.insert(0, package_step(lane, site, os.environ))
            except FlContractError as exc:  # a value that is no pip spec: the install is an error, nothing runs
                results.append(broken(lane, Step(PACKAGES_STEP, "command", ()), reports, exc, progress, plain=True))
                stop_reason = "the lane's packages could not be installed"
            path = lane.env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
            lane = replace(
                lane,
                env={**lane.env, "FL_LANE_SITE": site, "PYTHONPATH": os.pathsep.join(p for p in (site, path) if p)},
            )
    if lane.flaggems_tests_from and skipped is None:
        missing = missing_inputs(lane, os.environ)
        if missing:
            skipped = (
                f"{', '.join(missing)} not set: where this lane's FlagGems tests come from ({lane.flaggems_tests_from})"
            )
            stop_reason = f"lane skipped: {skipped}"
        else:
            from . import owntests

            tests = Path(tempfile.mkdtemp(prefix=f"fl-lane-{lane.name}-tests-"))
            spec = PACKAGE_VAR.sub(lambda m: os.environ[m.group(1)], lane.flaggems_tests_from).strip()
            try:
                owntests.unpack(spec, tests)
            except FlContractError as exc:
                results.append(broken(lane, Step("flaggems_tests", "command", ()), reports, exc, progress, plain=True))
                stop_reason = "the lane's FlagGems tests could not be unpacked"
            lane = replace(lane, env={**lane.env, "FL_LANE_TESTS": str(tests)})
            cleanup.append(tests)
    if output_cap is not None:
        steps = [replace(s, output_cap=output_cap) for s in steps]
    if rerun_failures:
        steps = [replace(s, rerun=rerun_failures) if s.kind == "pytest" else s for s in steps]
    deadline = time.monotonic() + lane.timeout_minutes * 60 if lane.timeout_minutes else None
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
            token = uuid.uuid4().hex
            lock.note(step.name, token)
            try:
                if step.kind == "compare":  # this run's reports, in memory
                    result = _compare_step(lane, step, reports, progress, {r.step.name: r for r in results})
                else:
                    result = step_runner(lane, step, reports, progress, cancel=cancel, token=token)
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
                junit.write(result.xml, result.report, cap=text_cap(result.step))
            except OSError:
                pass  # said in the step's case already; LANE.xml has it
        problem = None
        caps = {suite.name: text_cap(r.step) for r in results for suite in r.xml.suites}
        whole = junit.merge(r.xml for r in results)
        try:
            junit.write(whole, merged_path, name=lane.name, caps=caps)
        except OSError as exc:
            problem = f"cannot write the lane report {safeyaml.shown(merged_path)}: {exc.strerror}"
        board = lane_board(lane, whole, reports, merged_path) if problem is None else ""
    rows = []
    for result in results:
        counts = junit.count(result.xml, result.step.name)
        shown = result.verdict if result.step.expect == "pass" else f"{result.verdict} (expected fail)"
        mark = "ok" if result.ok else ("skipped" if skipped else "FAIL")
        rows.append((counts, f"{mark}: {shown}, {result.detail}"))
    for made in cleanup:
        shutil.rmtree(made, ignore_errors=True)
    ok = all(r.ok for r in results) and cancel.signum is None and not skipped
    said = ""
    if lane.baseline and problem is None and not skipped and cancel.signum is None:
        held, said = against_baseline(lane, reports, merged_path, ok)
        ok = ok and held
    state = cancel.reason.upper() if cancel.signum is not None else ("passed" if ok else "FAILED")
    if skipped:
        state = f"SKIPPED ({skipped})"
    markdown = junit.summary_markdown(
        f"fl-contract lane {md_code(lane.name)} (platform {md_text(lane.platform)}): {md_text(state)}", rows
    )
    if unfinished:
        markdown += f"\n**{md_text(unfinished)}**\n"
    if problem:
        markdown += f"\n**{md_text(problem)}**\n"
    markdown += board + said
    if problem is None and not skipped and cancel.signum is None:  # the failures by cause, not case by case
        from ..results.causes import lane_summary

        markdown += lane_summary(str(merged_path), lane.name)
    return LaneRun(ok, markdown, tuple(results), merged_path, cancel.signum, problem, skipped)


LAST_GREEN = "last-green"


def against_baseline(lane: Lane, reports: Path, merged: Path, green: bool) -> tuple[bool, str]:
    """The lane's run compared with its baseline (``baseline:``): a regression - a new
    failure, a case that disappeared - fails the lane.  ``last-green`` is the lane's own
    last green run, kept in reports/baselines/; there is none on the first run (said, not failed)."""
    from ..results import cases, compare

    kept = reports / "baselines" / f"{lane.name}.xml"
    path = kept if lane.baseline == LAST_GREEN else Path(lane.baseline)
    said = ""
    held = True
    if not path.is_file():
        if lane.baseline == LAST_GREEN:
            said = f"\nbaseline: none yet ({md_text(str(kept))} is written by the first green run)\n"
        else:
            held, said = False, f"\n**baseline {md_text(str(path))}: no such report**\n"
    else:
        try:
            result = compare.compare(cases.read_one(path), cases.read_one(merged))
        except FlContractError as exc:
            held, said = False, f"\n**baseline: {md_text(str(exc))}**\n"
        else:
            held = result.holds(same_failures=False)
            said = "\n" + compare.markdown(result)
    if green and held and lane.baseline == LAST_GREEN:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            files.write_atomic(kept, merged.read_bytes())
        except OSError as exc:
            said += f"\n**cannot keep this run as the last green baseline: {md_text(exc.strerror or str(exc))}**\n"
    return held, said
