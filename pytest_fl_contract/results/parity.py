"""``fl-contract parity REPORT...``: op x contract x lane, the cross-lane view ROCm's
AGREE/DISAGREE reports and Intel's pass rates give - each cell what that lane's cases of the
op and contract did (failed, a known defect, passed, skipped and why), an "also failing in"
column, and a pass rate per lane whose formula is stated with it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..util import FlContractError, md_code, md_text
from .cases import LaneReport, Row

RATE = "pass rate = passed / (passed + failed + errors + xpassed); skips and known defects (strict xfails) are left out"


@dataclass(frozen=True)
class Cell:
    state: str  # failed | defect | passed | skipped | absent
    counts: tuple[tuple[str, int], ...]  # outcome -> cases
    defects: tuple[str, ...] = ()
    reason: str = ""  # the commonest skip reason, for an all-skipped cell

    @property
    def label(self) -> str:
        seen = dict(self.counts)
        total = sum(seen.values())
        if self.state == "failed":
            failing = seen.get("failed", 0) + seen.get("error", 0) + seen.get("xpassed", 0)
            return f"failed {failing}/{total}"
        if self.state == "defect":
            return f"known defect {', '.join(self.defects)} ({seen.get('xfailed', 0)}/{total})"
        if self.state == "passed":
            return f"passed {seen.get('passed', 0)}/{total}"
        if self.state == "skipped":
            return f"skipped: {self.reason}"
        return "-"


def cell_of(rows: Sequence[Row]) -> Cell:
    if not rows:
        return Cell("absent", ())
    seen = Counter(row.outcome for row in rows)
    counts = tuple(sorted(seen.items()))
    if seen["failed"] or seen["error"] or seen["xpassed"]:
        return Cell("failed", counts)
    if seen["xfailed"]:
        return Cell("defect", counts, tuple(sorted({r.defect for r in rows if r.defect and r.outcome == "xfailed"})))
    if seen["passed"]:
        return Cell("passed", counts)
    reasons = Counter(r.message for r in rows if r.outcome == "skipped")
    return Cell("skipped", counts, (), reasons.most_common(1)[0][0] if reasons else "")


@dataclass(frozen=True)
class Rate:
    lane: str
    passed: int
    failing: int
    skipped: int
    xfailed: int

    @property
    def value(self) -> float | None:
        denominator = self.passed + self.failing
        return self.passed / denominator if denominator else None

    @property
    def shown(self) -> str:
        return "-" if self.value is None else f"{100 * self.value:.1f}%"


@dataclass(frozen=True)
class Matrix:
    lanes: tuple[str, ...]
    rows: tuple[tuple[str, str], ...]  # (op, contract)
    cells: dict[tuple[str, str, str], Cell]  # (op, contract, lane)
    rates: tuple[Rate, ...]

    def cell(self, op: str, contract: str, lane: str) -> Cell:
        return self.cells.get((op, contract, lane), Cell("absent", ()))

    def also_failing(self, op: str, contract: str) -> list[str]:
        return [lane for lane in self.lanes if self.cell(op, contract, lane).state == "failed"]

    def op_rate(self, op: str, lane: str) -> Rate:
        """The op's pass rate on the lane, over every contract (the same formula)."""
        seen: Counter = Counter()
        for (o, _, where), cell in self.cells.items():
            if o == op and where == lane:
                seen.update(dict(cell.counts))
        return Rate(
            lane, seen["passed"], seen["failed"] + seen["error"] + seen["xpassed"], seen["skipped"], seen["xfailed"]
        )

    @property
    def ops(self) -> list[str]:
        return sorted({op for op, _ in self.rows})


def matrix(reports: Sequence[LaneReport]) -> Matrix:
    names = [r.lane for r in reports]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise FlContractError(f"lane {twice[0]} is given twice: parity compares different lanes")
    if len(reports) < 2:
        raise FlContractError("parity needs the reports of two lanes or more")
    grouped: dict[tuple[str, str, str], list[Row]] = {}
    rates = []
    for report in reports:
        seen = Counter(row.outcome for row in report.rows)
        rates.append(
            Rate(
                report.lane,
                seen["passed"],
                seen["failed"] + seen["error"] + seen["xpassed"],
                seen["skipped"],
                seen["xfailed"],
            )
        )
        for row in report.rows:
            op = row.op or "-"
            contract = row.contract or row.step
            grouped.setdefault((op, contract, report.lane), []).append(row)
    rows = sorted({(op, contract) for op, contract, _ in grouped})
    cells = {key: cell_of(value) for key, value in grouped.items()}
    return Matrix(tuple(names), tuple(rows), cells, tuple(rates))


def markdown(result: Matrix, only_disagreeing: bool = False) -> str:
    out = [
        "### fl-contract parity",
        "",
        f"{RATE}.",
        "",
        "| lane | pass rate | passed | failing | known defects | skipped |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    out += [
        f"| {md_text(r.lane)} | {r.shown} | {r.passed} | {r.failing} | {r.xfailed} | {r.skipped} |"
        for r in result.rates
    ]
    out += [
        "",
        "| op | contract | " + " | ".join(md_text(lane) for lane in result.lanes) + " | also failing in |",
        "|---|---|" + "---|" * len(result.lanes) + "---|",
    ]
    for op, contract in result.rows:
        states = {result.cell(op, contract, lane).state for lane in result.lanes} - {"absent"}
        if only_disagreeing and len(states) <= 1:
            continue
        cells = " | ".join(md_text(result.cell(op, contract, lane).label) for lane in result.lanes)
        failing = ", ".join(result.also_failing(op, contract)) or "-"
        out.append(f"| {md_code(op)} | {md_text(contract)} | {cells} | {md_text(failing)} |")
    return "\n".join(out) + "\n"


def to_json(result: Matrix) -> str:
    return json.dumps(
        {
            "formula": RATE,
            "lanes": list(result.lanes),
            "rates": [
                {
                    "lane": r.lane,
                    "rate": r.value,
                    "passed": r.passed,
                    "failing": r.failing,
                    "xfailed": r.xfailed,
                    "skipped": r.skipped,
                }
                for r in result.rates
            ],
            "cells": [
                {
                    "op": op,
                    "contract": contract,
                    "lane": lane,
                    "state": result.cell(op, contract, lane).state,
                    "label": result.cell(op, contract, lane).label,
                    "counts": dict(result.cell(op, contract, lane).counts),
                }
                for op, contract in result.rows
                for lane in result.lanes
            ],
        },
        indent=1,
        sort_keys=True,
    )
