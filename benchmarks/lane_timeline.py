"""When each lane process started, became ready and ran each case: the wall time of an xdist
lane is set by its slowest worker, which JUnit times (summed per case) cannot show.

As a plugin, every process of the run (controller and xdist workers) writes
``$FL_TIMELINE/<worker>.jsonl``::

    FL_TIMELINE=out/timeline PYTHONPATH=benchmarks pytest -p lane_timeline ... -n auto

As a script, it reads them back: per worker when it started, collected and ran its first
case, how busy it was after, and the cases of the worker that finished last::

    python benchmarks/lane_timeline.py out/timeline
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

IMPORTED = time.time()


def _process_start() -> float:
    """The process's own start (before Python imported anything), from /proc; else now."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return IMPORTED


class _Log:
    def __init__(self, config: pytest.Config) -> None:
        worker = getattr(config, "workerinput", {}).get("workerid", "controller")
        folder = Path(os.environ["FL_TIMELINE"])
        folder.mkdir(parents=True, exist_ok=True)
        self._file = open(folder / f"{worker}.jsonl", "a", buffering=1)  # noqa: SIM115 - open for the run
        self.write("start", _process_start())
        self.write("imported", IMPORTED)

    def write(self, event: str, at: float, **more: Any) -> None:
        self._file.write(json.dumps({"event": event, "at": at, **more}) + "\n")


_KEY = pytest.StashKey[_Log]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("FL_TIMELINE"):
        config.stash[_KEY] = _Log(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    if _KEY in session.config.stash:
        session.config.stash[_KEY].write("collected", time.time(), cases=len(session.items))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    log = item.config.stash.get(_KEY, None)
    began = time.time()
    try:
        return (yield)
    finally:
        if log is not None:
            log.write("case", began, end=time.time(), nodeid=item.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _KEY in session.config.stash:
        session.config.stash[_KEY].write("finish", time.time())


def report(folder: Path, top: int = 12) -> int:
    logs = {
        p.stem: [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        for p in sorted(folder.glob("*.jsonl"))
    }
    if "controller" not in logs:
        print(f"lane_timeline: no controller.jsonl under {folder}", file=sys.stderr)
        return 2
    t0 = next(e["at"] for e in logs["controller"] if e["event"] == "start")
    done = max((e.get("end", e["at"]) for log in logs.values() for e in log), default=t0)
    print(f"controller: started 0.0 s, last event {done - t0:.1f} s")
    rows = []
    for name, log in logs.items():
        if name == "controller":
            continue
        first = {e["event"]: e["at"] - t0 for e in reversed(log)}  # the first of each event
        cases = [e for e in log if e["event"] == "case"]
        busy = sum(e["end"] - e["at"] for e in cases)
        begin = min((e["at"] for e in cases), default=t0) - t0
        end = max((e["end"] for e in cases), default=t0) - t0
        rows.append((end, name, first.get("start", 0), first.get("collected", 0), begin, busy, len(cases), cases))
    if not rows:
        print("no worker logs (a run without xdist?)")
        return 0
    print(f"{len(rows)} workers; seconds after the controller started:")
    print("  worker   start  collected  first case  last end   busy  cases")
    for end, name, start, collected, begin, busy, n, _ in sorted(rows, key=lambda r: int(r[1].lstrip("gw") or 0)):
        print(f"  {name:6} {start:6.1f} {collected:10.1f} {begin:11.1f} {end:9.1f} {busy:6.1f} {n:6d}")
    ready = [r[4] for r in rows]
    ends = [r[0] for r in rows]
    print(
        f"first case: median {statistics.median(ready):.1f} s, last {max(ready):.1f} s; "
        f"workers done: first {min(ends):.1f} s, median {statistics.median(ends):.1f} s, last {max(ends):.1f} s"
    )
    end, name, *_, cases = max(rows)
    print(f"the last worker to finish, {name} ({end:.1f} s), ran:")
    _longest(cases, t0, top)
    longest = [e for r in rows for e in r[7]]
    print(f"the {min(top, len(longest))} longest cases of the run:")
    _longest(longest, t0, top)
    return 0


def _longest(cases: list[dict[str, Any]], t0: float, top: int) -> None:
    for e in sorted(cases, key=lambda e: e["end"] - e["at"], reverse=True)[:top]:
        print(f"  {e['at'] - t0:6.1f} - {e['end'] - t0:6.1f} s  {e['end'] - e['at']:6.2f} s  {e['nodeid']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    raise SystemExit(report(args.folder, args.top))
