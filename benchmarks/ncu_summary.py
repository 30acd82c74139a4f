"""Nsight Compute's CSV (``ncu --csv --page details``, as ``run_on_gpu.sh ncu`` writes it) as
one line a launch: what bounds it (DRAM, the SMs, L2), how full the SMs were and why not
fuller.  The raw file holds ~60 metrics a launch; these are the ones a plan's copy share
turns on.

    python benchmarks/ncu_summary.py NCU.csv[.gz]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
from pathlib import Path

COLUMNS = (  # (heading, metric name)
    ("us", "Duration"),
    ("DRAM%", "DRAM Throughput"),
    ("SM%", "Compute (SM) Throughput"),
    ("L2%", "L2 Cache Throughput"),
    ("L1%", "L1/TEX Cache Throughput"),
    ("occ th", "Theoretical Occupancy"),
    ("occ", "Achieved Occupancy"),
    ("regs", "Registers Per Thread"),
    ("blk/SM", "Block Limit Registers"),
    ("waves", "Waves Per SM"),
    ("cyc/inst", "Warp Cycles Per Issued Instruction"),
)


def launches(path: Path) -> list[dict[str, str]]:
    """One dict a profiled launch: kernel, grid and every metric by name."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:  # type: ignore[operator]
        rows = csv.DictReader(line for line in f if line.startswith('"'))
        if not rows.fieldnames or "ID" not in rows.fieldnames:
            raise ValueError("no ncu CSV header (ncu --csv --page details)")
        out: dict[str, dict[str, str]] = {}
        for r in rows:
            one = out.setdefault(r["ID"], {"kernel": r["Kernel Name"], "grid": r["Grid Size"].replace(" ", "")})
            if r["Metric Name"]:
                one[r["Metric Name"]] = r["Metric Value"].replace(",", "")
    return list(out.values())


def line(one: dict[str, str]) -> str:
    def value(metric: str) -> str:
        v = one.get(metric, "-")
        if metric == "Duration" and v != "-":  # ncu reports ns
            return f"{float(v) / 1e3:.1f}"
        return v

    return f"{one['kernel'][:30]:30} {one['grid']:>14} " + " ".join(f"{value(m):>{max(len(h), 7)}}" for h, m in COLUMNS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    args = ap.parse_args(argv)
    try:
        rows = launches(args.csv)
    except (OSError, ValueError, EOFError, csv.Error) as e:
        print(f"ncu_summary: {args.csv}: {e}", file=sys.stderr)
        return 2
    print(f"{'kernel':30} {'grid':>14} " + " ".join(f"{h:>{max(len(h), 7)}}" for h, _ in COLUMNS))
    for one in rows:
        print(line(one))
    return 0


if __name__ == "__main__":
    sys.exit(main())
