"""Where a grid-limit case's check spends its time on one CPU thread (an xdist worker's
share): the float64 reference and comparison of a (2, 2**26 + 3) reduction over dim 0,
FlagGems' result stood in for by torch's own.

    python benchmarks/profile_grid_check.py var_mean var vector_norm [--top 20]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ops", nargs="+")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    import torch
    from pytest_fl_contract.contracts.reductions.sweeps import disagreement

    from pytest_fl_contract.registry import ROWS

    torch.set_num_threads(1)
    x = torch.randn(2, 2**26 + 3)
    for name in args.ops:
        op = ROWS.get(name)
        got = op.torch_fn(x, 0, False)
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        problem = disagreement(op, lambda got=got: got, x, 0)
        profile.disable()
        print(f"{name}: check {time.perf_counter() - start:.2f} s, {problem or 'agrees'}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
