"""Seconds per op and shape for FlagGems' real kernels on Triton's interpreter (the CPU
lane), per device profile, with and without the emulated defect and through the
workaround's fast path and moved-axis path.  Cost follows the grid size (programs run
one by one in Python), so the grid is printed next to each figure.

    python benchmarks/bench_interpreter.py [--profile nvidia-small] [--repeat 3]
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="nvidia-small")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from pytest_fl_contract.emulation import device
    from pytest_fl_contract.emulation.interpreter import bring_up

    bring_up(args.profile)
    import flag_gems
    import torch

    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.registry.coverage import non_inner_kernels
    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import masked_reductions as mr

    chosen = [
        op
        for op in ROWS.rows("reductions")
        if op.installed() and op.interpreter != "toy" and non_inner_kernels(sys.modules[op.module])
    ]
    shapes = [((3, 5, 64), 1), ((13, 64), 0), ((3, 64, 13), -1), ((2, 556, 8), 1), ((16, 4, 64), 1), ((556, 4, 64), 1)]

    def seconds(fn) -> float:
        best = math.inf
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        return best

    print(
        f"## FlagGems {flag_gems.__version__} on the interpreter, profile {args.profile} "
        f"(best of {args.repeat}, seconds)\n"
    )
    print("| op | shape | dim | native | native + defect | fast path | moved axis |")
    print("|---|---|---:|---:|---:|---:|---:|")
    total = 0.0
    for op in chosen:
        original = op.fn()
        wrapped = mr.make_wrapper(original, mr.Target(op, op.entries[0]))
        for shape, dim in shapes:
            if op.known_defects(shape, dim):
                continue  # a FlagGems defect (argmax_tile_not_pow2): this case cannot compile
            x = torch.randn(shape)
            native = seconds(functools.partial(op.invoke, original, x, op.dim_arg(dim)))
            device.enable("masked_2d_row_load")
            broken = seconds(functools.partial(op.invoke, original, x, op.dim_arg(dim)))
            device.disable()
            fast = seconds(functools.partial(op.invoke, wrapped, x, op.dim_arg(dim)))
            with fastpath.disabled():
                moved = seconds(functools.partial(op.invoke, wrapped, x, op.dim_arg(dim)))
            total += native + broken + fast + moved
            print(
                f"| {op.name} | {shape} | {dim} | {native:.3f} | {broken:.3f} | {fast:.3f} | {moved:.3f} |", flush=True
            )
    print(f"\ntotal {total:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
