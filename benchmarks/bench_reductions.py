"""Non-inner reductions on a GPU: torch, FlagGems' native non-inner kernel, the moved-axis
workaround and the fast path, with a device-to-device copy as the bandwidth ceiling.

    python benchmarks/bench_reductions.py [--json PATH] [--quick]

Prints a Markdown table (ms, GB/s, ratio to the native kernel, % of copy bandwidth) and
writes JSON with the device and versions.  One run, ``triton.testing.do_bench`` medians.
Speed targets live here, never in timed tests.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from importlib import metadata

SHAPES = [  # (op, shape, dim, dtype): DESIGN §5, fp32 and bf16
    ("sum", (556, 4, 1024), 1), ("sum", (64, 557, 4096), 1), ("sum", (8, 4099, 8192), 1),
    ("sum", (4096, 8192), 0), ("sum", (2, 3, 4194304), 1), ("mean", (64, 557, 4096), 1),
    ("softmax", (556, 4, 1024), 1), ("softmax", (64, 557, 4096), 1), ("softmax", (4096, 8192), 0),
]  # fmt: skip
LARGE = 64 * 2**20  # bytes read: "large shapes" for the bandwidth target


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--quick", action="store_true", help="fp32 only")
    args = parser.parse_args()

    import flag_gems  # noqa: F401 - registers nothing; we call entry points directly
    import torch
    import triton

    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import masked_reductions as mr

    if not torch.cuda.is_available():
        print("bench_reductions: needs a GPU (CPU figures come from benchmarks/bench_interpreter.py)")
        return 2
    dev = "cuda"
    native = {
        "sum": lambda x, d: sys.modules["flag_gems.ops.sum"].sum_dim(x, [d]),
        "mean": lambda x, d: sys.modules["flag_gems.ops.mean"].mean_dim(x, [d]),
        "softmax": lambda x, d: sys.modules["flag_gems.ops.softmax"].softmax(x, d),
    }
    targets = {t.attr: t for t in mr.TARGETS}
    attr = {"sum": "sum_dim", "mean": "mean_dim", "softmax": "softmax"}
    ref = {"sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "softmax": lambda x, d: x.softmax(d)}

    def moved(op: str):
        target = targets[attr[op]]
        return mr.make_wrapper(getattr(sys.modules[target.module], target.attr), target)

    def bench(fn) -> float:
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    def copy_bandwidth() -> float:
        src = torch.empty(2**30 // 4, device=dev)
        dst = torch.empty_like(src)
        return 2 * src.numel() * 4 / bench(lambda: dst.copy_(src)) / 1e6

    copy_gbs = copy_bandwidth()

    rows = []
    dtypes = ["float32"] if args.quick else ["float32", "bfloat16"]
    for op, shape, dim in SHAPES:
        for dtype in dtypes:
            x = torch.randn(shape, device=dev, dtype=getattr(torch, dtype))
            nbytes = x.numel() * x.element_size()
            out_bytes = nbytes if op == "softmax" else nbytes // shape[dim]
            moved_bytes = 2 * nbytes  # the transpose reads and writes the input once more
            fast = (
                (lambda x=x, op=op, dim=dim: fastpath.softmax_dim(x, dim))
                if op == "softmax"
                else (lambda x=x, op=op, dim=dim: fastpath.reduce_dim(x, dim, False, op == "mean"))
            )
            mover = moved(op)
            call_moved = (
                (lambda x=x, d=dim, m=mover: m(x, d)) if op == "softmax" else (lambda x=x, d=dim, m=mover: m(x, [d]))
            )
            expected = ref[op](x.float(), dim)
            got = fast().float()
            err = (got - expected).abs().max().item()
            with fastpath.disabled():
                moved_ms = bench(call_moved)
            times = {
                "torch": bench(lambda x=x, op=op, dim=dim: ref[op](x, dim)),
                "native": bench(lambda x=x, op=op, dim=dim: native[op](x, dim)),
                "moved": moved_ms,
                "fast": bench(fast),
            }
            traffic = (2 * nbytes if op == "softmax" else nbytes) + out_bytes
            row = {
                "op": op, "shape": list(shape), "dim": dim, "dtype": dtype, "bytes": traffic,
                "ms": times, "gbs": {k: traffic / v / 1e6 for k, v in times.items()},
                "ratio_to_native": {k: v / times["native"] for k, v in times.items()},
                "pct_of_copy": {k: 100 * traffic / v / 1e6 / copy_gbs for k, v in times.items()},
                "fast_max_abs_err": err, "large": nbytes >= LARGE, "moved_extra_bytes": moved_bytes,
            }  # fmt: skip
            rows.append(row)
            del x

    props = torch.cuda.get_device_properties(0)
    meta = {
        "device": props.name, "sm_count": props.multi_processor_count, "copy_gbs": copy_gbs,
        "versions": {d: metadata.version(d) for d in ("torch", "triton", "flag_gems")},
        "python": platform.python_version(),
    }  # fmt: skip
    print(f"## Non-inner reductions on {props.name} (copy ceiling {copy_gbs:.0f} GB/s)\n")
    print(
        "| op | shape | dim | dtype | torch ms | native ms | moved ms | fast ms | fast GB/s | fast/native | moved/native | fast % copy |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ms = r["ms"]
        print(f"| {r['op']} | {tuple(r['shape'])} | {r['dim']} | {r['dtype']} | {ms['torch']:.3f} | {ms['native']:.3f} | "
              f"{ms['moved']:.3f} | {ms['fast']:.3f} | {r['gbs']['fast']:.0f} | {r['ratio_to_native']['fast']:.2f}x | "
              f"{r['ratio_to_native']['moved']:.1f}x | {r['pct_of_copy']['fast']:.0f}% |")  # fmt: skip
    worst = max(r["ratio_to_native"]["fast"] for r in rows)
    large = [r["pct_of_copy"]["fast"] for r in rows if r["large"]]
    print(f"\nfast path worst ratio to native: {worst:.2f}x (target <= 1.10x)")
    if large:
        print(f"fast path on large shapes: min {min(large):.0f}% of copy bandwidth (target >= 80%)")
    print(f"max |fast - torch fp32 reference| over all rows: {max(r['fast_max_abs_err'] for r in rows):.3g}")
    if args.json:
        with open(args.json, "w") as sink:
            json.dump({"meta": meta, "rows": rows}, sink, indent=1)
    return 0 if not math.isnan(worst) else 1


if __name__ == "__main__":
    sys.exit(main())
