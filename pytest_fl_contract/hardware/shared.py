"""Work every process of a run shares, made once: by a helper the session starts before its
xdist workers exist, or else by the first worker that needs it.

The fresh-process batches (a child importing torch and FlagGems and compiling every op's
kernels from an empty Triton cache, then another from the cache it filled) took 29 s on
an H200 lane.  Started in a worker's first case, they held that worker and every other
that reached one of their cases, while the workers were still importing torch: the lane
waited on them.  Started by the session (``start``), they run beside the workers' start-up,
and a case that reaches them finds them done or nearly.

The product is pickled beside a lock in a directory every process of the run shares (xdist's
workers: the parent of their base temp), with the job that made it: a worker whose job
differs (another selection, other settings) makes its own instead of reading another's.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class Job:
    """``make(arg)`` once per run in ``directory``: ``make`` is ``module:function``, ``arg``
    JSON, so a helper process can run it from its description alone."""

    directory: str
    name: str
    make: str
    arg: Any

    def path(self, suffix: str) -> Path:
        return Path(self.directory) / f"{self.name}{suffix}"

    def describe(self) -> str:
        return json.dumps({"make": self.make, "arg": self.arg}, sort_keys=True)


@dataclass(frozen=True)
class Got:
    value: Any
    waited: float  # seconds spent blocked while another process made it (0: made here)


def once_per_run(job: Job) -> Got:
    """The job's product: read back when another process of the run made it (waiting while
    it does), else made here and saved for the others."""
    started = time.monotonic()
    with open(job.path(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if make() raises
        waited = time.monotonic() - started
        saved = _read(job)
        return Got(saved, waited) if saved is not None else Got(_make(job), 0.0)


def _make(job: Job) -> Any:
    module, _, function = job.make.partition(":")
    make: Callable[[Any], Any] = getattr(importlib.import_module(module), function)
    value = make(job.arg)
    part = job.path(".pkl.part")
    part.write_bytes(pickle.dumps((job.describe(), value)))
    os.replace(part, job.path(".pkl"))
    return value


def _read(job: Job) -> Any | None:
    try:
        described, value = pickle.loads(job.path(".pkl").read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError):
        return None
    return value if described == job.describe() else None


def start(job: Job) -> subprocess.Popen[bytes] | None:
    """A helper process making the job now (None if it cannot start): whoever needs the
    product later blocks on its lock, then reads it.  The helper takes the lock before it
    answers, so a worker started after this returns cannot take it first."""
    argv = [sys.executable, "-m", "pytest_fl_contract.hardware.shared", json.dumps(job.__dict__), str(os.getpid())]
    try:
        Path(job.directory).mkdir(parents=True, exist_ok=True)
        helper = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
    except OSError:
        return None
    assert helper.stdout is not None
    helper.stdout.readline()  # "locked" (or nothing, if it died: the workers make it themselves)
    helper.stdout.close()
    return helper


def stop(helper: subprocess.Popen[bytes] | None, grace: float = 5.0) -> None:
    """The helper and what it started end with the session, needed or not: SIGTERM (it kills
    its process group: itself and every process it started), then SIGKILL."""
    if helper is None or helper.poll() is not None:
        return
    helper.terminate()
    try:
        helper.wait(grace)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def whole_file_selected(
    args: Iterable[str],
    invocation_dir: Path,
    file: Path,
    *,
    keyword: str = "",
    markexpr: str = "",
    deselect: Iterable[str] = (),
    last_failed: bool = False,
) -> bool:
    """Whether a run with these arguments runs every case of ``file``: an argument names it
    or a directory above it (not one node of it), and no -k, -m, --deselect or --lf narrows
    the run.  Only then is the work of its cases worth starting before collection."""
    if (
        keyword
        or markexpr
        or last_failed
        or any(
            str(d).split("::")[0] and Path(invocation_dir, str(d).split("::")[0]).resolve() == file.resolve()
            for d in deselect
        )
    ):
        return False
    target = file.resolve()
    for arg in args:
        if "::" in arg:
            continue
        path = Path(invocation_dir, arg).resolve()
        if path == target or path in target.parents:
            return True
    return False


def start_for(session: Any, file: Path, make: Callable[[Path], Job]) -> subprocess.Popen[bytes] | None:
    """A helper making the job ``make(the run's base directory)`` describes now, in the controller (or a run
    without xdist), when the run takes every case of ``file``; None otherwise.  Beside the
    workers' start-up the job is done or nearly when a case needs it, where a worker's first
    case otherwise started it and held every worker that reached one (the reductions: 29 s
    of a 51 s warm H200 lane; the tensor ops on an H100: twelve workers held 110 - 145 s
    each, from 235 s, the lane's last two minutes).  The helper is stopped when the run ends
    (the config's cleanup): a conftest need not keep it."""
    config = session.config
    option = config.option
    if getattr(config, "workerinput", None) is not None or getattr(option, "collectonly", False):
        return None
    if not whole_file_selected(
        config.args,
        config.invocation_params.dir,
        file,
        keyword=getattr(option, "keyword", ""),
        markexpr=getattr(option, "markexpr", ""),
        deselect=getattr(option, "deselect", None) or (),
        last_failed=bool(getattr(option, "lf", False)),
    ):
        return None
    factory = getattr(config, "_tmp_path_factory", None)  # none under -p no:tmpdir
    if factory is None:
        return None
    try:
        job = make(factory.getbasetemp())
    except Exception:  # a lane that cannot start says so in its cases, not here
        return None
    helper = start(job)
    config.add_cleanup(lambda: stop(helper))  # it and what it started end with the run, needed or not
    return helper


def _die_with_parent() -> None:
    """SIGTERM when the session dies, even by SIGKILL (Linux): nothing it started survives it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _helper(job: Job, parent: int) -> int:
    _die_with_parent()
    if os.getppid() != parent:
        return 1
    # its own process group (start): SIGTERM, from stop() or the session's death, takes
    # every process the job started with it
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(os.getpgrp(), signal.SIGKILL))
    with open(job.path(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        print("locked", flush=True)
        if _read(job) is None:
            _make(job)
    return 0


if __name__ == "__main__":
    sys.exit(_helper(Job(**json.loads(sys.argv[1])), int(sys.argv[2])))
