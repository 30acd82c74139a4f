"""Where the fast path's time goes on a GPU, case by case: host (Python) time per call
against GPU time per call, for the workaround's wrapper and FlagGems' native kernel, and
the GPU time of other tile plans around the model's choice.

    python benchmarks/profile_fastpath.py "sum:8x1523x65:1:float16" ... [--plans]
    ncu ... python benchmarks/profile_fastpath.py --ncu "sum:8x1523x65:1:float16" ...

Host time is taken while the GPU sleeps (every launch only queues), GPU time with
torch.profiler (kernels only, no launch gaps); ``bench_reductions.py``'s do_bench figure
is printed beside them, since it is what the sweep reports.  A diagnostic, not a target.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_reductions import parse  # noqa: E402


def host_us(fn, calls: int = 200) -> float:
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e9))  # about a second of GPU cycles: every call below only queues
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host


def gpu_us(fn, calls: int = 20) -> tuple[float, int]:
    """Kernel time per call and kernels per call, from the profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    total = (
        sum(e.device_time for e in kernels)
        if kernels and hasattr(kernels[0], "device_time")
        else sum(e.cuda_time for e in kernels)
    )
    return total / calls, len(kernels) // calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--plans", action="store_true", help="also time tile plans around the model's")
    parser.add_argument(
        "--ncu",
        action="store_true",
        help="only launch: each case's fast path and native twice (the second of each warm), for "
        "Nsight Compute to read their counters; no timing",
    )
    args = parser.parse_args()

    import flag_gems  # noqa: F401
    import torch
    import triton

    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.util import mnk
    from pytest_fl_contract.workarounds import fastpath, tilemodel
    from pytest_fl_contract.workarounds import masked_reductions as mr

    device = fastpath.device_info("cuda")
    print(device.source)

    def bench(fn) -> float:
        return triton.testing.do_bench(fn, warmup=10, rep=20, return_mode="median") * 1e3

    for spec in args.shapes:
        name, shape, dim, dtype = parse(spec)
        op = ROWS.get(name)
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
        native = op.fn()
        wrapped = mr.make_wrapper(native, mr.Target(op, op.entries[0]))
        M, N, K = mnk(shape, dim)
        kind = "softmax" if op.fastpath == "softmax" else "reduce"
        plan = fastpath.pick(M, N, K, device, x.element_size(), kind)
        arguments = {"dim": op.dim_arg(dim), **({} if op.keepdim == "none" else {"keepdim": False})}
        direct = functools.partial(fastpath.try_fast, op, x, arguments, mr.route)
        if args.ncu:
            native_call = functools.partial(op.invoke, native, x, op.dim_arg(dim))
            for call in (direct, direct, native_call, native_call):
                call()
            torch.cuda.synchronize()
            print(f"{spec}: launched, plan={plan}", flush=True)
            continue
        calls = {
            "native": functools.partial(op.invoke, native, x, op.dim_arg(dim)),
            "wrapper": functools.partial(op.invoke, wrapped, x, op.dim_arg(dim)),
            "direct": direct,
        }
        parts = []
        for label, call in calls.items():
            g, n = gpu_us(call)
            parts.append(f"{label}: host {host_us(call):6.1f} gpu {g:7.1f} ({n}k) bench {bench(call):7.1f}")
        print(f"{spec:32} M={M} N={N} K={K} plan={plan}\n    " + "\n    ".join(parts), flush=True)
        if not args.plans:
            continue
        results = []
        original = fastpath.pick
        block_ks = {plan.block_k, max(1, plan.block_k // 2), min(1024, plan.block_k * 2)}
        for block_r, block_k, warps, splits in itertools.product(
            sorted({max(1, plan.block_r >> s) for s in range(0, 4)}),
            sorted(block_ks),
            (4, 8),
            sorted({1, plan.splits, max(1, plan.splits // 4), plan.splits * 4}),
        ):
            if block_r * splits <= N and block_r * block_k <= 16384:
                alt = tilemodel.Plan(block_r, block_k, warps, splits)

                def patched(m, n, k, *rest, _alt=alt, _mnk=(M, N, K), _orig=original, **kw):
                    return _alt if (m, n, k) == _mnk else _orig(m, n, k, *rest, **kw)

                fastpath.pick = patched
                try:
                    g, n = gpu_us(direct, calls=10)
                finally:
                    fastpath.pick = original
                results.append((g, alt, n))
        results.sort(key=lambda r: r[0])
        print(
            "    best plans: "
            + "; ".join(f"{g:.1f}us r{p.block_r} k{p.block_k} w{p.warps} s{p.splits}" for g, p, _ in results[:5]),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
