"""Issue 32's targets against committed runs, band by band: which cases miss "back to back
<= 1.10x native", by the plan family they ran, and what the correct alternatives cost there;
how far inputs over 64 MB are from the 80% copy share, and how far native itself is.

On a platform with the masked-row defect, native's non-inner kernel is the one that reads
past the rows, so a case's correct alternatives are torch's own kernel and the moved axis
(FlagGems' inner kernel on a transposed copy): ``vs correct`` is the fast path's do_bench
time over the faster of them, where both or one were timed.  No GPU needed.

    python benchmarks/target_bands.py BASE.json [REPLACEMENT.json ...] [--title NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from bench_reductions import percentile
from merge_sweeps import merge

WORST, LARGE, SHARE = 1.10, 64 * 2**20, 0.80
HOST_BOUND_US = 50.0  # native back to back under this: the host's launches, not the GPU, set the pace


def family(row: dict) -> str:
    """The plan family a row ran (its ``plan``: tiles or a slab, one launch or split)."""
    plan = row.get("plan") or {}
    kind = "softmax" if row["op"] == "softmax" else "sum/mean"
    if "block" in plan:
        shape = "slab"
    else:
        shape = "flat tiles" if plan.get("flat") else "tiles"
    return f"{kind}, {shape}, {'split' if plan.get('splits', 1) > 1 else 'one launch'}"


def correct_alternative(row: dict) -> float | None:
    """The faster of torch and the moved axis (do_bench ms), where either was timed."""
    times = [row[k] for k in ("torch", "moved") if isinstance(row.get(k), (int, float))]
    return min(times) if times else None


def worst_bands(rows: list[dict]) -> list[str]:
    over = [r for r in rows if "loop_fast" in r and r["loop_fast"] / r["loop_native"] > WORST]
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in over:
        host = "host-bound" if row["loop_native"] * 1000 < HOST_BOUND_US else "GPU-bound"
        groups[f"{family(row)} ({host})"].append(row)
    lines = [
        f"{len(over)} of {len(rows)} cases over {WORST:.2f}x native back to back",
        "",
        "| band | cases | fast / native b2b median, worst | native b2b us | fast / best correct (do_bench) median, worst | example |",
        "|---|---:|---|---|---|---|",
    ]
    for name, group in sorted(groups.items(), key=lambda g: -len(g[1])):
        ratios = [r["loop_fast"] / r["loop_native"] for r in group]
        native_us = sorted(r["loop_native"] * 1000 for r in group)
        vs = [r["fast"] / alt for r in group if (alt := correct_alternative(r))]
        worst = max(group, key=lambda r: r["loop_fast"] / r["loop_native"])
        vs_text = f"{percentile(vs, 0.5):.2f}x, {max(vs):.2f}x ({len(vs)})" if vs else "not timed"
        lines.append(
            f"| {name} | {len(group)} | {percentile(ratios, 0.5):.2f}x, {max(ratios):.2f}x | "
            f"{native_us[0]:.0f} - {native_us[-1]:.0f} | {vs_text} | {_case(worst)} |"
        )
    return lines


def share_bands(rows: list[dict]) -> list[str]:
    """Copy share over 64 MB by dtype, the fast path's and native's (same bytes, its time)."""
    lines = [
        "",
        "| dtype | cases over 64 MB | fast share median | reaching 80% | native share median | native reaching 80% |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for dtype in ("float32", "bfloat16", "float16"):
        big = [r for r in rows if r["bytes"] > LARGE and r["dtype"] == dtype and "fast_copy_share" in r]
        if not big:
            continue
        fast = [r["fast_copy_share"] for r in big]
        native = [r["fast_copy_share"] * r["fast"] / r["native"] for r in big]
        lines.append(
            f"| {dtype} | {len(big)} | {100 * percentile(fast, 0.5):.0f}% | {sum(s >= SHARE for s in fast)} | "
            f"{100 * percentile(native, 0.5):.0f}% | {sum(s >= SHARE for s in native)} |"
        )
    return lines


def _case(row: dict) -> str:
    return (
        f"{row['op']} {'x'.join(map(str, row['shape']))} d{row['dim']} {row['dtype']} "
        f"{row['loop_fast'] / row['loop_native']:.2f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--title", default="", help="a heading for the run")
    args = parser.parse_args(argv)
    loaded = []
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as source:
                data = json.load(source)
            rows = data["rows"]
            for row in rows:
                row["op"], row["fast"], row["native"], row["bytes"], row["dtype"]  # noqa: B018 - a sweep's rows
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"target_bands: cannot read {path} as a sweep: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        if not rows:
            print(f"target_bands: {path} has no cases", file=sys.stderr)
            return 2
        loaded.append(rows)
    rows, replaced = merge(*loaded)
    print(f"### {args.title or args.files[0]}")
    print(f"{len(rows)} cases, {replaced} re-measured from later files")
    print("\n".join(worst_bands(rows) + share_bands(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
