"""Report header and JUnit suite properties of a lane, as pure functions of its settings."""

from __future__ import annotations

from collections.abc import Mapping

from ..config.settings import Settings


def properties(settings: Settings, versions: Mapping[str, str]) -> list[tuple[str, str]]:
    """JUnit suite properties: what a lane engineer needs to read a report later."""
    props = [
        ("fl_platform", settings.platform.name),
        ("fl_platform_detected_by", settings.detection.how),
        ("fl_layout", settings.layout.kind),
        ("fl_workaround", settings.workaround or "off"),
        ("fl_workaround_why", settings.workaround_why),
        ("fl_sweep", settings.sweep),
        ("fl_autotune", settings.autotune.mode),
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
        f"fl-contract autotune: {settings.autotune.line()}",
    ]
