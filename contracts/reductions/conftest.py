"""Parametrization from the op table and the lane's sweep; nothing else lives here."""

from __future__ import annotations

import pytest
from optable import (
    DTYPE_CAPABILITY,
    DTYPES,
    HALF_DTYPES,
    KEEPDIM_CASES,
    OPS,
    PARTIAL_TILE_CASES,
    REAL_CASE,
    Case,
    Op,
    cases_for,
    half_cases,
    known_defects,
    sweep,
)

from pytest_fl_contract.plugin import settings_of


def _combo(op: Op, case: Case, dtype: str):
    """An (op, case, dtype) parameter; dtypes the platform lacks skip through the registry."""
    cap = DTYPE_CAPABILITY.get(dtype)
    marks = [pytest.mark.requires_capability(cap)] if cap else []
    return pytest.param(op, case, dtype, id=f"{op.name}-{case.id}-{dtype}", marks=marks)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = settings_of(metafunc.config)
    quick = settings.sweep == "quick"
    ops = [op for op in OPS if op.in_quick or not quick]
    names = metafunc.fixturenames
    if "op" in names and "case" in names and "dtype" in names:
        combos = []
        for op in ops:
            cases = cases_for(op, settings.sweep)
            combos += [(op, c, d) for c in cases for d in DTYPES[settings.sweep]]
            halves = [c for c in half_cases(settings.sweep) if op.quick_cases is None or not quick]
            combos += [(op, c, d) for c in halves for d in HALF_DTYPES]
        metafunc.parametrize("op,case,dtype", [_combo(*combo) for combo in combos])
        return
    if "op" in names:
        # ops limited to toy shapes on the interpreter (prod) take part in accuracy only
        chosen = [op for op in ops if not (quick and op.quick_cases)]
        metafunc.parametrize("op", chosen, ids=[op.name for op in chosen])
    if "case" in names:
        cases = sweep(settings.sweep)
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    for name, cases in (
        ("partial_case", PARTIAL_TILE_CASES[settings.sweep]),
        ("keepdim_case", KEEPDIM_CASES),
        ("real_case", [REAL_CASE[settings.sweep]]),
    ):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, cases, ids=[c.id for c in cases])


@pytest.fixture(autouse=True)
def _record_contract(request: pytest.FixtureRequest) -> None:
    """Tag each case with its op and contract, for the per-op summary and JUnit."""
    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    op = next((v for v in params.values() if isinstance(v, Op)), None)
    name = op.name if op is not None else getattr(request.module, "FL_OP", None)
    request.node.user_properties.append(("fl_contract", request.module.__name__.removeprefix("test_")))
    if name is not None:
        request.node.user_properties.append(("fl_op", name))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Cases that run into a FlagGems defect carry its known_defect mark (a strict xfail
    only on lanes whose registry lists it and no active workaround covers it)."""
    for item in items:
        params = getattr(item, "callspec", None)
        params = params.params if params else {}
        op = params.get("op")
        for value in params.values():
            if op is not None and isinstance(value, Case):
                for defect in known_defects(op, value):
                    item.add_marker(pytest.mark.known_defect(defect))
