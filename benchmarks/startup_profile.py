"""Where a GPU lane's fixed cost goes: every xdist worker starts Python, collects the suite
and runs its first case before the lane's work spreads out (an H200 lane: 12.8 s to the
first case, then 5 - 6.5 s for it, against 15.6 s of work a worker after).

    python benchmarks/startup_profile.py [--workers 16] [--device cuda]

Prints, for one process alone and for ``--workers`` at once: collection of the packaged
reduction suite (``fl-contract contracts reductions -- --collect-only``), and the phases of
a first case (import torch, the device's context, import flag_gems, a first FlagGems sum
with Triton's cache warm, the fast path's first call).  Then the heaviest imports of a
collection (``python -X importtime``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COLLECT = [
    sys.executable,
    "-m",
    "pytest_fl_contract.cli",
    "contracts",
    "reductions",
    "--",
    "--platform",
    "nvidia",
    "--fl-sweep",
    "full",
    "--collect-only",
    "-q",
    "-p",
    "no:cacheprovider",
]


def phases(device: str) -> dict[str, float]:
    """A first case's phases in this process, seconds each."""
    out: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        out[name] = round(now - mark, 3)
        mark = now

    import torch

    lap("import torch")
    x = torch.randn(3, 64, 5, device=device)
    getattr(torch, device).synchronize()
    lap("device context")
    import flag_gems

    lap("import flag_gems")
    flag_gems.ops.sum_dim(x, [1])
    getattr(torch, device).synchronize()
    lap("first FlagGems sum")
    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds.masked_reductions import route

    fastpath.try_fast(ROWS.get("sum"), x, {"dim": [1], "keepdim": False}, route)
    getattr(torch, device).synchronize()
    lap("first fast-path sum")
    return out


def timed(argvs: list[list[str]]) -> list[float]:
    """Wall seconds of each command, all started at once: each its own exit, polled (waiting
    on them in turn would stamp an early one with a later one's end)."""
    start = time.perf_counter()
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for a in argvs]
    ends: dict[int, float] = {}
    while len(ends) < len(procs):
        for i, p in enumerate(procs):
            if i not in ends and p.poll() is not None:
                ends[i] = time.perf_counter() - start
                if p.returncode != 0:
                    print(f"  a command failed (exit {p.returncode}): {' '.join(argvs[i][:6])} ...")
        time.sleep(0.02)
    return [ends[i] for i in range(len(procs))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--phases", action="store_true", help=argparse.SUPPRESS)  # the child's side
    args = parser.parse_args()
    if args.phases:
        print(json.dumps(phases(args.device)))
        return 0
    child = [sys.executable, __file__, "--phases", "--device", args.device]
    for n in (1, args.workers):
        ends = timed([COLLECT] * n)
        print(f"collection, {n} at once: median {statistics.median(ends):.1f} s, last {max(ends):.1f} s")
        start = time.perf_counter()  # each child times its own phases; here only when all are done
        procs = [subprocess.Popen(child, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
        runs = []
        for p in procs:
            out, err = p.communicate()
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            if p.returncode or not lines:
                print(f"  a first case failed (exit {p.returncode}): {(err.strip().splitlines() or [''])[-1][:200]}")
                continue
            runs.append(json.loads(lines[-1]))
        if runs:
            summary = ", ".join(f"{k} {statistics.median(r[k] for r in runs):.2f} s" for k in runs[0])
            print(f"first case, {n} at once (medians): {summary}; all done {time.perf_counter() - start:.1f} s")
    # the CLI runs pytest in a child: the environment variable reaches it, -X importtime would not
    done = subprocess.run(COLLECT, capture_output=True, text=True, env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("heaviest imports of one collection (cumulative us, module):")
    for us, name in sorted(rows, reverse=True)[:20]:
        print(f"  {us:>10}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
