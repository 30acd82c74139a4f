"""Where a lane's time goes, from its JUnit report: worker seconds per contract and per op,
the slowest cases, and the outcome counts (a lane's wall time is these over its workers).

    python benchmarks/lane_times.py out/lane-cold.xml [--top 15]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict

from junitparser import Error, Failure, JUnitXml, Skipped

from pytest_fl_contract.registry import ROWS  # every row, of every family

NAMES = sorted(ROWS.names(), key=len, reverse=True)  # log_softmax before softmax


def outcome(case) -> str:
    kinds = {type(r) for r in case.result}
    if Failure in kinds or Error in kinds:
        return "failed"
    if Skipped in kinds:
        skip = next(r for r in case.result if isinstance(r, Skipped))
        return "xfailed" if (skip.type or "").endswith("xfail") or "xfail" in (skip.message or "") else "skipped"
    return "passed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xml")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    try:
        xml = JUnitXml.fromfile(args.xml)
    except Exception as exc:  # a missing or truncated report is one line, not a traceback
        print(f"lane_times: cannot read {args.xml}: {exc}", file=sys.stderr)
        return 2
    cases = [c for suite in (xml if hasattr(xml, "__iter__") else [xml]) for c in suite]
    by_contract: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    outcomes: Counter[str] = Counter()
    rows = []
    for case in cases:
        t = float(case.time or 0.0)
        module = re.sub(r".*test_", "", (case.classname or "").split(".")[-1] or "")
        op = next((o for o in NAMES if re.search(rf"(^|[\[\-_]){o}([\]\-]|$)", case.name or "")), "-")
        by_contract[module] += t
        by_op[op] += t
        outcomes[outcome(case)] += 1
        rows.append((t, f"{case.classname}::{case.name}"))
    total = sum(t for t, _ in rows)
    print(
        f"{len(rows)} cases, {total:.0f} s of worker time; " + ", ".join(f"{n} {k}" for k, n in outcomes.most_common())
    )
    for title, table in (("contract", by_contract), ("op", by_op)):
        print(f"by {title}: " + ", ".join(f"{k} {v:.0f} s" for k, v in sorted(table.items(), key=lambda kv: -kv[1])))
    print(f"slowest {args.top}:")
    for t, name in sorted(rows, reverse=True)[: args.top]:
        print(f"  {t:7.2f} s  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
