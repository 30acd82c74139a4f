"""What the fast path's kernels compile to on an H100/H200 (sm_90), from any machine: each
launch of a case's planned call is compiled as Triton would compile it at that launch (its
own specialisation of the arguments: 16-byte aligned tensors, the plan's constexprs) through
Triton's bundled ptxas, and read back with its bundled cuobjdump: registers, spills, shared
memory, the programs an SM holds at once (against the time model's ``resident``), the bytes
they read a row step (what an SM can have in flight, at most: Little's law asks about
bandwidth x latency / SMs of it to stream at full speed), and the global loads by width
(bytes a thread moves per load instruction).  No GPU, no counters: a
static profile, for the bands a timing cannot explain.

    python benchmarks/kernel_resources.py [--no-k-div] [--json PATH] op:MxNxK:dim:dtype ...
    python benchmarks/kernel_resources.py --real-models
    python benchmarks/kernel_resources.py --no-k-div [--no-unroll] --measured results/h200-sweep-....json ...
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_reductions import parse, planned  # noqa: E402

H200 = {"sms": 132, "bandwidth": 4.81e12, "source": "NVIDIA H200: 132 SMs, 4.81 TB/s (as read on the lent H200s)"}
SM90 = {"regs": 65536, "warps": 64, "programs": 32, "shared": 228 * 1024, "reg_unit": 256}
WIDTH = (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1))


def load_width(opcode: str) -> int:
    """Bytes one thread moves with a global load (``LDG.E.128`` 16, ``LDG.E.U16`` 2, ``LDG.E`` 4)."""
    parts = opcode.split(".")[1:]
    return next((width for tag, width in WIDTH if tag in parts), 4)


def compile_launch(kernel: Any, args: tuple[Any, ...], meta: dict[str, Any]) -> Any:
    """The kernel as Triton compiles it for this launch on sm_90 (``JITFunction.run``'s own
    binding and specialisation, without a device)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    kwargs = dict(meta, debug=False, instrumentation_mode="")
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    return triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target, options=options.__dict__)


def resources(compiled: Any) -> dict[str, Any]:
    """Registers, local (spilled) and shared bytes, and global loads and stores by width."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        usage = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    field = {k: int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", usage)}
    loads = Counter(load_width(op) for op in re.findall(r"\bLDG\.[\w.]+", sass))
    stores = Counter(load_width(op) for op in re.findall(r"\bSTG\.[\w.]+", sass))
    return {
        "regs": field.get("REG", 0),
        "local": field.get("LOCAL", 0),
        "shared": max(field.get("SHARED", 0), int(getattr(compiled.metadata, "shared", 0) or 0)),
        "warps": int(compiled.metadata.num_warps),
        "loads": dict(sorted(loads.items())),
        "stores": dict(sorted(stores.items())),
    }


def resident(regs: int, warps: int, shared: int) -> tuple[int, str]:
    """Programs an sm_90 SM holds at once, and what binds first (of equals, the program
    limit, then warps): registers (allocated per warp in 256-register units), warps, shared
    memory or the program limit."""
    per_warp = -(-regs * 32 // SM90["reg_unit"]) * SM90["reg_unit"]
    limits = {
        "programs": SM90["programs"],
        "warps": SM90["warps"] // warps,
        "registers": SM90["regs"] // (per_warp * warps) if regs else SM90["programs"],
        "shared": SM90["shared"] // (shared + 1024) if shared else SM90["programs"],
    }
    bound = min(limits, key=lambda k: limits[k])
    return limits[bound], bound


def launches(
    op: str, shape: tuple[int, ...], dim: int, dtype: str, k_div: bool, plan: Any = None
) -> tuple[Any, list[tuple[Any, tuple]]]:
    """(the plan, [(site, args)]) of the case's planned call (the model's plan, or ``plan``),
    launched on meta tensors."""
    import torch

    from pytest_fl_contract.testing.spy import planned_launches
    from pytest_fl_contract.workarounds import tilemodel as tm

    x = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
    plan, call = planned(op, shape, dim, x, tm.Device(**H200), plan)
    seen = planned_launches(call, x)
    for site, _ in seen:
        if not k_div and "K_DIV" in site.meta:
            site.meta["K_DIV"] = 1
    return plan, seen


def recorded(plan: dict[str, Any]) -> Any:
    """A sweep row's plan as the tile model's class."""
    from pytest_fl_contract.workarounds import tilemodel as tm

    return tm.SlabPlan(**plan) if "block" in plan else tm.Plan(**plan)


def case(spec: str, k_div: bool = True, plan: Any = None) -> dict[str, Any]:
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import tilemodel as tm

    op, shape, dim, dtype = parse(spec)
    plan, seen = launches(op, shape, dim, dtype, k_div, plan)
    sites = []
    for site, args in seen:
        kernel = getattr(fastpath, site.name)
        got = resources(compile_launch(kernel, args, site.meta))
        programs, bound = resident(got["regs"], got["warps"], got["shared"])
        read = args[kernel.arg_names.index("in_ptr")]
        tile = site.meta["BLOCK_R"] * site.meta["BLOCK_K"] if "BLOCK_R" in site.meta else site.meta["BLOCK"]
        step = tile * read.element_size() * (site.meta.get("UNROLL") or 1)
        model = (
            tm.resident(plan, tm.Device(**H200), "softmax" if op == "softmax" else "reduce")
            if isinstance(plan, tm.Plan) and site is seen[0][0]
            else None
        )
        sites.append(
            {
                "kernel": site.name,
                "k_div": site.meta.get("K_DIV"),
                **got,
                "resident": programs,
                "bound_by": bound,
                "model_resident": model,
                "step_bytes": step,
                "in_flight_kb": programs * step / 1024,
            }
        )
    return {"case": spec, "plan": vars(plan), "sites": sites}


def widths(loads: dict[int, int]) -> str:
    return " ".join(f"{n}x{w}B" for w, n in sorted(loads.items(), reverse=True)) or "-"


def measured_cases(paths: list[str], min_mb: float) -> list[tuple[str, Any, float]]:
    """(case, recorded plan, copy share) of each sweep row over ``min_mb`` MB, once per case."""
    out, seen = [], set()
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for row in data.get("rows", []) if isinstance(data, dict) else []:
            spec = f"{row['op']}:{'x'.join(map(str, row['shape']))}:{row['dim']}:{row['dtype']}"
            if row.get("bytes", 0) > min_mb * 2**20 and "fast_copy_share" in row and spec not in seen:
                seen.add(spec)
                out.append((spec, recorded(row["plan"]), row["fast_copy_share"]))
    return out


def bands(rows: list[dict[str, Any]]) -> list[str]:
    """Median copy share by dtype and by the KB an SM reads a row step (the launch that reads
    the input): does the share follow what an SM can have in flight?"""
    import statistics

    edges = (0, 16, 24, 40, 56, 1e9)
    by: dict[tuple[str, int], list[float]] = {}
    for row in rows:
        kb = row["sites"][0]["in_flight_kb"]
        band = next(i for i in range(len(edges) - 1) if edges[i] <= kb < edges[i + 1])
        by.setdefault((row["case"].rsplit(":", 1)[1], band), []).append(row["share"])
    lines = ["| dtype | KB a row step an SM | cases | copy share (median) |", "|---|---|---:|---:|"]
    for (dtype, band), shares in sorted(by.items()):
        high = "" if edges[band + 1] > 1e8 else f" - {edges[band + 1]:g}"
        lines.append(f"| {dtype} | {edges[band]:g}{high} | {len(shares)} | {100 * statistics.median(shares):.0f}% |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shapes", nargs="*", help="op:MxNxK:dim:dtype")
    parser.add_argument("--real-models", action="store_true", help="every case of benchmarks/real_models.py")
    parser.add_argument(
        "--measured",
        action="append",
        default=[],
        metavar="SWEEP.json",
        help="the cases of a bench_reductions.py run, each with its recorded plan, its measured copy "
        "share beside (repeatable); with --no-k-div, as they ran before K_DIV",
    )
    parser.add_argument("--min-mb", type=float, default=64.0, help="--measured: cases over this many MB read")
    parser.add_argument(
        "--no-k-div", action="store_true", help="launch as before K_DIV (K_DIV=1): loads Triton proves alone"
    )
    parser.add_argument(
        "--no-unroll",
        action="store_true",
        help="one-launch softmax tiles not unrolled, as sweeps before fastpath.SOFTMAX_UNROLL ran them",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.no_unroll:
        from pytest_fl_contract.workarounds import fastpath

        fastpath.SOFTMAX_UNROLL = None
    todo: list[tuple[str, Any, float | None]] = [(spec, None, None) for spec in args.shapes]
    if args.real_models:
        from real_models import cases

        todo += [(spec, None, None) for spec in cases()]
    try:
        todo += measured_cases(args.measured, args.min_mb)
    except (OSError, ValueError, KeyError, TypeError) as error:
        parser.error(f"--measured: not a bench_reductions.py run ({type(error).__name__}: {error})")
    if not todo:
        parser.error("give op:MxNxK:dim:dtype cases, --real-models or --measured")
    rows = []
    for spec, plan, share in todo:
        row = case(spec, not args.no_k_div, plan)
        if share is not None:
            row["share"] = share
        rows.append(row)
        for site in row["sites"]:
            print(
                f"{spec:36} {site['kernel']:30} K_DIV {site['k_div'] or '-':>2}  {site['regs']:3} regs "
                f"{site['local']:3} B spilled  {site['warps']} warps  {site['resident']:2} programs/SM "
                f"({site['bound_by']}; model {site['model_resident'] or '-'})  {site['in_flight_kb']:5.1f} KB a step "
                f"an SM  loads {widths(site['loads'])}" + ("" if share is None else f"  copy share {100 * share:.0f}%"),
                flush=True,
            )
    if any("share" in row for row in rows):
        print("\n".join(["", *bands([row for row in rows if "share" in row])]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"target": "sm_90", "k_div": not args.no_k_div, "unroll": not args.no_unroll, "rows": rows}, f, indent=1
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
