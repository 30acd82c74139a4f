"""How good is the tile model's choice?  For problems drawn as ``bench_reductions.py``
draws them (another seed than the sweep's), time many candidate plans on the GPU and put
the model's pick against the fastest measured.  A check of the model, not a fit: its
constants are hardware properties, and the sweep (another sample) is what is quoted.

    python benchmarks/plan_grid.py --cases 16 --seed 11 --min-mb 8 [--shapes op:MxNxK:dim:dtype ...] [--json PATH]
        [--ops softmax] [--tiles 1024,4096,8192]

``--tiles`` widens the model's tile sizes for this run (what a change of ``tilemodel.TILES``
would weigh); FlagGems' native kernel is timed beside every case.

Candidates per case: the model's 8 cheapest plans and the cheapest plan (and unsplit plan) of each tile size
and column width.  Each plan is timed by do_bench (an L2 flush before each call) and back to
back (host and GPU overlapped: where the host bounds a small problem).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import random
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_reductions import back_to_back, draw, parse  # noqa: E402


def candidates(M: int, N: int, K: int, device, elem: int, kind: str) -> list[tuple[float, object]]:
    from pytest_fl_contract.workarounds import tilemodel as tm

    out = [(tm.cost(M, N, K, plan, device, elem, kind)[1], plan) for plan in tm.candidates(M, N, K, elem, kind)]
    out.sort(key=lambda c: c[0])
    picked = out[:8]
    for group in {(p.block_r * p.block_k, p.block_k, p.flat) for _, p in out}:
        members = [c for c in out if (c[1].block_r * c[1].block_k, c[1].block_k, c[1].flat) == group]
        picked.append(min(members, key=lambda c: c[0]))
        picked.append(min((c for c in members if c[1].splits == 1), key=lambda c: c[0], default=members[0]))
    seen, unique = set(), []
    for c in picked:
        if c[1] not in seen:
            seen.add(c[1])
            unique.append(c)
    return unique


def _slab(timed: list[dict], plan) -> dict:
    return next(t for t in timed if t["plan"].get("slab") == plan.block and t["plan"]["splits"] == plan.splits)


def tile_sizes(text: str) -> tuple[int, ...]:
    """``--tiles 1024,4096,8192``: powers of two, 1 to 8192 elements (16 warps at most)."""
    try:
        sizes = tuple(int(t) for t in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(s < 1 or s > 8192 or s & (s - 1) for s in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated powers of two, 1 to 8192")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=16)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--min-mb", type=float, default=8.0, help="only problems at least this large (MB)")
    parser.add_argument("--shapes", nargs="*", default=[], help="op:MxNxK:dim:dtype cases timed first")
    parser.add_argument("--json")
    parser.add_argument("--ops", nargs="*", default=[], help="only draw these ops")
    parser.add_argument("--tiles", type=tile_sizes, help="tile sizes (elements) the candidates take, comma-separated")
    parser.add_argument(
        "--slabs",
        action="store_true",
        help="also time the slab plans (K <= tilemodel.SLAB_K_MAX: whole contiguous runs per m)",
    )
    parser.add_argument(
        "--slab-k-max", type=int, help="time slab plans up to this K (what a change of SLAB_K_MAX would weigh)"
    )
    args = parser.parse_args()

    import torch
    import triton

    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.util import mnk
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import tilemodel as tm

    if args.tiles:
        tm.TILES = args.tiles
        tm.tiles.cache_clear()
    if args.slab_k_max:
        tm.SLAB_K_MAX = args.slab_k_max
        tm.slabs.cache_clear()
    device = fastpath.device_info("cuda")
    print(device.source, f"tiles {tm.TILES}", flush=True)
    rng = random.Random(args.seed)
    cases = [parse(s) for s in args.shapes]
    while len(cases) < len(args.shapes) + args.cases:
        op, shape, dim, dtype = draw(rng)
        if args.ops and op not in args.ops:
            continue
        elem = 4 if dtype == "float32" else 2
        if math.prod(shape) * elem >= args.min_mb * 2**20:
            cases.append((op, shape, dim, dtype))
    rows, wrong = [], []
    for op, shape, dim, dtype in cases:
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
        M, N, K = mnk(shape, dim)
        kind = "softmax" if op == "softmax" else "reduce"
        chosen = tm.tiles(M, N, K, device, x.element_size(), kind)
        plans = candidates(M, N, K, device, x.element_size(), kind)
        if chosen not in {p for _, p in plans}:  # host-bound: the widest plan under the launch's cost
            plans.append((tm.cost(M, N, K, chosen, device, x.element_size(), kind)[1], chosen))
        earlier = None  # an earlier model's pick, where one is compared (the JSON keeps its field)
        timed = []
        if op == "softmax":
            want = torch.softmax(x.float(), dim)
        else:
            want = x.float().sum(dim) / (shape[dim] if op == "mean" else 1)
        slabs = list(tm.slab_candidates(M, N, K, kind)) if args.slabs else []
        slab_pick = tm.slabs(M, N, K, device, x.element_size(), kind) if args.slabs else None
        for plan in slabs:
            if kind == "softmax":
                call = functools.partial(fastpath.SlabSoftmax(shape, dim, None, plan, x.device).run, x)
            else:
                call = functools.partial(
                    fastpath.SlabReduce(shape, dim, False, op == "mean", plan, device, x.device).run, x
                )
            got = call().float()
            error = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ms = triton.testing.do_bench(call, warmup=5, rep=10, return_mode="median")
            timed.append(
                {
                    "plan": {"slab": plan.block, "splits": plan.splits, "warps": plan.warps},
                    "predicted_ms": tm.slab_cost(M, N, K, plan, device, x.element_size(), kind)[1] * 1e3,
                    "ms": ms,
                    "loop_ms": back_to_back(call),
                    "error": error,
                }
            )
            if not error <= (1e-4 if dtype == "float32" else 1e-2):
                wrong.append(f"{op} {shape} {dtype} {plan}: error {error:.1e}")
        for predicted, plan in plans:
            if kind == "softmax":
                call = functools.partial(fastpath.Softmax(shape, dim, None, plan, x.device).run, x)
            else:
                call = functools.partial(
                    fastpath.Reduce(shape, dim, False, op == "mean", plan, device, x.device).run, x
                )
            got = call().float()
            error = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ms = triton.testing.do_bench(call, warmup=5, rep=10, return_mode="median")
            timed.append(
                {
                    "plan": vars(plan),
                    "predicted_ms": predicted * 1e3,
                    "ms": ms,
                    "loop_ms": back_to_back(call),
                    "error": error,
                }
            )
            if not error <= (1e-4 if dtype == "float32" else 1e-2):
                wrong.append(f"{op} {shape} {dtype} {plan}: error {error:.1e}")
        entry = ROWS.get(op)
        native = functools.partial(entry.invoke, entry.fn(), x, entry.dim_arg(dim))
        native_ms, native_loop = (
            triton.testing.do_bench(native, warmup=5, rep=10, return_mode="median"),
            back_to_back(native),
        )
        best = min(t["ms"] for t in timed if "slab" not in t["plan"])  # the model's own candidates
        pick = next(t["ms"] for t in timed if t["plan"] == vars(chosen))
        was = next((t["ms"] for t in timed if earlier is not None and t["plan"] == vars(earlier)), float("nan"))
        row = {
            "op": op,
            "shape": list(shape),
            "dim": dim,
            "dtype": dtype,
            "chosen": vars(chosen),
            "chosen_ms": pick,
            "best_ms": best,
            "slab_best_ms": min((t["ms"] for t in timed if "slab" in t["plan"]), default=None),
            "slab_pick": vars(slab_pick) if slab_pick else None,
            "native_ms": native_ms,
            "native_loop_ms": native_loop,
            "earlier": vars(earlier) if earlier else None,
            "earlier_ms": was,
            "plans": timed,
        }
        rows.append(row)
        if args.json:  # after every case: a run cut off by its time limit keeps what it timed
            with open(args.json, "w", encoding="utf-8") as sink:
                json.dump(
                    {"device_model": device.source, "seed": args.seed, "tiles": list(tm.TILES), "rows": rows},
                    sink,
                    indent=1,
                )
        slab_best = min((t for t in timed if "slab" in t["plan"]), key=lambda t: t["ms"], default=None)
        tiled_best = min((t for t in timed if "slab" not in t["plan"]), key=lambda t: t["ms"])
        fastest = tiled_best["plan"]
        loop = next(t["loop_ms"] for t in timed if t["plan"] == vars(chosen))
        loop_best = min((t for t in timed if "slab" not in t["plan"]), key=lambda t: t["loop_ms"])
        print(
            f"{op:8} {'x'.join(map(str, shape)):>20} {dtype:9} {math.prod(shape) * x.element_size() / 2**20:8.1f} MB "
            f"model {pick:.3f} ms ({pick / best:.2f}x best)  earlier {was:.3f} ({was / best:.2f}x)  best {best:.3f} "
            f"r{fastest['block_r']} k{fastest['block_k']} w{fastest['warps']} s{fastest['splits']}  "
            f"chosen r{chosen.block_r} k{chosen.block_k} s{chosen.splits}  ({len(timed)} plans)  back to back: model "
            f"{loop:.4f}, best {loop_best['loop_ms']:.4f} s{loop_best['plan']['splits']}  "
            f"native {native_ms:.3f} ms, back to back {native_loop:.4f}"
            + (
                f"  slab best {slab_best['ms']:.3f} ms (b{slab_best['plan']['slab']} s{slab_best['plan']['splits']}), "
                f"back to back best {min(t['loop_ms'] for t in timed if 'slab' in t['plan']):.4f}"
                if slab_best
                else ""
            )
            + (
                f"  slab pick b{slab_pick.block} s{slab_pick.splits}: {_slab(timed, slab_pick)['ms']:.3f} ms, "
                f"back to back {_slab(timed, slab_pick)['loop_ms']:.4f}"
                if slab_pick
                else ""
            ),
            flush=True,
        )
    ratios = sorted(r["chosen_ms"] / r["best_ms"] for r in rows)
    earlier = sorted(r["earlier_ms"] / r["best_ms"] for r in rows if not math.isnan(r["earlier_ms"]))
    print(
        f"\nmodel's pick / fastest timed: median {ratios[len(ratios) // 2]:.2f}x, worst {ratios[-1]:.2f}x ({len(ratios)} cases)"
    )
    if earlier:
        print(f"earlier model's pick / fastest: median {earlier[len(earlier) // 2]:.2f}x, worst {earlier[-1]:.2f}x")
    print(
        f"correctness: {sum(len(r['plans']) for r in rows) - len(wrong)} of {sum(len(r['plans']) for r in rows)} "
        "plans within tolerance of torch" + "".join(f"\n  WRONG {w}" for w in wrong)
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
