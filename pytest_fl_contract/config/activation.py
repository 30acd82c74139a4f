"""When the installed plugin takes part in a run: pure, and light to import.

Autoload imports the plugin into every pytest run on a machine that has the package; only
this module (and ``hooks``) is imported then, so a run that never asks for the plugin pays
for no registry, no YAML and none of the lane's stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

PLUGIN_NAMES = ("fl_contract", "pytest_fl_contract.plugin")


def activation(plugins: Sequence[str], given: Sequence[str], environ: Mapping[str, str],
               ini_platform: str | None) -> str | None:
    """Why a run asked for the plugin, or None: installed, it stays out of a run that names no
    platform (``--platform``, ``FL_PLATFORM``, ini ``fl_platform``), does not load it by name
    (``-p fl_contract``, ``PYTEST_PLUGINS``) and gives none of its ``--fl-*`` options.
    ``given``: the plugin's options set on the command line (``--platform`` first)."""
    for name in plugins:
        if name.strip() in PLUGIN_NAMES:
            return f"-p {name.strip()}"
    if given:
        return given[0]
    if environ.get("FL_PLATFORM", "").strip():
        return "FL_PLATFORM"
    if ini_platform:
        return "ini fl_platform"
    return None
