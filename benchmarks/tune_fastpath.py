"""Sweep the fast path's tiles on the shapes where the heuristic was slowest; prints the
best (BLOCK_R, BLOCK_K, num_warps, splits) per shape next to the heuristic's choice and
FlagGems' native kernel.  Used to set ``fastpath.tiles``; GPU only.

    python benchmarks/tune_fastpath.py
"""

from __future__ import annotations

import itertools
import sys


def main() -> int:
    import flag_gems  # noqa: F401
    import torch
    import triton

    from pytest_fl_contract.workarounds import fastpath

    if not torch.cuda.is_available():
        print("tune_fastpath: needs a GPU")
        return 2
    shapes = [("sum", (4096, 8192), 0, "float32"), ("sum", (4096, 8192), 0, "bfloat16"),
              ("sum", (556, 4, 1024), 1, "bfloat16"), ("softmax", (64, 557, 4096), 1, "bfloat16"),
              ("softmax", (64, 557, 4096), 1, "float32"), ("softmax", (4096, 8192), 0, "float32"),
              ("softmax", (4096, 8192), 0, "bfloat16")]  # fmt: skip
    native = {"sum": lambda x, d: sys.modules["flag_gems.ops.sum"].sum_dim(x, [d]),
              "softmax": lambda x, d: sys.modules["flag_gems.ops.softmax"].softmax(x, d)}  # fmt: skip
    original = fastpath.tiles
    print("| op | shape | dtype | native ms | heuristic (R,K,W,S) ms | best (R,K,W,S) ms |")
    print("|---|---|---|---:|---:|---:|")
    for op, shape, dim, dtype in shapes:
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))

        def run(x=x, op=op, dim=dim):
            return fastpath.softmax_dim(x, dim) if op == "softmax" else fastpath.reduce_dim(x, dim, False, False)

        def bench(fn):
            return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median")

        t_native = bench(lambda x=x, op=op, dim=dim: native[op](x, dim))
        M = 1 if dim == 0 else shape[0]
        N, K = shape[dim], x.numel() // M // shape[dim]
        heur = original(M, N, K, 132, x.element_size(), "softmax" if op == "softmax" else "reduce")
        t_heur = bench(run)
        best = (float("inf"), None)
        split_options = (1, 4, 8, 16, 32, 64) if M * (K // 128) < 132 else (1,)
        for r, k, w, s in itertools.product((2, 4, 8, 16, 32), (128, 256, 512, 1024), (4, 8), split_options):
            if k > triton.next_power_of_2(K) or r > N or s > N // r:
                continue
            fastpath.tiles = lambda *a, cfg=(r, k, w, s), **kw: cfg
            try:
                ref = run()
                t = bench(run)
            except Exception:
                continue
            finally:
                fastpath.tiles = original
            if t < best[0]:
                best = (t, (r, k, w, s), ref)
        print(
            f"| {op} | {shape} | {dtype} | {t_native:.3f} | {heur} {t_heur:.3f} | {best[1]} {best[0]:.3f} |", flush=True
        )
        del x
    return 0


if __name__ == "__main__":
    sys.exit(main())
