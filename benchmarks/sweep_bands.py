"""A committed sweep (``bench_reductions.py --json``) cut into bands, against issue #14's
targets: where the fast path is slower than native (> 1.10x), and how far from the copy
ceiling it runs on inputs over 64 MB.  No GPU needed: it reads the JSON.

    python benchmarks/sweep_bands.py benchmarks/results/h200x2-sweep-seed7-model.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict

from bench_reductions import percentile as quantile  # the sweep's own quantile: bands agree with its summary

SIZE_BANDS = (
    (0, 2**20, "< 1 MB"),
    (2**20, 20 * 2**20, "1 - 20 MB"),
    (20 * 2**20, 100 * 2**20, "20 - 100 MB"),
    (100 * 2**20, math.inf, "> 100 MB"),
)
WORST, LARGE = 1.10, 64 * 2**20


def size_band(row: dict) -> str:
    return next(name for lo, hi, name in SIZE_BANDS if lo <= row["bytes"] < hi)


def shape_band(row: dict) -> str:
    """Which side of the problem is small: the reduced length N, or the kept columns K."""
    shape, dim = row["shape"], row["dim"]
    n, k = shape[dim], math.prod(shape[dim + 1 :])
    return ("N <= 64" if n <= 64 else "N > 64") + ", " + ("K <= 8" if k <= 8 else "K > 8")


def table(rows: list[dict], key, title: str) -> list[str]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    out = [
        f"by {title}:",
        f"  {'band':<22}{'cases':>6}{'median':>8}{'p90':>8}{'worst':>8}{'> 1.10x':>9}{'native us':>11}",
    ]
    for name in sorted(groups, key=lambda g: (min(r["bytes"] for r in groups[g]), g)):
        ratios = [r["fast"] / r["native"] for r in groups[name]]
        native_us = quantile([1000 * r["native"] for r in groups[name]], 0.5)
        slow = sum(x > WORST for x in ratios)
        out.append(
            f"  {name:<22}{len(ratios):>6}{quantile(ratios, 0.5):>7.2f}x{quantile(ratios, 0.9):>7.2f}x"
            f"{max(ratios):>7.2f}x{slow:>9}{native_us:>11.1f}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json")
    args = parser.parse_args(argv)
    try:
        data = json.load(open(args.json))
        rows = [r for r in data["rows"] if r.get("fast") and r.get("native")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"sweep_bands: cannot read {args.json}: {exc}", file=sys.stderr)
        return 2
    ratios = [r["fast"] / r["native"] for r in rows]
    print(
        f"{data.get('device_model', data.get('device', '?'))}; seed {data.get('seed')}; {len(rows)} cases; "
        f"targets: worst <= {WORST}x, median <= 0.90x, >= 80% of copy over 64 MB (fp32, bf16)"
    )
    print(
        f"fast / native: median {quantile(ratios, 0.5):.2f}x, p90 {quantile(ratios, 0.9):.2f}x, worst {max(ratios):.2f}x; "
        f"{sum(x > WORST for x in ratios)} cases over {WORST}x"
    )
    for line in (
        table(rows, size_band, "input size")
        + table(rows, shape_band, "shape")
        + table(rows, lambda r: r["op"] + " " + r["dtype"], "op and dtype")
    ):
        print(line)
    big = defaultdict(list)
    for r in rows:
        if r["bytes"] > LARGE and r.get("fast_copy_share") is not None:
            big[r["dtype"]].append(r["fast_copy_share"])
    for dtype, shares in sorted(big.items()):
        print(
            f"{dtype} over 64 MB: copy share median {100 * quantile(shares, 0.5):.0f}%, "
            f"{sum(s >= 0.8 for s in shares)} of {len(shares)} at >= 80%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
