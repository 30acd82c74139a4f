"""How a lane spreads over xdist workers: the CPU shared out, the longest cases first.

Every case checks against a float64 reference computed by torch on the CPU, and torch
gives each process as many threads as the host has cores: sixteen workers on a sixteen-core
host ran 256 threads.  Each worker gets its share instead (``OMP_NUM_THREADS``, where the
lane sets it, wins).

xdist hands out cases in collection order, so a lane whose longest cases come last (the
large-index and grid-limit cases: tens of seconds each) ends with one worker busy and the
rest idle.  Each run records how long every case took (pytest's cache, per platform and
sweep), and the next orders its cases longest first and has xdist hand them out one at a
time (``--maxschedchunk 1``: its first batches are otherwise runs of consecutive cases, all
the long ones to one worker), the longest-processing-time rule, so the long ones overlap
the short ones (``--fl-order collection`` keeps collection order); a runner with no record
orders them by the prior shipped with the package, the long cases of a measured cold lane.  xdist's first batch is
still at least two consecutive cases a worker (``first_batch``): those are dealt so that no
worker gets two of the longest.  That order starts the memory-heavy cases together, so
it goes with the memory ledger (``ledger.py``), which keeps them within the device's memory
(what it cost and saved: benchmarks/results/README.md).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..imports import after_import
from ..util import xdist_worker

CACHE_KEY = "fl_contract/durations"
PRIOR = Path(__file__).resolve().parents[1] / "config" / "durations-prior.json"


@functools.lru_cache(maxsize=1)
def prior(path: Path = PRIOR) -> dict[str, float]:
    """The shipped prior (benchmarks/durations_prior.py writes it from a measured cold lane);
    an unreadable one orders nothing: collection order, as before it existed."""
    try:
        cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
        return {str(k): float(v) for k, v in cases.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def cpu_share(cpus: int | None, workers: int) -> int:
    return max(1, (cpus or 1) // max(workers, 1))


def share_cpus(config: pytest.Config) -> None:
    """In an xdist worker, torch's intra-op threads to its share of the CPUs (unless
    OMP_NUM_THREADS says): each worker's OpenMP pool otherwise takes every core and spins
    against the others' (a 2-core CPU lane, two workers: 15% of its wall time)."""
    workerinput = xdist_worker(config)
    if workerinput is not None and "OMP_NUM_THREADS" not in os.environ:
        threads = cpu_share(usable_cpus(), int(workerinput.get("workercount", 1)))
        after_import("torch", lambda torch: torch.set_num_threads(threads))


def usable_cpus() -> int | None:
    """The CPUs this process may run on (a cpuset or affinity mask), as ``-n auto`` counts."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def first_batch(cases: int, workers: int, maxschedchunk: int | None) -> int:
    """Consecutive cases xdist's load scheduler hands each worker first (``LoadScheduling.
    schedule``): one each, round robin, under two cases a worker; else a quarter of a
    worker's share capped at ``--maxschedchunk``, and at least two whatever that says."""
    if cases < 2 * workers:
        return 1
    return max(min(cases // workers // 4, cases if maxschedchunk is None else maxschedchunk), 2)


def prior_key(nodeid: str) -> str:
    """A case's name in the prior: its family directory, file and test id, whatever directory
    the run's node ids start from (``fl-contract contracts`` roots them at the suites, a
    ``--pyargs`` run at site-packages)."""
    path, sep, rest = nodeid.partition("::")
    return "/".join(path.split("/")[-2:]) + sep + rest


def longest_first(
    nodeids: Sequence[str],
    durations: Mapping[str, float],
    workers: int = 1,
    batch: int = 2,
    prior: Mapping[str, float] | None = None,
) -> list[int]:
    """Indices of ``nodeids``, longest recorded first (stable; a case never timed counts as
    the median, so a new case neither jumps the queue nor waits for the end).  When under
    half the cases were ever timed (a fresh runner, or a record of some other selection),
    the ``prior`` orders them instead: the long cases of a measured cold lane (keyed by
    ``prior_key``) first, longest first, the rest in collection order.  Without a prior the
    order is unchanged.  A fresh H100 runner took its 105 s large-index case at 149 s, in
    collection order, and waited on it to 254 s.

    With ``workers`` (xdist), each worker's first ``batch`` cases (``first_batch``) are
    dealt like cards, snaking: worker i gets the i-th longest, then the (2W - 1 - i)-th, and
    so on.  In plain longest-first order xdist's first batch of two gave one H200 worker the
    two longest cases (large index, 10 s each) and another the next two, so the lane waited
    21 s on two workers."""
    known = [durations[n] for n in nodeids if n in durations]
    if not nodeids:
        return []
    if len(known) * 2 >= len(nodeids):
        median = sorted(known)[len(known) // 2]
        order = sorted(range(len(nodeids)), key=lambda i: -durations.get(nodeids[i], median))
    elif prior:
        order = sorted(range(len(nodeids)), key=lambda i: -prior.get(prior_key(nodeids[i]), 0.0))
    else:
        return list(range(len(nodeids)))
    dealt = batch * workers
    if workers < 2 or batch < 2 or len(order) < dealt:
        return order
    head = [order[r * workers + (w if r % 2 == 0 else workers - 1 - w)] for w in range(workers) for r in range(batch)]
    return head + order[dealt:]


_WAIT_KEY = pytest.StashKey[float]()
WAITED = "fl_shared_wait_s"  # a set-up report's attribute: seconds it waited on work another process made


def record_wait(item: pytest.Item, seconds: float) -> None:
    """In a case's set-up: it waited ``seconds`` on work another process made for the whole
    run.  Its set-up report carries that (``WAITED``, an attribute xdist sends on to the
    controller), never a JUnit property: per-case properties are not xunit2."""
    item.stash[_WAIT_KEY] = item.stash.get(_WAIT_KEY, 0.0) + seconds


def own_time(report: pytest.TestReport) -> float:
    """A phase's duration less what its set-up waited on work another process made for the
    whole run (``record_wait``): that wait is the work's, and counted as the case's it put
    every case of the fresh-process batches first, where they held a worker each."""
    duration = float(getattr(report, "duration", 0.0))
    if report.when != "setup":
        return duration
    return max(duration - float(getattr(report, WAITED, 0.0) or 0.0), 0.0)


class Schedule:
    """Registered on hardware lanes run with xdist (``-n``): the controller keeps the record,
    the workers share the CPU and read the record to order their collection alike."""

    def __init__(self, config: pytest.Config, lane: str) -> None:
        self.config = config
        self.key = f"{CACHE_KEY}/{lane}"
        self.seen: dict[str, float] = {}
        workerinput = xdist_worker(config)
        share_cpus(config)
        ordered = config.getoption("fl_order", "longest-first") == "longest-first"
        if ordered and workerinput is None and getattr(config.option, "maxschedchunk", 0) is None:
            config.option.maxschedchunk = 1

    def _recorded(self) -> dict[str, float]:
        cache = getattr(self.config, "cache", None)
        recorded = cache.get(self.key, {}) if cache is not None else {}
        return recorded if isinstance(recorded, dict) else {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Every worker collects and must agree on the order: all read the same record."""
        if self.config.getoption("fl_order", "longest-first") != "longest-first":
            return
        workers = int((xdist_worker(self.config) or {}).get("workercount", 1))
        chunk = getattr(self.config.option, "maxschedchunk", None)
        chunk = 1 if chunk is None else chunk  # what the controller set (__init__), unless the user did
        batch = first_batch(len(items), workers, chunk)
        order = longest_first([item.nodeid for item in items], self._recorded(), workers, batch, prior())
        items[:] = [items[i] for i in order]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if call.when == "setup" and _WAIT_KEY in item.stash:
            waited: float = item.stash[_WAIT_KEY]
            setattr(report, WAITED, round(waited, 3))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if xdist_worker(self.config) is None:  # the controller keeps the record
            self.seen[report.nodeid] = self.seen.get(report.nodeid, 0.0) + own_time(report)

    def pytest_sessionfinish(self, session: Any) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is None or xdist_worker(self.config) is not None or not self.seen:
            return
        recorded = self._recorded()
        recorded.update({k: round(v, 3) for k, v in self.seen.items()})
        cache.set(self.key, recorded)
