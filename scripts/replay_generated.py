"""Replay a lane's generated-shape draws one by one and print each that FlagGems gets wrong.

``test_generated`` derives its hypothesis seed from the lane (platform/junit prefix/shard),
so the draws of any lane can be listed and run again outside pytest: on the lane's device
to name the failing draws (the test stops at its first failure per shard), or under the
emulator to ask whether a hardware failure is FlagGems' algorithm or the hardware.

    python scripts/replay_generated.py --lane nvidia/nvidia --shards 8 --device cuda
    python scripts/replay_generated.py --lane nvidia/nvidia --shards 8 --emulate nvidia-h200 --max 32768
"""

from __future__ import annotations

import argparse
import math
import sys


def lane_draws(lane: str, shard: int, examples: int, limit: int) -> list[tuple]:
    """The draws ``test_generated`` makes for this lane and shard (the same for every op)."""
    from hypothesis import HealthCheck, given, seed, settings
    from pytest_fl_contract.contracts.reductions import test_generated as tg

    drawn: list[tuple] = []

    @seed(tg.lane_seed(lane, shard))
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(draw=tg.draws(False, limit))
    def record(draw: tuple) -> None:
        drawn.append(draw)

    record()
    return drawn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", default="nvidia/nvidia", help="platform/junit prefix, as the lane ran")
    parser.add_argument("--shards", type=int, default=8, help="8 on a full sweep, 1 on a quick one")
    parser.add_argument("--budget", type=int, default=200, help="draws per op over all shards (full: 200)")
    parser.add_argument("--limit", type=int, default=2**18, help="the sweep's element limit (full: 2**18)")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: every op)")
    parser.add_argument("--min", type=int, default=0, help="only draws of more elements than this")
    parser.add_argument("--max", type=int, default=2**18, help="only draws of at most this many elements")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--emulate", metavar="PROFILE", help="run FlagGems on the emulator with this profile")
    args = parser.parse_args()

    if args.emulate:
        from pytest_fl_contract.emulation import interpreter
        from pytest_fl_contract.emulation.profiles import get_profile

        interpreter.activate(get_profile(args.emulate))
    import flag_gems  # noqa: F401 - the entry points
    from pytest_fl_contract.contracts.reductions.test_generated import problem_of

    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.registry.schema import flag_gems_version

    version = flag_gems_version()
    chosen = [op for op in ROWS.rows("reductions") if not args.ops or op.name in args.ops.split(",")]
    shards = [lane_draws(args.lane, s, args.budget // args.shards, args.limit) for s in range(args.shards)]
    failures = 0
    for op in chosen:
        if not op.installed():
            print(f"{op.name}: not in flag_gems {version}")
            continue
        for shard, drawn in enumerate(shards):
            for shape, dim, keepdim, dtype in drawn:
                if not args.min < math.prod(shape) <= args.max:
                    continue
                try:
                    problem = problem_of(
                        op,
                        (shape, dim, keepdim, dtype),
                        args.device,
                        routed=False,
                        version=version,
                        emulated=bool(args.emulate),
                    )
                except Exception as exc:  # a crash is a finding too
                    problem = f"raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                if problem:
                    failures += 1
                    print(
                        f"FAIL {op.name} shard{shard} {shape} dim={dim} keepdim={keepdim} {dtype}: {problem[:400]}",
                        flush=True,
                    )
            print(f"done {op.name} shard{shard}", flush=True)
    print(f"{failures} failing draws")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
