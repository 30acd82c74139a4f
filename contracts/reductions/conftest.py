"""Parametrization from the op registry and the lane's sweep, and each case's tag."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_fl_contract.contracts.marking import REDUCTION_SWEEPS, mark_row_cases, own_items
from pytest_fl_contract.contracts.reductions import fresh
from pytest_fl_contract.contracts.reductions.sweeps import (
    DTYPES,
    ENABLED_CASE,
    HALF_DTYPES,
    KEEPDIM_CASES,
    PARTIAL_TILE_CASES,
    REAL_CASE,
    TUNING_CASE,
    cases_for,
    differentiable,
    fitted,
    half_cases,
    ops_for,
    sweep,
)

from pytest_fl_contract.config.platforms import DTYPE_CAPABILITY
from pytest_fl_contract.hardware import shared
from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.reductions import Call, Case, Op
from pytest_fl_contract.registry.schema import flag_gems_version


def pytest_sessionstart(session: pytest.Session) -> None:
    """The fresh-process batches start now when the run takes all of ``test_processes.py``."""

    def job(directory: Path) -> shared.Job:
        return fresh.job(settings_of(session.config), directory)

    shared.start_for(session, Path(__file__).with_name("test_processes.py"), job)


def _combo(op: Op, case: Case, dtype: str):
    """An (op, case, dtype) parameter; dtypes the platform lacks skip through the registry."""
    cap = DTYPE_CAPABILITY.get(dtype)
    marks = [pytest.mark.requires_capability(cap)] if cap else []
    return pytest.param(op, case, dtype, id=f"{op.name}-{case.id}-{dtype}", marks=marks)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = settings_of(metafunc.config)
    quick = settings.sweep == "quick"
    ops = ops_for(settings.sweep)
    names = metafunc.fixturenames
    if "op" in names and "case" in names and "dtype" in names:
        combos = []
        for op in ops:
            combos += [(op, c, d) for c in cases_for(op, settings.sweep) for d in DTYPES[settings.sweep]]
            if not (quick and op.interpreter == "toy"):
                combos += [(op, c, d) for c in half_cases(settings.sweep, op) for d in HALF_DTYPES]
        metafunc.parametrize("op,case,dtype", [_combo(*combo) for combo in combos])
        return
    per_op_cases = {
        "partial_case": PARTIAL_TILE_CASES[settings.sweep],
        "keepdim_case": KEEPDIM_CASES,
        "real_case": [REAL_CASE[settings.sweep]],
        "tuning_case": [TUNING_CASE],
    }
    if "op" in names:
        # ops limited to toy shapes on the interpreter (prod) take part in accuracy only; a scan's
        # views (cummax's indices) in accuracy and the tile contracts, which check them exactly:
        # the rest would repeat the row's own call
        chosen = [op for op in ops if not (quick and op.interpreter == "toy") and not _scan_view(op)]
        paired = next((name for name in per_op_cases if name in names), None)
        if "enabled_case" in names:  # forward for every row, backward where torch differentiates it
            combos = [
                (op, fitted(ENABLED_CASE, op, settings.sweep), direction)
                for op in chosen
                for direction in ("forward", "backward")
                if direction == "forward" or differentiable(op)
            ]
            metafunc.parametrize(
                "op,enabled_case,direction", [pytest.param(*c, id=f"{c[0].name}-{c[1].id}-{c[2]}") for c in combos]
            )
        elif paired is None:
            metafunc.parametrize("op", chosen, ids=[op.name for op in chosen])
        else:  # each op with its cases as it runs them (``fitted``: the families' cut extents)
            combos: dict = {}
            for op in chosen:
                for c in per_op_cases[paired]:
                    fit = fitted(c, op, settings.sweep)
                    combos.setdefault((op.name, fit.id), (op, fit))
            metafunc.parametrize(
                f"op,{paired}", [pytest.param(op, c, id=f"{op.name}-{c.id}") for op, c in combos.values()]
            )
            del per_op_cases[paired]
    if "any_op" in names:
        # the checklist contracts: every op the installed FlagGems has, on every lane
        chosen = ops_for("full", views=False)
        metafunc.parametrize("any_op", chosen, ids=[op.name for op in chosen])
    if "index_op" in names:
        chosen = [op for op in ops_for("full") if op.kind == "index"]
        metafunc.parametrize("index_op", chosen, ids=[op.name for op in chosen])
    if "case" in names:
        cases = sweep(settings.sweep)
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    if "path" in names:
        metafunc.parametrize(
            "path_op,path,path_case,dtype", path_params([op for op in ops_for("full") if not _scan_view(op)])
        )
    if "fast_path" in names:
        metafunc.parametrize("fast_op,fast_path,dtype", fast_path_params(ops_for("full")))
    if "tile_case" in names:
        from pytest_fl_contract.contracts.reductions.test_tiles import tile_params

        metafunc.parametrize("tile_op,tile_case", tile_params(ops_for("full"), flag_gems_version()))
    if "backward_case" in names:
        from pytest_fl_contract.contracts.reductions.test_backward import backward_params

        metafunc.parametrize("backward_op,entry,backward_case,layout", backward_params(ops_for("full"), settings.sweep))
    if "param" in names:
        metafunc.parametrize("param_op,param,value,param_case,dtype,route", param_params(ops_for("full")))
    for name, cases in per_op_cases.items():
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, cases, ids=[c.id for c in cases])


def _scan_view(op: Op) -> bool:
    return op.kind == "scan" and op.result is not None and op.result != op.fields[0]


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text).split())


def path_params(ops: list[Op]) -> list:
    """(op, path, its Case, dtype) for every kernel path of every op the installed FlagGems
    has, in its line (registry rows' ``paths``); a path whose case has a single output row
    (M = 1 before the reduced dim) once more with two: a kernel that drops its row offset
    past the first row, or a reduce-then-scan pass that carries one row's prefix into the
    next, is right for row 0 alone."""
    version = flag_gems_version()
    found = []
    for op in ops:
        for path in op.paths_in(version):
            case = Case(path.shape, path.dim)
            found.append(pytest.param(op, path, case, path.dtype, id=f"{op.name}-{_slug(path.name)}"))
            rows = two_rows(case)
            if rows is not None:
                found.append(pytest.param(op, path, rows, path.dtype, id=f"{op.name}-{_slug(path.name)}-two-rows"))
    return found


def two_rows(case: Case) -> Case | None:
    """``case`` with two output rows where it has one (a single int dim with nothing before it
    but ones), else None."""
    if not isinstance(case.dim, int):
        return None
    d = case.dim % len(case.shape)
    if any(s != 1 for s in case.shape[:d]):
        return None
    if d == 0:
        return Case((2, *case.shape), 1)
    return Case((2, *case.shape[1:]), case.dim)


def fast_path_params(ops: list[Op]) -> list:
    """(op, plan family, dtype) for every plan family of the workaround's fast path, for each
    op it takes (``workarounds/paths.py``; rows' ``fastpath``)."""
    from pytest_fl_contract.workarounds import paths

    return [
        pytest.param(op, path, dtype, id=f"{op.name}-{_slug(path.name)}-{dtype}")
        for op in ops
        if op.fastpath is not None
        for path in paths.every_path(paths.kind_of(op.fastpath))
        for dtype in ("float32", "float16")
    ]


PARAM_CASES = {"non-inner": Case((3, 5, 4), 1), "inner": Case((3, 4, 5), -1), "all": Case((3, 5, 4), None)}


def param_params(ops: list[Op]) -> list:
    """(op, parameter, value, Case, dtype) for every keyword parameter of every entry point
    (registry rows' ``params``): each value on a non-inner and an inner dim, and on every dim
    where the op takes dim=None and the parameter applies there."""
    out = []
    for op in ops:
        for param in op.params:
            forms = ("non-inner", "inner") + (("all",) if op.accepts_none and param.dims == "all" else ())
            for value in param.values:
                for form in forms:
                    for dtype in param.dtypes:
                        for route in param.routes:
                            out.append(
                                pytest.param(
                                    op,
                                    param,
                                    value,
                                    PARAM_CASES[form],
                                    dtype,
                                    route,
                                    id=f"{op.name}-{param.name}={value}-{form}-{dtype}-{route}",
                                )
                            )
    return out


def reached(op: Op) -> bool:
    """The masked-row defect reaches a kernel of the op's module (registry.coverage's scan)."""
    import sys

    from pytest_fl_contract.registry.coverage import non_inner_kernels

    module = sys.modules.get(op.module)
    return module is not None and bool(non_inner_kernels(module))


def call_of(params: dict, routed: bool = False, contract: str = "") -> Call | None:
    """The Call a case makes: its Case (shape, dim) and, where the case sets them, its dtype,
    layout and special values: what a known FlagGems defect can depend on."""
    case = next((v for v in params.values() if isinstance(v, Case)), None)
    if case is None:
        return None
    extra = {k: params[k] for k in ("dtype", "layout", "values", "placement") if isinstance(params.get(k), str)}
    param = params.get("param")
    kwargs = ((param.name, params.get("value")),) if param is not None else ()
    return Call(
        case.shape,
        case.dim,
        routed=routed,
        kwargs=kwargs,
        contract=contract,
        backward=params.get("direction") == "backward",
        dispatched=params.get("route") == "dispatch",
        **extra,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tag each case with its op and contract (the per-op summary reads them), and mark the
    cases that run into a FlagGems defect with it (a strict xfail only on lanes whose
    registry lists it and no active workaround covers it): the marking every suite shares."""
    mark_row_cases(
        own_items(items, __file__),
        Op,
        lambda params, contract, routed: call_of(params, routed, contract),
        lambda session, op: session.wraps(op),
        reached,
        REDUCTION_SWEEPS,
    )
