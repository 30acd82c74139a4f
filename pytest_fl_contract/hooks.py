"""Hooks the plugin calls, for vendors' plugins and our own opt-in ones (mutants)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(historic=True)
def pytest_fl_contract_flag_gems(flag_gems: Any, session: Any) -> None:
    """flag_gems was imported in this process and the lane's workaround (if any) installed,
    before anything dispatched: the last moment to patch its entry points."""
