"""Seconds per op and shape for FlagGems' real kernels on Triton's interpreter (the CPU
lane), per device profile, with and without the emulated defect and through the
workaround's fast path and moved-axis path.  Cost follows the grid size (programs run
one by one in Python), so the grid is printed next to each figure.

    python benchmarks/bench_interpreter.py [--profile nvidia-small] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="nvidia-small")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from pytest_fl_contract.emulation import defects, interpreter
    from pytest_fl_contract.emulation.profiles import get_profile

    interpreter.activate(get_profile(args.profile))
    import flag_gems  # noqa: F401 - after activation: kernels become interpreted functions
    import torch

    from pytest_fl_contract.workarounds import fastpath
    from pytest_fl_contract.workarounds import masked_reductions as mr

    ops = {
        "sum": (sys.modules["flag_gems.ops.sum"], "sum_dim", lambda d: [d]),
        "mean": (sys.modules["flag_gems.ops.mean"], "mean_dim", lambda d: [d]),
        "softmax": (sys.modules["flag_gems.ops.softmax"], "softmax", lambda d: d),
        "argmax": (sys.modules["flag_gems.ops.argmax"], "argmax", lambda d: d),
    }
    shapes = [((3, 5, 64), 1), ((13, 64), 0), ((3, 64, 13), -1), ((2, 556, 8), 1), ((16, 4, 64), 1), ((556, 4, 64), 1)]
    targets = {t.attr: t for t in mr.TARGETS}

    def seconds(fn) -> float:
        best = math.inf
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        return best

    print(f"## FlagGems 5.0.2 on the interpreter, profile {args.profile} (best of {args.repeat}, seconds)\n")
    print("| op | shape | dim | native | native + defect | fast path | moved axis |")
    print("|---|---|---:|---:|---:|---:|---:|")
    total = 0.0
    for name, (module, attr, form) in ops.items():
        original = getattr(module, attr)
        wrapped = mr.make_wrapper(original, targets[attr])
        for shape, dim in shapes:
            if (
                name == "argmax"
                and mr.route(shape, dim) is not None
                and shape[dim] <= 128
                and shape[dim] & (shape[dim] - 1)
            ):
                continue  # argmax_tile_not_pow2: FlagGems 5.0.2 cannot compile this case
            x = torch.randn(shape)
            arg = form(dim)
            native = seconds(lambda f=original, x=x, a=arg: f(x, a))
            defects.enable("masked_2d_row_load")
            broken = seconds(lambda f=original, x=x, a=arg: f(x, a))
            defects.disable()
            fast = seconds(lambda w=wrapped, x=x, a=arg: w(x, a))
            with fastpath.disabled():
                moved = seconds(lambda w=wrapped, x=x, a=arg: w(x, a))
            total += native + broken + fast + moved
            print(f"| {name} | {shape} | {dim} | {native:.3f} | {broken:.3f} | {fast:.3f} | {moved:.3f} |", flush=True)
    print(f"\ntotal {total:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
