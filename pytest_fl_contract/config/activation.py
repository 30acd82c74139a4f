"""When the installed plugin takes part in a run: pure, and light to import.

Autoload imports the plugin into every pytest run on a machine that has the package; only
this module (and ``hooks``) is imported then, so a run that never asks for the plugin pays
for no registry, no YAML and none of the lane's stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PLUGIN_NAMES = ("fl_contract", "pytest_fl_contract.plugin")


def plugin_specs(spec: Any) -> list[str]:
    """Plugin names as pytest reads ``PYTEST_PLUGINS`` and ``pytest_plugins``: a comma-separated
    string, or a list or tuple of names; anything else names none."""
    if isinstance(spec, str):
        return [name.strip() for name in spec.split(",") if name.strip()]
    if isinstance(spec, (list, tuple)):
        return [name.strip() for name in spec if isinstance(name, str) and name.strip()]
    return []


def peek(args: Sequence[str], flag: str) -> str | None:
    """The value the command line gives ``flag`` (``--flag VALUE`` or ``--flag=VALUE``, the
    last one; nothing after ``--``), read before the option exists (its owner is known only
    once the conftests are loaded)."""
    found = None
    words = list(args)
    for i, word in enumerate(words):
        if word == "--":
            break
        if word == flag and i + 1 < len(words):
            found = words[i + 1]
        elif word.startswith(flag + "="):
            found = word[len(flag) + 1 :]
    return found


def activation(
    plugins: Sequence[str], given: Sequence[str], environ: Mapping[str, str], ini_platform: str | None
) -> str | None:
    """Why a run asked for the plugin, or None: installed, it stays out of a run that names no
    platform (``--platform``, ``FL_PLATFORM``, ini ``fl_platform``), does not load it by name
    (``-p fl_contract``, ``PYTEST_PLUGINS``) and gives none of its ``--fl-*`` options.
    ``given``: the plugin's options set on the command line (``--platform`` first)."""
    for name in plugins:
        if name.strip() in PLUGIN_NAMES:
            return f"loaded by name ({name.strip()})"
    if given:
        return given[0]
    if environ.get("FL_PLATFORM", "").strip():
        return "FL_PLATFORM"
    if ini_platform:
        return "ini fl_platform"
    return None
