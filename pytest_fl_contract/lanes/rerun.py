"""``fl-contract run --rerun-failures N``: each failing case of a pytest step again, N times,
each time in a fresh pytest process, to tell a deterministic failure from an intermittent one.

An intermittent failure is the seed's defect class itself - a result that changes between
identical calls - so it stays a failure: its JUnit message says "nondeterministic result",
never retried into green (deqp-runner's Flake, without the pass).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..reporting.outcomes import RERUN_ENV
from ..results.cases import RERUN, case_keys, rows_of
from . import junit


@dataclass(frozen=True)
class Rerun:
    asked: int  # failing cases re-run
    rounds: int
    passes: dict[str, int]  # junit key (step-less) -> rounds in which it passed
    lost: int  # rounds that gave no readable report

    @property
    def intermittent(self) -> list[str]:
        return sorted(key for key, n in self.passes.items() if n)

    def note(self) -> str:
        flaky = self.intermittent
        lost = f"; {self.lost} round(s) gave no report" if self.lost else ""
        which = f" ({', '.join(flaky[:3])}{', ...' if len(flaky) > 3 else ''})" if flaky else ""
        return (f"re-ran {self.asked} failing case(s) {self.rounds} time(s) in fresh processes: "
                f"{self.asked - len(flaky)} deterministic, {len(flaky)} nondeterministic result{which}{lost}")


def failing_keys(report: junit.Report, lane: str) -> list[str]:
    """Failures and errors worth a re-run: not a strict xpass (a known defect that no
    longer shows is no flake), not the runner's own error case of a crashed step."""
    return sorted({row.key.partition("/")[2] for row in rows_of(report, lane)
                   if row.outcome in ("failed", "error") and not row.key.partition("/")[2].startswith(f"{row.step}::")})


def rerun(keys: list[str], rounds: int, lane: str, run_round: Callable[[Path, dict[str, str]], Path | None]) -> Rerun:
    """``run_round(report_path, extra_env)`` runs the step once with the re-run selection and
    returns its report, or None when it left none."""
    passes = dict.fromkeys(keys, 0)
    lost = 0
    with tempfile.TemporaryDirectory(prefix="fl-rerun-") as scratch:
        selection = Path(scratch) / "keys.txt"
        selection.write_text("".join(f"{key}\n" for key in keys), encoding="utf-8")
        for n in range(rounds):
            report = run_round(Path(scratch) / f"round{n}.xml", {RERUN_ENV: str(selection)})
            try:
                parsed = junit.read(report) if report is not None else None
            except (ValueError, OSError):
                parsed = None
            if parsed is None:
                lost += 1
                continue
            for row in rows_of(parsed, lane):
                key = row.key.partition("/")[2]
                if key in passes and row.outcome == "passed":
                    passes[key] += 1
    return Rerun(len(keys), rounds, passes, lost)


def label(report: junit.Report, lane: str, result: Rerun) -> junit.Report:
    """The step's report with each re-run failure's message saying what the re-runs showed."""

    def relabel(suite: junit.Suite) -> junit.Suite:
        cases = []
        for case, key in zip(suite.cases, case_keys(suite, lane)):
            if key not in result.passes or case.outcome not in ("failed", "error"):
                cases.append(case)
                continue
            passed = result.passes[key]
            what = (f"nondeterministic result: passed {passed} of {result.rounds} re-runs" if passed
                    else f"deterministic: failed {result.rounds} of {result.rounds} re-runs")
            results = tuple(replace(r, message=f"{RERUN} {what}; {r.message}") if r.kind in ("failure", "error")
                            else r for r in case.results)
            cases.append(replace(case, results=results))
        return replace(suite, cases=tuple(cases))

    return replace(report, suites=tuple(relabel(s) for s in report.suites))
