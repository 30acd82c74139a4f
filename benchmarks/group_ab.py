"""A candidate plan for tiny K over very many m (item 3 of issue 32), timed before it is built
into the fast path: each program loads G whole m's, a (G, N * K) block of the input that is
one contiguous run, as a (G, W) tile (W: N * K to a power of two) under a column-only mask
(j < N * K); rows past M are clamped to the last m, never masked, so no row condition exists
for a defect to drop (a clamped row re-reads and re-writes the last m's values, the same
bits).  Each k is reduced in registers (lanes j % K == k).  Softmax reads its tile once.

    python benchmarks/group_ab.py [--tiles 1024,2048,4096] [--json PATH] op:MxNxK:dim:dtype ...

Against the model's own pick (tiles or slabs) and FlagGems' native kernel, do_bench.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys

import triton
import triton.language as tl

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_reductions import cuda_timing, parse, planned, reference, traffic  # noqa: E402


@triton.jit
def _group_rows(M, NK, G: tl.constexpr, W: tl.constexpr):
    """This program's m (clamped to M - 1, int64) and its lanes' offsets within an m's run."""
    m = tl.minimum(tl.program_id(0).to(tl.int64) * G + tl.arange(0, G), M - 1)
    return m, tl.arange(0, W)


@triton.jit
def group_sum_kernel(
    out_ptr, in_ptr, M, NK, scale, K_C: tl.constexpr, KP: tl.constexpr, G: tl.constexpr, W: tl.constexpr
):
    """Sums (times ``scale``) per k of G m's into out[m, k], stored as one (G, KP) block."""
    m, j = _group_rows(M, NK, G, W)
    x = tl.load(in_ptr + m[:, None] * NK + j[None, :], mask=(j < NK)[None, :], other=0.0).to(tl.float32)
    kj = (j % K_C)[None, :]
    kc = tl.arange(0, KP)[None, :]
    out = tl.zeros([G, KP], dtype=tl.float32)
    for kk in tl.static_range(K_C):
        out = tl.where(kc == kk, tl.sum(tl.where(kj == kk, x, 0.0), axis=1)[:, None], out)
    tl.store(out_ptr + m[:, None] * K_C + kc, (out * scale).to(out_ptr.dtype.element_ty), mask=kc < K_C)


@triton.jit
def group_softmax_kernel(out_ptr, in_ptr, M, NK, K_C: tl.constexpr, G: tl.constexpr, W: tl.constexpr):
    """Softmax per k of G m's: each k's max and sum of exp handed to its lanes; one read."""
    m, j = _group_rows(M, NK, G, W)
    offs = m[:, None] * NK + j[None, :]
    cols = (j < NK)[None, :]
    x = tl.load(in_ptr + offs, mask=cols, other=float("-inf")).to(tl.float32)
    kj = (j % K_C)[None, :]
    lane_m = tl.full([G, W], float("-inf"), dtype=tl.float32)
    for kk in tl.static_range(K_C):
        lane_m = tl.where(kj == kk, tl.max(tl.where(kj == kk, x, float("-inf")), axis=1)[:, None], lane_m)
    e = tl.exp(x - lane_m)  # an all -inf column: NaN, torch's answer
    lane_s = tl.zeros([G, W], dtype=tl.float32)
    for kk in tl.static_range(K_C):
        lane_s = tl.where(kj == kk, tl.sum(tl.where(kj == kk, e, 0.0), axis=1)[:, None], lane_s)
    tl.store(out_ptr + offs, (e / lane_s).to(out_ptr.dtype.element_ty), mask=cols)


def group_call(op: str, x, K: int, tile: int, per_thread: int = 8):
    """``tile`` elements a program, ``per_thread`` of them a thread."""
    import torch

    M, NK = x.shape[0], x.shape[1] * x.shape[2]
    W = triton.next_power_of_2(NK)
    G = max(1, tile // W)
    warps = max(1, min(16, G * W // (32 * per_thread)))
    grid = (triton.cdiv(M, G),)
    if op == "softmax":

        def call():
            out = torch.empty_like(x)
            group_softmax_kernel[grid](out, x, M, NK, K_C=K, G=G, W=W, num_warps=warps)
            return out
    else:
        scale = 1.0 / x.shape[1] if op == "mean" else 1.0

        def call():
            out = x.new_empty((M, K))
            group_sum_kernel[grid](out, x, M, NK, scale, K_C=K, KP=triton.next_power_of_2(K), G=G, W=W, num_warps=warps)
            return out

    return call, (G, W, warps)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="+", help="op:MxNxK:1:dtype (3-D, dim 1)")
    parser.add_argument("--tiles", default="1024,2048,4096")
    parser.add_argument("--json")
    args = parser.parse_args()

    import flag_gems  # noqa: F401  (its ops modules: the native entry points)
    import torch

    from pytest_fl_contract.registry import ROWS

    device, bench, copy_gbs = cuda_timing()
    print(f"{device.source}; copy {copy_gbs:.0f} GB/s", flush=True)
    rows, wrong = [], 0
    for spec in args.shapes:
        op, shape, dim, dtype = parse(spec)
        K = shape[2]  # (M, N, K), dim 1
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
        nbytes = x.numel() * x.element_size()
        moved = traffic(op, shape, dim, nbytes)
        entry = ROWS.get(op)
        native = functools.partial(entry.invoke, entry.fn(), x, entry.dim_arg(dim))
        want = reference(op, x, dim)
        plan, current = planned(op, shape, dim, x, device)
        row = {
            "case": spec,
            "bytes": nbytes,
            "plan": vars(plan),
            "native_ms": bench(native),
            "current_ms": bench(functools.partial(current.run, x)),
            "groups": [],
        }
        for tile, per_thread in itertools.product((int(t) for t in args.tiles.split(",")), (8, 16)):
            call, (G, W, warps) = group_call(op, x, K, tile, per_thread)
            got = call().double().reshape(want.shape)
            err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ms = bench(call)
            row["groups"].append(
                {
                    "tile": tile,
                    "G": G,
                    "W": W,
                    "warps": warps,
                    "ms": ms,
                    "rel_error": err,
                    "share": moved / ms / 1e6 / copy_gbs,
                }
            )
            wrong += not err <= (1e-4 if dtype == "float32" else 1e-2)
        rows.append(row)
        best = min(row["groups"], key=lambda g: g["ms"])
        print(
            f"{spec:32} {nbytes / 2**20:8.1f} MB  native {row['native_ms']:.4f}  current {vars(plan)} "
            f"{row['current_ms']:.4f} ({100 * moved / row['current_ms'] / 1e6 / copy_gbs:.0f}%)  group "
            + "  ".join(
                f"G{g['G']}xW{g['W']}w{g['warps']} {g['ms']:.4f} ({100 * g['share']:.0f}%, err {g['rel_error']:.0e})"
                for g in row["groups"]
            )
            + f"  best {row['current_ms'] / best['ms']:.2f}x the current",
            flush=True,
        )
        if args.json:
            with open(args.json, "w", encoding="utf-8") as sink:
                json.dump({"device_model": device.source, "copy_gbs": copy_gbs, "rows": rows}, sink, indent=1)
    print(f"correctness: {wrong} group timings outside tolerance of float64 torch")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
