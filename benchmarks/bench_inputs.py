"""Seconds the lane tools take on large inputs: `check` of a manifest with many steps, `import`
of a torch_fl file with many same-named tests, `report` of a large JUnit file.  Prints one
line per case (issue 27: `import` of 19,000 same-named tests took 225 s, `check` of 10,000
steps 15.7 s).  Usage: python benchmarks/bench_inputs.py [--scale 1.0]"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "pytest_fl_contract.cli"]


def timed(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every input size")
    scale = parser.parse_args().scale
    steps, tests, cases = int(10_000 * scale), int(9_000 * scale), int(100_000 * scale)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = root / "m.yaml"
        body = "".join(f"      - {{name: s{i}, command: [true]}}\n" for i in range(steps))
        manifest.write_text(f"lanes:\n  l:\n    platform: cpu\n    steps:\n{body}")
        seconds, code = timed([*CLI, "check", str(manifest)])
        print(f"check, one lane of {steps} steps: {seconds:.2f} s (exit {code})")
        config = root / "cuda.yml"
        config.write_text(
            "integration_tests:\n" + "".join(f"  - {{name: t, command: 'true {i}'}}\n" for i in range(tests))
        )
        seconds, code = timed([*CLI, "import", str(config), "-o", str(root / "out.yaml")])
        print(f"import, {tests} tests of one name: {seconds:.2f} s (exit {code})")
        xml = root / "big.xml"
        xml.write_text(
            f'<testsuites><testsuite name="s" tests="{cases}">'
            + "".join(f'<testcase classname="c" name="t{i}"/>' for i in range(cases))
            + "</testsuite></testsuites>"
        )
        seconds, code = timed([*CLI, "report", str(xml)])
        print(f"report, {cases} cases: {seconds:.2f} s (exit {code})")


if __name__ == "__main__":
    main()
