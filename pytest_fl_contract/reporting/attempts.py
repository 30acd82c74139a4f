"""A test run again in one session is a retried test: its last attempt does not speak for it.

Retrying plugins (pytest-rerunfailures' ``--reruns``, ``@pytest.mark.flaky``, pytest-retry,
flaky) run a failed test again and report only the attempt that passed: the report, the
JUnit file and the exit status say nothing of the failure.  But a result that changes
between identical runs is the very defect class the contracts hunt (nondeterminism), so
under the plugin a retry never hides a failure: an attempt that passes (or skips) after an
attempt of the same test failed is reported failed, saying how many attempts failed - the
runner's own ``--rerun-failures`` reads "nondeterministic result" the same way.

It watches reports as pytest makes them (``pytest_runtest_makereport``), whoever asks for
them, so it needs no knowledge of the retrying plugin: an attempt is a setup report, a
retry a second one, or a second call report within one (plugins that retry only the call).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

RETRIED = "fl-contract: retried"  # the message a retried test's report begins with


@dataclass
class _Seen:
    round: int = 0  # the attempt in progress (1 for the first)
    called: bool = False  # the attempt in progress made its call report
    failed: set[int] = field(default_factory=set)  # the attempts in which a phase failed


def verdict(attempt: int, failed_before: bool, when: str, outcome: str) -> str | None:
    """The message that turns a report into a failure, or None to leave it: a report of a
    retry (``attempt`` > 1) whose call passed or skipped (or whose setup skipped) where an
    earlier attempt of the same test failed.  Pure: the hook below records and applies."""
    if attempt < 2 or not failed_before or outcome == "failed":
        return None
    if not (when == "call" or (when == "setup" and outcome == "skipped")):
        return None
    return (
        f"{RETRIED}: it failed before, then {outcome} in attempt {attempt}: a result that changes between "
        "identical runs is a nondeterministic result, never a pass"
    )


class Attempts:
    """Registered by the plugin in a lane's run (``plugin.pytest_configure``)."""

    def __init__(self) -> None:
        self.seen: dict[str, _Seen] = {}

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        result = yield
        report = result.get_result()
        seen = self.seen.setdefault(item.nodeid, _Seen())
        if report.when == "setup" or (report.when == "call" and seen.called):
            seen.round, seen.called = seen.round + 1, False  # a new attempt (a call-only retry too)
        seen.called |= report.when == "call"
        attempt = max(seen.round, 1)
        message = verdict(attempt, any(n < attempt for n in seen.failed), report.when, report.outcome)
        if report.failed:
            seen.failed.add(attempt)
        if message is not None:
            report.outcome = "failed"
            report.longrepr = message
            if hasattr(report, "wasxfail"):
                del report.wasxfail
