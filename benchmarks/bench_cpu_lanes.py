"""Wall time of the three CPU lanes' op contracts through ``fl-contract run`` (the main job's figure;
target: <= 3 minutes together on the 2-core CI with -n auto).

    python benchmarks/bench_cpu_lanes.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time

LANES = ("cpu", "iluvatar-emulated", "iluvatar-emulated-noworkaround")


def main() -> int:
    total = 0.0
    with tempfile.TemporaryDirectory() as reports:
        for lane in LANES:
            start = time.monotonic()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest_fl_contract.cli",
                    "run",
                    lane,
                    "--step",
                    "op_contracts",
                    "--reports",
                    reports,
                ],
                capture_output=True,
                text=True,
            )
            seconds = time.monotonic() - start
            total += seconds
            verdict = [ln for ln in done.stdout.splitlines() if "op_contracts: end" in ln]
            print(
                f"{lane:<32} {seconds:6.1f}s  exit {done.returncode}  {verdict[-1].split(': end ')[-1] if verdict else ''}"
            )
    print(f"{'three CPU lanes':<32} {total:6.1f}s  (target <= 180s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
