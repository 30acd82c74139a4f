"""The tile model's picks against committed plan grids, offline: for each case of each grid
(``plan_grid.py --json``), the plan the model picks among the plans the grid timed, over the
fastest timed plan of the case.  No GPU: it re-weighs what a device call already measured, so a
change of the model's constants or rules is weighed before a device call re-times its picks.

    python benchmarks/model_check.py [GRID.json ...] [--wide-blocks] [--gpu-bound MS] [--worst 12]

Without files: the grids of benchmarks/results/ timed with 1024-element tiles on the current
kernels.  Plans whose tiles the model no longer takes (wider tiles) are left out; the fastest
is over every timed plan.  ``--wide-blocks`` turns ``tilemodel.NARROW`` off (the A/B).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from pytest_fl_contract.util import mnk  # noqa: E402
from pytest_fl_contract.workarounds import tilemodel as tm  # noqa: E402

GRIDS = (
    "gpubound-misses-2026-12-04",
    "host-sites-2026-12-04",
    "seed2027-2026-12-04",
    "slabs-2026-12-04",
    "slabs-midk-2026-12-04",
    "softmax-main-defafe7",
    "softmax-square-tiles-defafe7",
    "tinyk-2026-12-03",
    "seed11-final",
    "realmodels-after",
)
ELEM = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


def device(model: str) -> tm.Device:
    """The grid's device as its header names it ("NAME: 132 SMs, 4.81 TB/s ...")."""
    sms = int(model.split(" SMs")[0].rsplit(" ", 1)[-1])
    tbs = float(model.split(" TB/s")[0].rsplit(" ", 1)[-1])
    return tm.Device(sms, tbs * 1e12, model)


def cases(path: Path) -> list[dict]:
    grid = json.loads(path.read_text())
    dev = device(grid["device_model"])
    out = []
    for row in grid["rows"]:
        shape, dim = row["shape"], row["dim"]
        M, N, K = mnk(shape, dim)
        kind = "softmax" if row["op"] == "softmax" else "reduce"
        timed = []
        for entry in row["plans"]:
            p = entry["plan"]
            plan = (
                tm.SlabPlan(p["slab"], p["splits"])
                if "slab" in p
                else tm.Plan(p["block_r"], p["block_k"], p["warps"], p["splits"], p.get("flat", False))
            )
            timed.append((plan, entry["ms"], entry.get("loop_ms")))
        out.append(
            {
                "name": f"{path.stem.removeprefix('h200-plan-grid-')} {row['op']} {'x'.join(map(str, shape))} "
                f"d{dim} {row['dtype']}",
                "M": M,
                "N": N,
                "K": K,
                "elem": ELEM[row["dtype"]],
                "kind": kind,
                "device": dev,
                "timed": timed,
            }
        )
    return out


def price(case: dict, plan: tm.Plan | tm.SlabPlan) -> tuple[float, float]:
    args = (case["M"], case["N"], case["K"], plan, case["device"], case["elem"], case["kind"])
    return tm.slab_cost(*args) if isinstance(plan, tm.SlabPlan) else tm.cost(*args)  # type: ignore[arg-type]


def weighed(case: dict) -> list[tuple[tm.Plan | tm.SlabPlan, float, float | None]]:
    """The timed plans the model weighs: its tiles, its narrow-block rule, every slab plan."""
    tiles = [t for t in case["timed"] if isinstance(t[0], tm.Plan) and t[0].block_r * t[0].block_k <= max(tm.TILES)]
    keep = set(tm.weighed(case["N"], case["K"], case["elem"], case["kind"], [t[0] for t in tiles]))  # type: ignore[misc]
    return [t for t in tiles if t[0] in keep] + [t for t in case["timed"] if isinstance(t[0], tm.SlabPlan)]


def ratios(all_cases: list[dict], column: int, gpu_bound: float) -> list[tuple[float, str, object]]:
    """(pick / fastest, case, pick) for every case with ``column`` timed (1: do_bench, 2: back to back)."""
    out = []
    for case in all_cases:
        timed = [t for t in case["timed"] if t[column] is not None and t[column] == t[column]]
        if not timed:
            continue
        fastest = min(t[column] for t in timed)
        if fastest < gpu_bound:
            continue
        pool = [t for t in weighed(case) if t[column] is not None and t[column] == t[column]]
        if not pool:  # only plans the model no longer weighs were timed
            continue
        pick = min(pool, key=lambda t: price(case, t[0]))
        out.append((pick[column] / fastest, case["name"], pick[0]))
    return sorted(out, key=lambda r: -r[0])


def summary(label: str, rows: list[tuple[float, str, object]]) -> str:
    values = [r[0] for r in rows]
    if not values:
        return f"{label}: no cases"
    return (
        f"{label}: {len(values)} cases, pick / fastest median {statistics.median(values):.3f}, "
        f"mean {statistics.fmean(values):.3f}, worst {max(values):.2f}, over 1.10x {sum(v > 1.10 for v in values)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("grids", nargs="*", type=Path)
    parser.add_argument("--wide-blocks", action="store_true", help="tilemodel.NARROW off")
    parser.add_argument("--gpu-bound", type=float, default=0.05, help="fastest timed plan at least this many ms")
    parser.add_argument("--worst", type=int, default=12, help="list this many of the worst picks")
    args = parser.parse_args(argv)
    if args.wide_blocks:
        tm.NARROW = {}
    paths = args.grids or [ROOT / "results" / f"h200-plan-grid-{g}.json" for g in GRIDS]
    try:
        all_cases = [c for p in paths for c in cases(p)]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        print(f"model_check: cannot read a plan grid: {exc}")
        return 2
    print(f"{len(paths)} grids, {len(all_cases)} cases, NARROW {tm.NARROW}")
    print(summary("do_bench, every case", ratios(all_cases, 1, 0.0)))
    gpu = ratios(all_cases, 1, args.gpu_bound)
    print(summary(f"do_bench, fastest >= {args.gpu_bound} ms", gpu))
    print(summary("back to back, every case", ratios(all_cases, 2, 0.0)))
    for ratio, name, plan in gpu[: args.worst]:
        print(f"  {ratio:.2f}  {name}  pick {plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
