"""Non-inner reductions on a GPU: torch, FlagGems' native non-inner kernel, the moved-axis
workaround and the fast path, over a stated distribution of problems (not a table).

    python benchmarks/bench_reductions.py --sweep 200 --seed 7 [--json PATH] [--moved-every 4]
    python benchmarks/bench_reductions.py --shapes "sum:3x1000x777:1:float32" ...

Distribution (``--sweep N --seed S``): op uniform over sum / mean / softmax; dtype uniform
over fp32 / bf16 / fp16; the input's size log-uniform from 64 KB to 2 GB; that size split
into M x N x K by a uniform point of the simplex in log space (so M, N and K are each
log-uniform over their range), N >= 2 and K >= 2 (a non-inner dim: what the fast path
serves); M = 1 is written as a 2-D tensor reduced over dim 0.  Every case is also checked
against torch.  Prints the ratio of fast path to native (median, p90, worst), the same for
the moved axis, and the share of the copy bandwidth on inputs over 64 MB; writes JSON
with the device, versions and seed.  Speed targets live here, never in timed tests.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import random
import statistics
import sys
import time
from importlib import metadata

LARGE = 64 * 2**20  # bytes read: "large inputs" for the bandwidth target
OPS = ("sum", "mean", "softmax")
DTYPES = ("float32", "bfloat16", "float16")


def draw(rng: random.Random) -> tuple[str, tuple[int, ...], int, str]:
    op, dtype = rng.choice(OPS), rng.choice(DTYPES)
    elem = 4 if dtype == "float32" else 2
    total = math.exp(rng.uniform(math.log(64 * 2**10), math.log(2 * 2**30))) / elem
    a, b = sorted((rng.random(), rng.random()))
    logs = [a, b - a, 1 - b]  # a uniform point of the simplex
    m, n, k = (max(1, round(total**w)) for w in logs)
    n, k = max(n, 2), max(k, 2)
    return (op, (n, k), 0, dtype) if m == 1 else (op, (m, n, k), 1, dtype)


def parse(spec: str) -> tuple[str, tuple[int, ...], int, str]:
    op, shape, dim, dtype = spec.split(":")
    return op, tuple(int(s) for s in shape.split("x")), int(dim), dtype


def case_range(spec: str, n: int) -> range:
    """``--cases FROM:TO`` of a list of ``n`` (either end may be left out)."""
    first, sep, last = spec.partition(":")
    try:
        if spec and not sep:
            raise ValueError(spec)
        return range(int(first or 0), min(n, int(last or n)))
    except ValueError:
        raise SystemExit(
            f"bench_reductions: --cases {spec!r}: FROM:TO, whole numbers, either may be left out"
        ) from None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else float("nan")


def copy_bandwidth(bench, dev: str) -> float:
    """GB/s of a device-to-device copy of 1 GiB (bytes read plus written): the ceiling."""
    import torch

    src = torch.empty(2**30 // 4, device=dev)
    dst = torch.empty_like(src)
    return 2 * src.numel() * 4 / bench(lambda: dst.copy_(src)) / 1e6


def traffic(name: str, shape: tuple[int, ...], dim: int, nbytes: int) -> int:
    """Bytes a call moves: softmax reads twice (statistics, then values) and writes once; a
    sum reads once and writes 1/N as much."""
    return 3 * nbytes if name == "softmax" else nbytes + nbytes // shape[dim]


def cuda_timing():
    """(the fast path's device, do_bench at its median, the copy ceiling in GB/s): what the
    A/B scripts (loop_ab.py, group_ab.py) time with."""
    import triton

    from pytest_fl_contract.workarounds import fastpath

    bench = functools.partial(triton.testing.do_bench, warmup=5, rep=25, return_mode="median")
    return fastpath.device_info("cuda"), bench, copy_bandwidth(bench, "cuda")


def planned(op: str, shape: tuple[int, ...], dim: int, x, device, plan=None):
    """(the model's plan, the fast path's planned call) of one case, built as the fast path
    builds it (``fastpath.prepare``'s classes): the A/B scripts time it and change its launches.
    ``plan``: this one instead of the model's (a sweep's recorded plan)."""
    from pytest_fl_contract.util import mnk
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import tilemodel as tm

    M, N, K = mnk(shape, dim)
    kind = "softmax" if op == "softmax" else "reduce"
    plan = tm.pick(M, N, K, device, x.element_size(), kind) if plan is None else plan
    if isinstance(plan, tm.SlabPlan):
        call = (
            fastpath.SlabSoftmax(shape, dim, None, plan, x.device)
            if kind == "softmax"
            else fastpath.SlabReduce(shape, dim, False, op == "mean", plan, device, x.device)
        )
    else:
        call = (
            fastpath.Softmax(shape, dim, None, plan, x.device)
            if kind == "softmax"
            else fastpath.Reduce(shape, dim, False, op == "mean", plan, device, x.device)
        )
    return plan, call


def reference(op: str, x, dim: int):
    """The case's float64 answer (sum, mean or softmax over ``dim``)."""
    import torch

    if op == "softmax":
        return torch.softmax(x.double(), dim)
    return x.double().sum(dim) / (x.shape[dim] if op == "mean" else 1)


def back_to_back(fn, budget_s: float = 0.02) -> float:
    """Milliseconds a call of ``fn`` in a stream of back-to-back calls (no L2 flush): what a
    model calling it in a loop pays, host and GPU overlapped.  do_bench's median (a flush
    before each call) is bimodal where the host, not the GPU, bounds a call: the flush lets
    the host run ahead on some calls and not on others."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    end.synchronize()
    calls = max(5, min(2000, int(budget_s * 1e3 / max(start.elapsed_time(end) / 5, 1e-3))))
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def measure(
    case,
    bench,
    dev: str,
    device,
    copy_gbs: float,
    moved: bool,
    graph: bool = False,
    rounds: int = 1,
    launch_cache: bool = False,
) -> dict:
    """One case: torch, FlagGems' native kernel, the workaround (fast path), optionally the
    moved axis; and the fast path's error against torch.  ``launch_cache``: the fast path also
    back to back with its launches through FlagGems' launch cache (``fastpath.DIRECT`` off:
    what its own launches save on the host).  With ``rounds`` > 1, native and
    fast are timed that many times, alternating, and each figure is the median of its
    rounds (kept under "rounds"): two sweeps of the same cases and plans on two H200s gave
    the same plan's do_bench time 0.2 - 1.6x apart under 20 MB (p10 - p90), native's 0.1 -
    3.7x, so one timing of a small case says little."""
    import torch

    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.util import mnk
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import masked_reductions as mr

    name, shape, dim, dtype = case
    op = ROWS.get(name)
    x = torch.randn(shape, device=dev, dtype=getattr(torch, dtype))
    native = op.fn()
    wrapped = mr.make_wrapper(native, mr.Target(op, op.entries[0]))
    nbytes = x.numel() * x.element_size()
    moved_bytes = traffic(name, shape, dim, nbytes)
    calls = {
        "torch": functools.partial(op.torch_fn, x, dim, False),
        "native": functools.partial(op.invoke, native, x, op.dim_arg(dim)),
        "fast": functools.partial(op.invoke, wrapped, x, op.dim_arg(dim)),
    }
    got, want = calls["fast"]().float(), calls["torch"]().float()
    kind = "softmax" if name == "softmax" else "reduce"
    plan = fastpath.pick(*mnk(shape, dim), device, x.element_size(), kind)  # None: the moved axis
    row = {
        "op": name,
        "shape": list(shape),
        "dim": dim,
        "dtype": dtype,
        "bytes": nbytes,
        "error": float((got - want).abs().max() / want.abs().max().clamp_min(1e-30)),
        "plan": vars(plan) if plan else None,
    }
    if graph:  # GPU time alone: the calls replayed from a CUDA graph, no host in the figure
        del calls["torch"]
        row["torch"] = float("nan")
    timed: dict[str, list[float]] = {}
    for label in [lab for lab in calls if lab not in ("native", "fast")] + ["native", "fast"] * rounds:
        timed.setdefault(label, []).append(bench(calls[label]))
        if label == "fast" and not graph:
            timed.setdefault("loop_native", []).append(back_to_back(calls["native"]))
            timed.setdefault("loop_fast", []).append(back_to_back(calls["fast"]))
            if launch_cache:
                fastpath.DIRECT = False
                try:
                    timed.setdefault("loop_fast_cache", []).append(back_to_back(calls["fast"]))
                finally:
                    fastpath.DIRECT = True
    row.update({label: statistics.median(times) for label, times in timed.items()})
    if rounds > 1:
        row["rounds"] = timed
    if moved and not graph:
        with fastpath.disabled():
            row["moved"] = bench(calls["fast"])
    row["fast_gbs"] = moved_bytes / row["fast"] / 1e6
    row["fast_copy_share"] = row["fast_gbs"] / copy_gbs
    return row


def summary(rows: list[dict]) -> list[str]:
    """The sweep's figures over ``rows`` (also what ``merge_sweeps.py`` prints for merged runs)."""
    lines = []
    ratios = [r["fast"] / r["native"] for r in rows]
    moved = [r["moved"] / r["native"] for r in rows if "moved" in r]
    lines.append(
        f"fast / native: median {percentile(ratios, 0.5):.2f}x, p90 {percentile(ratios, 0.9):.2f}x, "
        f"worst {max(ratios, default=float('nan')):.2f}x"
    )
    for label, key in (("", "loop_fast"), (" through the launch cache", "loop_fast_cache")):
        loops = [r[key] / r["loop_native"] for r in rows if key in r]
        if loops:
            lines.append(
                f"back to back (host and GPU overlapped, no flush), fast{label} / native: median "
                f"{percentile(loops, 0.5):.2f}x, p90 {percentile(loops, 0.9):.2f}x, worst {max(loops):.2f}x, "
                f"{sum(x > 1.10 for x in loops)} over 1.10x"
            )
    if moved:
        lines.append(
            f"moved axis / native: median {percentile(moved, 0.5):.2f}x, worst {max(moved):.2f}x ({len(moved)} cases)"
        )
    for dtype in DTYPES:
        big = [r["fast_copy_share"] for r in rows if r["bytes"] > LARGE and r["dtype"] == dtype]
        if big:
            lines.append(
                f"{dtype} inputs over 64 MB: copy share median {100 * percentile(big, 0.5):.0f}%, "
                f"worst {100 * min(big):.0f}% ({len(big)} cases)"
            )
    worst = sorted(rows, key=lambda r: r["fast"] / r["native"], reverse=True)[:8]
    lines.append(
        "worst cases: "
        + "; ".join(
            f"{r['op']} {'x'.join(map(str, r['shape']))} d{r['dim']} {r['dtype']} {r['fast'] / r['native']:.2f}x"
            for r in worst
        )
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", type=int, default=0, help="draw this many cases")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shapes", nargs="*", default=[], help="op:MxNxK:dim:dtype cases")
    parser.add_argument(
        "--real-models",
        action="store_true",
        help="the shapes public model code reduces (benchmarks/real_models.py), in fp32, bf16 and fp16",
    )
    parser.add_argument("--moved-every", type=int, default=4, help="time the moved axis on every k-th case")
    parser.add_argument("--rep", type=int, default=40, help="do_bench repetition budget (ms)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="time native and fast this many times, alternating; medians"
    )
    parser.add_argument("--json", help="write results here")
    parser.add_argument(
        "--cases",
        default="",
        metavar="FROM:TO",
        help="time only cases FROM to TO-1 of the list (0-based; all are still drawn): a long "
        "sweep in parts, each a device call, with the same cases",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        help="start no case after this many seconds; the summary and JSON cover what ran",
    )
    parser.add_argument(
        "--launch-cache",
        action="store_true",
        help="also time the fast path back to back launching through FlagGems' launch cache",
    )
    parser.add_argument(
        "--graph", action="store_true", help="time CUDA-graph replays (GPU time only: a host's Python speed drops out)"
    )
    parser.add_argument(
        "--wide-blocks",
        action="store_true",
        help="weigh every column width (tilemodel.NARROW off): the narrow-block rule's A/B",
    )
    args = parser.parse_args()

    import flag_gems  # noqa: F401 - the entry points; nothing registered
    import torch
    import triton

    from pytest_fl_contract.workarounds import fastpath, tilemodel

    if args.wide_blocks:
        tilemodel.NARROW = {}

    if not torch.cuda.is_available():
        print("bench_reductions: needs a GPU (CPU figures come from benchmarks/bench_interpreter.py)")
        return 2
    rng = random.Random(args.seed)
    if args.real_models:
        from real_models import cases as model_cases  # beside this script

        args.shapes = [*args.shapes, *model_cases()]
    cases = [parse(s) for s in args.shapes] + [draw(rng) for _ in range(args.sweep)]
    dev = "cuda"
    device = fastpath.device_info("cuda")

    def bench(fn) -> float:
        if args.graph:
            return triton.testing.do_bench_cudagraph(fn, rep=args.rep, return_mode="median")
        return triton.testing.do_bench(fn, warmup=10, rep=args.rep, return_mode="median")

    nan = float("nan")
    copy_gbs = copy_bandwidth(bench, dev)
    rows = []
    start = time.monotonic()
    chosen = case_range(args.cases, len(cases))
    for i, case in enumerate(cases):
        if i not in chosen:
            continue
        if args.time_limit and time.monotonic() - start > args.time_limit:
            print(
                f"time limit: stopped before case {i + 1} of {len(cases)} (--cases {i}:{chosen.stop} runs the rest)",
                flush=True,
            )
            break
        moved = bool(args.moved_every) and i % args.moved_every == 0
        try:
            rows.append(
                measure(case, bench, dev, device, copy_gbs, moved, args.graph, max(1, args.rounds), args.launch_cache)
            )
        except Exception as exc:  # one case that cannot be timed (a graph capture refused) is said, not fatal
            print(
                f"{i + 1:4d} {case}: not measured: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True
            )
            continue
        r = rows[-1]
        print(
            f"{i + 1:4d} {r['op']:8} {'x'.join(map(str, r['shape'])):>22} d{r['dim']} {r['dtype']:9} "
            f"{r['bytes'] / 2**20:9.2f} MB  torch {r['torch']:.4f}  native {r['native']:.4f}  fast {r['fast']:.4f} "
            f"({r['fast'] / r['native']:.2f}x, loop {r.get('loop_fast', nan) / r.get('loop_native', nan):.2f}x"
            f"{', cache %.2fx' % (r['loop_fast_cache'] / r['loop_native']) if 'loop_fast_cache' in r else ''})  moved {r.get('moved', nan):.4f}  "
            f"{100 * r['fast_copy_share']:5.1f}% of copy  err {r['error']:.1e}",
            flush=True,
        )

    print(
        f"\ndevice {torch.cuda.get_device_name(0)} ({device.source}); copy ceiling {copy_gbs:.0f} GB/s; "
        f"{len(rows)} cases, seed {args.seed}, {args.rounds} round(s), {time.monotonic() - start:.0f}s"
    )
    print("\n".join(summary(rows)))
    bad = [r for r in rows if not r["error"] <= (1e-2 if r["dtype"] != "float32" else 1e-4)]
    print(f"correctness: {len(rows) - len(bad)} of {len(rows)} within tolerance of torch")
    if args.json:
        versions = {d: metadata.version(d) for d in ("torch", "triton", "flag_gems")}
        result = {
            "device": torch.cuda.get_device_name(0),
            "device_model": device.source,
            "copy_gbs": copy_gbs,
            "seed": args.seed,
            "cases": args.cases,
            "graph": args.graph,
            "rounds": args.rounds,
            "versions": versions,
            "python": platform.python_version(),
            "rows": rows,
        }
        with open(args.json, "w", encoding="utf-8") as sink:
            json.dump(result, sink, indent=1)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
