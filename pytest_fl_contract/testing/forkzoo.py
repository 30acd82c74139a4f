"""The zoo's fork server: one fresh interpreter imports torch and brings FlagGems up on the
emulator once, then forks a child per mutant that runs the contracts with ``pytest.main``.

A mutant's own process used to spend most of its seconds importing torch and flag_gems
before its first contract (about 4 of 7 s on CI's CPU).  Each child still gets what a fresh
process gives a mutant: its own pytest session, its own patches (mutants apply after
``import flag_gems``, through the plugin's hook, which fires at once for a module already
imported), a kernel cache that never ran a launch.  No thread exists when a child forks.

    python -m pytest_fl_contract.testing.forkzoo SPEC.json   # prints one JSON verdict per line
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

WARM_FAILED = 3  # the server could not bring FlagGems up: the caller runs each mutant in its own process


def warm(platform: str) -> None:
    from ..config.platforms import load_registry
    from ..emulation.interpreter import bring_up

    profile = load_registry([]).get(platform).emulation_profile
    if profile is None:
        raise RuntimeError(f"platform {platform} has no emulation profile")
    bring_up(profile)
    import flag_gems  # noqa: F401 - the import every child would otherwise repeat
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401


def child(argv: list[str], workdir: str, log: str) -> None:
    """In the forked child: the contracts, output to ``log``; never returns."""
    code = 3
    try:
        os.chdir(workdir)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        import pytest

        code = int(pytest.main(argv))
    except BaseException as exc:  # noqa: BLE001 - the child's exit status is all that may leave it
        print(f"forkzoo child: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(spec: dict) -> int:
    """spec: platform, workdir, jobs, timeout, runs: [{name, argv, then?}]: ``then``, the
    argv run next when the first run did not fail a case (exit 1): the mutant's full
    selection after its recorded killer."""
    try:
        warm(spec["platform"])
    except Exception as exc:  # noqa: BLE001 - said in one line; the caller falls back
        print(json.dumps({"warm_failed": f"{type(exc).__name__}: {exc}"}), flush=True)
        return WARM_FAILED
    pending = list(spec["runs"])
    running: dict[int, tuple[dict, float]] = {}
    while pending or running:
        while pending and len(running) < max(1, spec["jobs"]):
            run = pending.pop(0)
            log = str(Path(spec["workdir"]) / f"{run['name']}.log")
            pid = os.fork()
            if pid == 0:
                child(run["argv"], spec["workdir"], log)
            running[pid] = (run, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for other, (_, start) in list(running.items()):
                if time.monotonic() - start > spec["timeout"]:
                    os.kill(other, signal.SIGKILL)
            time.sleep(0.05)
            continue
        run, start = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        seconds = run.get("seconds", 0.0) + time.monotonic() - start
        if code != 1 and run.get("then"):
            pending.insert(0, {"name": run["name"], "argv": run["then"], "seconds": seconds, "tries": 2})
            continue
        print(
            json.dumps({"name": run["name"], "code": code, "seconds": seconds, "tries": run.get("tries", 1)}),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(serve(json.loads(Path(sys.argv[1]).read_text())))
