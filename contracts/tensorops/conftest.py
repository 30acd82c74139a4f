"""Parametrization from the matmul and index-op rows and the lane's sweep, and each case's tag
and known defects."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pytest_fl_contract.contracts.marking import mark_row_cases, own_items
from pytest_fl_contract.contracts.tensorops.checks import wraps

from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.ops import flag_gems_version
from pytest_fl_contract.registry.tensorops import MATMUL, OPS, TensorCall, TensorCase, TensorOp, ops_for

DTYPES = ("float32",)
HALF_DTYPES = ("float16", "bfloat16")
DTYPE_CAPABILITY = {"bfloat16": "bf16"}


def chosen_ops() -> list[TensorOp]:
    """The rows the installed FlagGems has; when flag_gems cannot be imported, every row (each
    case then fails saying why)."""
    try:
        import flag_gems  # noqa: F401 - the lane session installs the workaround on import
    except Exception:
        return list(OPS)
    return ops_for()


def _param(op: TensorOp, case: TensorCase, dtype: str):
    cap = DTYPE_CAPABILITY.get(dtype)
    marks = [pytest.mark.requires_capability(cap)] if cap else []
    return pytest.param(op, case, dtype, id=f"{op.name}-{case.id}-{dtype}", marks=marks)


def empty_cases(op: TensorOp) -> list[tuple[str, TensorCase]]:
    """Each op's first case with an extent of none: for a matmul M and K (a K of none sums
    nothing: zeros, addmm's beta * bias), for an index op the index's."""
    case = op.cases["quick"][0]
    if op.family == MATMUL:
        *batch, m, k, n = case.shape
        return [("m0", replace(case, shape=(*batch, 0, k, n))), ("k0", replace(case, shape=(*batch, m, 0, n)))]
    return [("index0", replace(case, index=0))]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = settings_of(metafunc.config)
    ops = chosen_ops()
    names = metafunc.fixturenames
    if "tensor_op" in names and "case" in names and "dtype" in names:
        params = [_param(op, case, dtype) for op in ops for case in op.cases[settings.sweep] for dtype in DTYPES]
        params += [_param(op, op.cases[settings.sweep][0], dtype) for op in ops for dtype in HALF_DTYPES
                   if op.family == MATMUL or not op.accumulates]  # FlagGems' atomics take no half types on every line
        metafunc.parametrize("tensor_op,case,dtype", params)
    elif "tensor_op" in names and "case" in names:
        metafunc.parametrize("tensor_op,case", [pytest.param(op, case, id=f"{op.name}-{case.id}") for op in ops
                                                for case in op.cases[settings.sweep]])
    elif "tensor_op" in names and "empty_case" in names:
        metafunc.parametrize("tensor_op,empty_case", [pytest.param(op, case, id=f"{op.name}-{label}")
                                                      for op in ops for label, case in empty_cases(op)])
    elif "tensor_op" in names and "layout" in names:
        metafunc.parametrize("tensor_op,layout", [pytest.param(op, layout, id=f"{op.name}-{layout}") for op in ops
                                                  for layout in op.layouts if layout != "contiguous"])
    elif "tensor_op" in names and "first_case" in names:  # each op's first case (every FlagGems op enabled)
        metafunc.parametrize("tensor_op,first_case", [pytest.param(op, op.cases[settings.sweep][0],
                                                                   id=f"{op.name}-{op.cases[settings.sweep][0].id}")
                                                      for op in ops])
    elif "tensor_op" in names and "out_op" not in names:
        metafunc.parametrize("tensor_op", ops, ids=[op.name for op in ops])
    if "out_op" in names:
        metafunc.parametrize("out_op", [op for op in ops if op.out], ids=[op.name for op in ops if op.out])
    if "grid_case" in names:
        metafunc.parametrize("grid_op,grid_case", [pytest.param(op, case, id=f"{op.name}-{case.id}")
                                                   for op in ops for case in op.grid])
    if "large_case" in names:  # hardware: the device holds what the ledger counts (registry: TensorOp.large)
        metafunc.parametrize("large_op,large_case", [
            pytest.param(op, case, id=f"{op.name}-{case.id}", marks=pytest.mark.requires_device_memory(op.gib(case) + 4))
            for op in ops for case in op.large])
    if "path" in names:
        version = flag_gems_version()
        metafunc.parametrize("path_op,path", [pytest.param(op, path, id=f"{op.name}-{_slug(path.name)}")
                                              for op in ops for path in op.paths if path.in_version(version)])


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text).split())


def call_of(params: dict, contract: str, routed: bool) -> TensorCall | None:
    """The TensorCall a case makes: its case and, where the case sets them, dtype, layout and
    special values."""
    case = next((v for v in params.values() if isinstance(v, TensorCase)), None)
    path = params.get("path")
    if case is None and path is not None:
        case = path.case
    op = next((v for v in params.values() if isinstance(v, TensorOp)), None)
    if case is None and op is not None:
        case = op.cases["quick"][0]
    if case is None:
        return None
    extra = {k: params[k] for k in ("dtype", "layout", "values") if isinstance(params.get(k), str)}
    if path is not None:
        extra["layout"] = path.layout
    return TensorCall(case, routed=routed, contract=contract, **extra)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_row_cases(own_items(items, __file__), TensorOp, call_of, wraps, reached=lambda op: bool(op.kernels))
