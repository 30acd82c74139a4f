"""Report header and JUnit suite properties of a lane, as pure functions of its settings."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.platforms import Registry
from ..config.settings import Settings


def registry_digest(registry: Registry) -> str:
    """sha256 of what the lane's registry says (platforms, defects, aliases), whichever files
    or entry points it came from: two reports with one digest judged by the same rules."""
    text = json.dumps(_canonical((registry.platforms, registry.defects, registry._aliases)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """JSON-able and independent of hash order (a frozenset's repr is not)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def commit_of(path: Path) -> str | None:
    """The git commit of the checkout holding ``path`` (``+dirty`` when it has changes), or
    None outside a checkout or without git.  Bounded: a hung git costs two seconds."""
    try:
        head = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=2,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head or None


def provenance(settings: Settings, cwd: Path) -> list[tuple[str, str]]:
    """What a report needs to be traced to its exact source state (Khronos' rule for
    conformance logs): the registry's digest, the lane's checkout, the plugin's own."""
    plugin = Path(__file__).resolve().parents[2]
    return [
        ("fl_registry_sha256", registry_digest(settings.registry)),
        ("fl_checkout_commit", commit_of(cwd) or "none (not a git checkout)"),
        ("fl_plugin_commit", (commit_of(plugin) if (plugin / ".git").exists() else None) or "installed package"),
    ]


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
