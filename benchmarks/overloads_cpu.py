"""The overload suite's cost and counts on a CPU lane: one run of contracts/overloads (quick or
full sweep) under xdist, its wall time, and from its JUnit the statuses per case and per
overload (an overload counts as tested where at least one case ran to a verdict), written as
Markdown to benchmarks/results/.

    python benchmarks/overloads_cpu.py --sweep full [--line 54] [-n 2] [--platform cpu ...]

``--line 54`` puts the 5.4 wheel's install directory (``FL_FG54_SITE``, default
/tmp/fg-5.4.0.dev0) first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = ROOT / "contracts"


def counts(path: Path) -> tuple[collections.Counter, dict[str, set[str]]]:
    statuses: collections.Counter = collections.Counter()
    per: dict[str, set[str]] = collections.defaultdict(set)
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        status = props.get("fl_status", "NONE")
        if any(child.tag == "skipped" and "xfail" in (child.get("type") or "") for child in case):
            status += " (known defect)"
        statuses[status] += 1
        per[props.get("fl_overload", "")].add(status.split(" ")[0])
    return statuses, per


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", choices=["quick", "full"], default="full")
    parser.add_argument("--line", choices=["502", "54"], default="502")
    parser.add_argument("-n", default="2")
    parser.add_argument(
        "--out", default=None, help="Markdown file (default benchmarks/results/cpu-overloads-<line>-<sweep>.md)"
    )
    args, lane = parser.parse_known_args(argv)
    lane = lane or ["--platform", "cpu"]
    site = os.environ.get("FL_FG54_SITE", "/tmp/fg-5.4.0.dev0") if args.line == "54" else ""
    if args.line == "54" and not Path(site).is_dir():
        print(f"overloads_cpu: no 5.4 install at {site} (set FL_FG54_SITE)", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (site, str(ROOT)) if p), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "overloads.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "fl_contract",
            "-c",
            str(CONTRACTS / "pytest.ini"),
            "--rootdir",
            str(CONTRACTS),
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "xdist",
            "-n",
            args.n,
            "-q",
            "--tb=no",
            f"--fl-sweep={args.sweep}",
            f"--junitxml={xml}",
            *lane,
            str(CONTRACTS / "overloads"),
        ]
        start = time.monotonic()
        done = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True)
        wall = time.monotonic() - start
        if not xml.is_file():
            print(
                f"overloads_cpu: the run wrote no report (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}",
                file=sys.stderr,
            )
            return 2
        statuses, per = counts(xml)
    tested = sum(1 for s in per.values() if s - {"UNTESTED"})
    lines = [
        f"# Overload suite, {args.sweep} sweep, FlagGems line {args.line}, {' '.join(lane)}",
        "",
        f"`{' '.join(['python', 'benchmarks/overloads_cpu.py', *(argv or sys.argv[1:])])}` - "
        f"{wall:.0f} s wall with -n {args.n} (pytest exit {done.returncode})",
        "",
        f"Overloads: {len(per)} in the table, {tested} with a case that ran, {len(per) - tested} UNTESTED "
        f"({100 * (len(per) - tested) / max(len(per), 1):.1f}%)",
        "",
        "| status | cases |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in sorted(statuses.items())]
    failing = sorted(name for name, s in per.items() if s & {"WRONG", "FAULT", "ERROR", "TIMEOUT"})
    lines += ["", f"Overloads with a failing case: {', '.join(failing) or 'none'}", ""]
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"cpu-overloads-{args.line}-{args.sweep}.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
