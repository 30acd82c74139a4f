"""``fl-contract run --rerun-failures N``: each failing case of a pytest step again, N times,
each time in a fresh pytest process, to tell a deterministic failure from an intermittent one.

An intermittent failure is the seed's defect class itself - a result that changes between
identical calls - so it stays a failure: its JUnit message says "nondeterministic result",
never retried into green (deqp-runner's Flake, without the pass).

A round counts for a case only when it ran the case (passed or failed it): a round that
left no report, ran out of the step's time or skipped the case says nothing of it.  The
rounds share the step's own time budget (its timeout, cut to what the lane has left), so
re-runs never carry a lane past its timeout_minutes; rounds that do not fit are said.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..reporting import junit
from ..reporting.junit import case_keys
from ..reporting.outcomes import RERUN_ENV
from ..results.cases import RERUN, rows_of


@dataclass(frozen=True)
class Rerun:
    asked: int  # failing cases re-run
    rounds: int  # rounds asked for
    passes: dict[str, int]  # junit key (step-less) -> rounds in which it passed
    lost: int  # rounds that gave no readable report
    ran: dict[str, int] | None = None  # junit key -> rounds that ran it (passed or failed it)
    not_run: int = 0  # rounds never started: the step's time was spent, or the run was cancelled

    def runs(self, key: str) -> int:
        return (self.ran or {}).get(key, self.passes.get(key, 0))

    @property
    def intermittent(self) -> list[str]:
        return sorted(key for key, n in self.passes.items() if n)

    @property
    def unproven(self) -> list[str]:
        """Cases no round ran: neither deterministic nor not."""
        return sorted(key for key in self.passes if not self.runs(key))

    def note(self) -> str:
        flaky = self.intermittent
        unproven = self.unproven
        lost = f"; {self.lost} round(s) gave no report" if self.lost else ""
        skipped = f"; {self.not_run} round(s) not run (out of the step's time, or cancelled)" if self.not_run else ""
        which = f" ({', '.join(flaky[:3])}{', ...' if len(flaky) > 3 else ''})" if flaky else ""
        deterministic = self.asked - len(flaky) - len(unproven)
        unsaid = f", {len(unproven)} not re-run by any round" if unproven else ""
        return (
            f"re-ran {self.asked} failing case(s) {self.rounds} time(s) in fresh processes: "
            f"{deterministic} deterministic, {len(flaky)} nondeterministic result{which}{unsaid}{lost}{skipped}"
        )


def failing_keys(report: junit.Report, lane: str) -> list[str]:
    """Failures and errors worth a re-run: not a strict xpass (a known defect that no
    longer shows is no flake), not the runner's own error case of a crashed step."""
    return sorted(
        {
            row.key.partition("/")[2]
            for row in rows_of(report, lane)
            if row.outcome in ("failed", "error") and not row.key.partition("/")[2].startswith(f"{row.step}::")
        }
    )


RAN = ("passed", "failed", "error", "xpassed")  # outcomes of a round that ran the case


class NotRun(Exception):
    """Raised by a ``run_round`` that cannot start its round (no time left, cancelled)."""


def rerun(keys: list[str], rounds: int, lane: str, run_round: Callable[[Path, dict[str, str]], Path | None]) -> Rerun:
    """``run_round(report_path, extra_env)`` runs the step once with the re-run selection and
    returns its report, or None when it left none; it raises ``NotRun`` for a round it cannot
    start, and no later round starts either."""
    passes = dict.fromkeys(keys, 0)
    ran = dict.fromkeys(keys, 0)
    lost = not_run = 0
    with tempfile.TemporaryDirectory(prefix="fl-rerun-") as scratch:
        selection = Path(scratch) / "keys.txt"
        selection.write_text("".join(f"{key}\n" for key in keys), encoding="utf-8")
        for n in range(rounds):
            try:
                report = run_round(Path(scratch) / f"round{n}.xml", {RERUN_ENV: str(selection)})
            except NotRun:
                not_run = rounds - n
                break
            try:
                parsed = junit.read(report) if report is not None else None
            except (ValueError, OSError):
                parsed = None
            if parsed is None:
                lost += 1
                continue
            for row in rows_of(parsed, lane):
                key = row.key.partition("/")[2]
                if key in passes and row.outcome in RAN:
                    ran[key] += 1
                    passes[key] += row.outcome == "passed"
    return Rerun(len(keys), rounds, passes, lost, ran, not_run)


def label(report: junit.Report, lane: str, result: Rerun) -> junit.Report:
    """The step's report with each re-run failure's message saying what the re-runs showed."""

    def relabel(suite: junit.Suite) -> junit.Suite:
        cases = []
        for case, key in zip(suite.cases, case_keys(suite, lane)):
            if key not in result.passes or case.outcome not in ("failed", "error"):
                cases.append(case)
                continue
            passed, runs = result.passes[key], result.runs(key)
            if passed:
                what = f"nondeterministic result: passed {passed} of {runs} re-runs"
            elif runs:
                what = f"deterministic: failed {runs} of {runs} re-runs"
            else:
                what = f"not re-run: none of the {result.rounds} round(s) ran it"
            results = tuple(
                replace(r, message=f"{RERUN} {what}; {r.message}") if r.kind in ("failure", "error") else r
                for r in case.results
            )
            cases.append(replace(case, results=results))
        return replace(suite, cases=tuple(cases))

    return replace(report, suites=tuple(relabel(s) for s in report.suites))
