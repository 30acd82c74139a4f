"""Order and isolation: is a failure the case's own, the order it ran in, or chance?

Each failing case is re-run alone in a fresh process.  Failing alone, it is the case's own
("alone").  Passing alone, it is re-run after the cases that ran before it in the lane
(the report's order): failing there, it depends on one of them, found by halving that list
(a fresh process per try, about log2(n) of them) and named ("order", the pair); passing
there too, the first failure was chance ("flaky").  A case whose re-run could not say
(pytest never reported it, or it timed out) is "unknown", never a pass.

``run`` is any function that runs a list of case keys in that order in one fresh process
and returns each one's outcome (``rerun.Runner.run``); the classification is pure logic over
it, so it is tested with a planted suite and with a table of outcomes alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..results.cases import FAILING

Run = Callable[[Sequence[str]], Mapping[str, str]]
KINDS = ("alone", "order", "flaky", "unknown")


@dataclass(frozen=True)
class Finding:
    key: str
    kind: str  # alone | order | flaky | unknown
    after: tuple[str, ...] = ()  # order: the case(s) it fails after
    runs: int = 0  # fresh processes it took
    detail: str = ""

    def line(self) -> str:
        if self.kind == "alone":
            return f"{self.key}: fails alone in a fresh process"
        if self.kind == "order":
            return f"{self.key}: passes alone, fails after {', '.join(self.after)} (order-dependent)"
        if self.kind == "flaky":
            return f"{self.key}: passes alone and after the cases before it (flaky)"
        return f"{self.key}: could not tell ({self.detail})"


def _verdict(outcome: str | None) -> str:
    if outcome in FAILING:
        return "fails"
    if outcome in ("passed", "xfailed", "skipped"):
        return "passes"
    return "unknown"


def classify(key: str, before: Sequence[str], run: Run) -> Finding:
    """``key``'s finding; ``before``: the cases that ran before it in the lane, in order."""
    runs = 1
    alone = _verdict(run([key]).get(key))
    if alone == "fails":
        return Finding(key, "alone", runs=runs)
    if alone == "unknown":
        return Finding(key, "unknown", runs=runs, detail="its run alone reported no outcome")
    if not before:
        return Finding(key, "flaky", runs=runs, detail="nothing ran before it")
    runs += 1
    together = _verdict(run([*before, key]).get(key))
    if together == "unknown":
        return Finding(key, "unknown", runs=runs, detail="its run after the others reported no outcome")
    if together == "passes":
        return Finding(key, "flaky", runs=runs)
    suspects = list(before)
    while len(suspects) > 1:
        half = len(suspects) // 2
        first, second = suspects[:half], suspects[half:]
        runs += 1
        if _verdict(run([*first, key]).get(key)) == "fails":
            suspects = first
            continue
        runs += 1
        if _verdict(run([*second, key]).get(key)) == "fails":
            suspects = second
            continue
        break  # it needs cases of both halves: the whole list is named
    return Finding(key, "order", tuple(suspects), runs)


def classify_all(failing: Sequence[str], order: Sequence[str], run: Run, window: int = 64) -> list[Finding]:
    """Every failing case's finding; ``order``: every case of the lane in the order it ran.
    Only the ``window`` cases right before a case are replayed before it: a lane of
    thousands of cases is not re-run whole for each failure (a case that needs one further
    back is "flaky" here, which the finding's line does not hide: it says what was replayed)."""
    position = {key: n for n, key in enumerate(order)}
    out = []
    for key in failing:
        n = position.get(key)
        before = list(order[max(0, n - window) : n]) if n is not None else []
        out.append(classify(key, before, run))
    return out
