"""What every family's conftest shares: the rows it parametrizes over, a case's parameter (with
the capability its dtype needs), and how collected cases are tagged and marked - one home for
the generator's pieces and the marking loop each suite's conftest runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_fl_contract.config.platforms import DTYPE_CAPABILITY
from pytest_fl_contract.plugin import session_of, settings_of
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.schema import flag_gems_version
from pytest_fl_contract.session import tag_case

# what --fl-unreached-sweeps-only keeps of a row its defect does not reach: where a kernel the scan
# missed would show (partial tiles against float64, the same call with the memory around it
# changed, values that cross tiles, every kernel path; the layers and tensor ops their draws too)
SWEEPS = ("accuracy", "determinism", "paths", "generated")
REDUCTION_SWEEPS = ("accuracy", "determinism", "tiles", "paths")


def chosen(suite: str) -> list[Any]:
    """The suite's rows the installed FlagGems has; when flag_gems cannot even be imported,
    every row (each case then fails saying why)."""
    try:
        import flag_gems  # noqa: F401 - the lane session installs the workaround on import
    except Exception:
        return list(ROWS.rows(suite))
    return ROWS.installed(suite)


def param(row: Any, case: Any, dtype: str) -> Any:
    """A (row, case, dtype) parameter; a dtype the platform may lack skips through the registry."""
    cap = DTYPE_CAPABILITY.get(dtype)
    marks = [pytest.mark.requires_capability(cap)] if cap else []
    return pytest.param(row, case, dtype, id=f"{row.name}-{case.id}-{dtype}", marks=marks)


def slug(text: str) -> str:
    """A path's name as a test id."""
    return "-".join("".join(c if c.isalnum() else " " for c in text).split())


def own_items(items: list[pytest.Item], conftest: str) -> list[pytest.Item]:
    """The items collected under a conftest's directory.  ``pytest_collection_modifyitems``
    is not scoped to a conftest's directory: in a session over several suites each
    conftest sees every suite's items, and one family's tagging would overwrite another's."""
    root = Path(conftest).resolve().parent
    under: dict[str, bool] = {}
    for item in items:
        where = str(item.path)
        if where not in under:
            under[where] = root in Path(where).resolve().parents
    return [item for item in items if under[str(item.path)]]


def mark_row_cases(
    items: list[pytest.Item],
    row_type: type,
    call_of: Callable[[dict, str, bool], Any],
    wraps: Callable[[Any, Any], bool],
    reached: Callable[[Any], bool] = lambda row: True,
    sweeps: tuple[str, ...] = SWEEPS,
) -> None:
    """Tag each case with its row and contract, and mark the cases that run into a FlagGems
    defect with it (a strict xfail on lanes whose registry lists it and whose workaround does
    not reach it); with --fl-wrapped-only skip the rows the workaround leaves, with
    --fl-unreached-sweeps-only the checklist of rows the defect does not reach (``reached``);
    on hardware, skip calls whose defect writes past its tensor."""
    version = flag_gems_version()
    settings = settings_of(items[0].config) if items else None
    emulated = settings is not None and settings.emulation is not None
    for item in items:
        module = getattr(item, "module", None)
        if module is None or not module.__name__.rsplit(".", 1)[-1].startswith("test_"):
            continue
        params = item.callspec.params if hasattr(item, "callspec") else {}
        row = next((v for v in params.values() if isinstance(v, row_type)), None)
        contract = module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
        tag_case(item, row.name if row else None, contract)
        if row is None:
            continue
        wrapped = wraps(session_of(item.config), row)
        if settings is not None and settings.wrapped_only and not wrapped:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"{row.name}: the workaround leaves it, so it runs here as on "
                    "the twin lane without one, which runs it (--fl-wrapped-only)"
                )
            )
        if settings is not None and settings.unreached_sweeps_only and contract not in sweeps and not reached(row):
            item.add_marker(
                pytest.mark.skip(
                    reason=f"{row.name}: no injected defect reaches its kernels (FlagGems' "
                    "source scan), so this contract runs here as on the plain CPU lane, which "
                    "runs it; its sweeps run here (--fl-unreached-sweeps-only)"
                )
            )
        call = call_of(params, contract, wrapped)
        if call is None:
            continue
        for defect in row.known_defects(call, version, emulated):
            item.add_marker(pytest.mark.known_defect(defect, **({} if wrapped else {"uncovered": True})))
        if contract == "enabled" and settings is not None:
            # with every op enabled a case meets every FlagGems function: a defect of a function
            # registered only on some devices is decided when the case runs (families.dispatch.every_op)
            for entry in settings.platform.defects:
                if entry.trigger == "registered_function":
                    item.add_marker(pytest.mark.known_defect(entry.id))
        corrupting = () if emulated else row.corrupting(replace(call, contract=""), version)  # every contract
        if corrupting:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"known defect {corrupting[0]} writes past its tensor on hardware: "
                    "its outcome is chance and it corrupts later cases (the emulated lanes "
                    "run it)"
                )
            )
