"""Report header, terminal summary and JUnit properties as pure functions of their inputs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .settings import Settings

KNOWN_DEFECT_PREFIX = "known defect "


def properties(settings: Settings, versions: Mapping[str, str]) -> list[tuple[str, str]]:
    """JUnit suite properties: what a lane engineer needs to read a report later."""
    props = [
        ("fl_platform", settings.platform.name),
        ("fl_platform_detected_by", settings.detection.how),
        ("fl_layout", settings.layout.kind),
        ("fl_workaround", settings.workaround or "off"),
        ("fl_workaround_why", settings.workaround_why),
        ("fl_sweep", settings.sweep),
        (
            "fl_emulated",
            f"{settings.emulation.profile}; defects: {', '.join(settings.emulation.defects) or 'none'}"
            if settings.emulation
            else "no",
        ),
    ]
    props += [(f"version_{name.replace('-', '_')}", version) for name, version in versions.items()]
    return props


def header_lines(settings: Settings, versions: Mapping[str, str], device: str) -> list[str]:
    emulated = ""
    if settings.emulation is not None:
        injected = ", ".join(settings.emulation.defects) or "no defects"
        emulated = f", emulated on CPU (profile {settings.emulation.profile}, injected: {injected})"
    v = versions
    return [
        f"fl-contract {v.get('pytest-fl-contract', '?')}: platform {settings.platform.name} "
        f"({settings.detection.how}){emulated}",
        f"fl-contract device: {device} | torch {v['torch']} | triton {v['triton']} | flag_gems {v['flag_gems']}",
        f"fl-contract layout: {settings.layout.kind} ({settings.layout.how}) | "
        f"workaround: {settings.workaround or 'off'} ({settings.workaround_why}) | sweep: {settings.sweep} | "
        f"interpreter: {'TRITON_INTERPRET=1' if settings.emulation else 'no'}",
    ]


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


_DEFECT_RE = re.compile(r"known defect (\S+) on")


def summary_lines(stats: Mapping[str, Iterable[Any]], counters: Mapping[str, int] | None) -> list[str]:
    """Skips grouped by reason and known defects xfailed/xpassed: a skip is never a pass."""
    lines: list[str] = []
    skips = Counter(_skip_reason(r) for r in stats.get("skipped", ()))
    if skips:
        lines.append(f"skipped ({sum(skips.values())}), by reason:")
        lines += [f"  {n:5d}  {reason}" for reason, n in skips.most_common()]
    defects: dict[str, Counter[str]] = {}
    for report in stats.get("xfailed", ()):
        match = _DEFECT_RE.search(getattr(report, "wasxfail", "") or "")
        if match:
            defects.setdefault(match.group(1), Counter())["xfailed"] += 1
    for report in stats.get("failed", ()):
        text = str(getattr(report, "longrepr", ""))
        match = _DEFECT_RE.search(text) if text.startswith("[XPASS(strict)]") else None
        if match:
            defects.setdefault(match.group(1), Counter())["xpassed"] += 1
    for defect, seen in sorted(defects.items()):
        note = " - the defect no longer shows: fixed compiler?" if seen["xpassed"] else ""
        lines.append(
            f"known defect {defect}: {seen['xfailed']} xfailed (still present), {seen['xpassed']} xpassed{note}"
        )
    if counters and any(counters.values()):
        lines.append("emulated defect: " + ", ".join(f"{k}={v}" for k, v in counters.items()))
    return lines
