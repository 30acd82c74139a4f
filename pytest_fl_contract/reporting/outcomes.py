"""Outcomes as data, and the one summariser that the terminal, JUnit and the lane runner share.

Each test report becomes a ``CaseRecord`` (its outcome, the op and contract it checks, the
known defect it was expected to show); a ``Summary`` folds records into skips by reason,
known defects xfailed/xpassed, failures per op and contract, and the emulator's counters.
The plugin prints the summary and writes it into the JUnit file as one suite property
(``fl_summary``, JSON: valid xunit2, unlike per-case properties); the runner reads that
property back into the same ``Summary`` and renders it as Markdown.  Nothing is parsed
back out of human-readable text.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..util import md_code, md_text, one_line, safe_text

PROPERTY = "fl_summary"
CASES = "fl_cases"  # per case: op, contract, known defect (JSON keyed by junit_key) - for compare and parity
# The overload suite's per-case interface (issue 57): each case records fl_overload, fl_status,
# fl_detail, fl_transform and fl_sample (``record_property``).  pytest writes them inside the
# ``<testcase>``, which xunit2 has no place for and the runner's rewrite drops, so the session
# also folds them into the case's ``fl_cases`` tag (under these names, without ``fl_``).
OVERLOAD_FIELDS = ("overload", "status", "detail", "transform", "sample")


def overload_fields(properties: Iterable[tuple[str, object]]) -> dict[str, str]:
    """The overload interface's fields among a case's properties (``fl_status`` -> ``status``),
    each one line (a detail is shown, never parsed); the last value of a name recorded twice."""
    wanted = {f"fl_{name}": name for name in OVERLOAD_FIELDS}
    return {wanted[name]: one_line(value, 300) for name, value in properties if name in wanted}


RERUN_ENV = "FL_CONTRACT_RERUN"  # a file of junit_keys: the runner re-runs only these cases


def rerun_keys(environ: Mapping[str, str]) -> frozenset[str] | None:
    """The cases a re-run of failures asks for (``fl-contract run --rerun-failures``), or None."""
    path = environ.get(RERUN_ENV)
    if not path:
        return None
    with open(path, encoding="utf-8") as handle:
        return frozenset(line.rstrip("\n") for line in handle if line.strip())


def junit_key(nodeid: str) -> str:
    """A case's identity as its JUnit file spells it, without the lane's prefix:
    ``reductions.test_dims::test_every_dim[sum-2x3-d0]`` (classname, then name)."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]) + "::" + names[-1]


@dataclass(frozen=True)
class CaseTag:
    """What a contract case checks; the contracts' conftest puts it on each item."""

    op: str | None = None
    contract: str | None = None


@dataclass(frozen=True)
class CaseRecord:
    outcome: str
    op: str | None = None
    contract: str | None = None
    defect: str | None = None  # the known defect this case was a strict xfail for
    skip_reason: str | None = None


def record_of(report: Any) -> CaseRecord | None:
    """The record of one pytest report, or None for a phase that decides nothing
    (a passed setup or teardown).  ``report.fl_case`` is what the plugin attached when the
    report was made (op, contract, defect, xpass), in the process that ran the test."""
    tag = getattr(report, "fl_case", None) or {}
    common = {"op": tag.get("op"), "contract": tag.get("contract"), "defect": tag.get("defect")}
    if report.skipped:
        if hasattr(report, "wasxfail"):
            return CaseRecord("xfailed", **common)
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        return CaseRecord("skipped", **common, skip_reason=reason.removeprefix("Skipped: "))
    if report.failed:
        if tag.get("xpass"):
            return CaseRecord("xpassed", **common)
        return CaseRecord("failed" if report.when == "call" else "error", **common)
    if report.when == "call":
        return CaseRecord("xpassed" if hasattr(report, "wasxfail") else "passed", **common)
    return None


@dataclass
class Summary:
    outcomes: Counter = field(default_factory=Counter)
    skips: Counter = field(default_factory=Counter)  # reason -> n
    defects: dict[str, Counter] = field(default_factory=dict)  # defect -> Counter(xfailed=, xpassed=)
    failures: dict[str, Counter] = field(default_factory=dict)  # op -> Counter(contract -> n)
    counters: Counter = field(default_factory=Counter)  # what the emulated defect did

    def add(self, record: CaseRecord) -> None:
        self.outcomes[record.outcome] += 1
        if record.outcome == "skipped":
            self.skips[record.skip_reason or "(no reason)"] += 1
        if record.defect and record.outcome in ("xfailed", "xpassed"):
            self.defects.setdefault(record.defect, Counter())[record.outcome] += 1
        if record.outcome in ("failed", "error", "xpassed") and record.op:
            self.failures.setdefault(record.op, Counter())[record.contract or "?"] += 1

    def merge(self, other: Summary) -> Summary:
        self.outcomes.update(other.outcomes)
        self.skips.update(other.skips)
        self.counters.update(other.counters)
        for defect, seen in other.defects.items():
            self.defects.setdefault(defect, Counter()).update(seen)
        for op, contracts in other.failures.items():
            self.failures.setdefault(op, Counter()).update(contracts)
        return self

    def extend(self, records: Iterable[CaseRecord]) -> Summary:
        for record in records:
            self.add(record)
        return self

    # -- the three renderings -------------------------------------------------------------

    def terminal_lines(self) -> list[str]:
        """Skips grouped by reason, known defects, emulator counters: a skip is never a pass."""
        lines: list[str] = []
        if self.skips:
            lines.append(f"skipped ({sum(self.skips.values())}), by reason:")
            lines += [f"  {n:5d}  {reason}" for reason, n in self.skips.most_common()]
        for defect, seen in sorted(self.defects.items()):
            note = " - the defect no longer shows: fixed compiler?" if seen["xpassed"] else ""
            lines.append(
                f"known defect {defect}: {seen['xfailed']} xfailed (still present), {seen['xpassed']} xpassed{note}"
            )
        for op, contracts in sorted(self.failures.items()):
            detail = ", ".join(f"{k} {v}" for k, v in sorted(contracts.items()))
            lines.append(f"failing contracts of {op}: {sum(contracts.values())} ({detail})")
        if any(self.counters.values()):
            lines.append("emulated defect: " + ", ".join(f"{k}={v}" for k, v in self.counters.items()))
        return lines

    def markdown(self, step: str) -> list[str]:
        """Everything quoted from tests (op, contract and defect names, skip reasons) is
        inert here: a reason with newlines cannot add a heading, a table or an image."""
        out: list[str] = []
        step = md_text(step)
        if self.failures:
            out += ["", f"**{step}: failing contracts by op**", ""]
            for op, contracts in sorted(self.failures.items()):
                detail = ", ".join(f"{md_text(k)} {v}" for k, v in sorted(contracts.items()))
                out.append(f"- {md_code(op)}: {sum(contracts.values())} ({detail})")
        if self.skips:
            out += ["", f"**{step}: skipped by reason**", ""]
            out += [f"- {n} x {md_text(reason)}" for reason, n in self.skips.most_common()]
        for defect, seen in sorted(self.defects.items()):
            note = " - no longer shows: fixed?" if seen["xpassed"] else ""
            out.append(f"- known defect {md_code(defect)}: {seen['xfailed']} xfailed, {seen['xpassed']} xpassed{note}")
        return out

    def to_json(self) -> str:
        return json.dumps(
            {
                "outcomes": dict(self.outcomes),
                "skips": dict(self.skips),
                "defects": {k: dict(v) for k, v in self.defects.items()},
                "failures": {k: dict(v) for k, v in self.failures.items()},
                "counters": dict(self.counters),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Summary:
        """Raises ValueError when ``text`` is not a summary this module wrote."""
        try:
            data = safe_text(json.loads(text))  # a lone surrogate no output can encode is an escape
            if not isinstance(data, dict):
                raise TypeError("not an object")
            return cls(
                outcomes=Counter(_counts(data.get("outcomes", {}))),
                skips=Counter(_counts(data.get("skips", {}))),
                defects={str(k): Counter(_counts(v)) for k, v in dict(data.get("defects", {})).items()},
                failures={str(k): Counter(_counts(v)) for k, v in dict(data.get("failures", {})).items()},
                counters=Counter(_counts(data.get("counters", {}))),
            )
        except RecursionError:
            raise ValueError(f"malformed {PROPERTY} property: nested too deeply") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed {PROPERTY} property: {exc}") from None


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a mapping of counts, got {type(value).__name__}")
    out = {}
    for key, n in value.items():
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"count {key!r} is not an integer")
        out[str(key)] = n
    return out
