"""Parametrization from the matmul and index-op rows and the lane's sweep, and each case's tag
and known defects."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pytest_fl_contract.contracts.marking import chosen, mark_row_cases, own_items, param, slug

from pytest_fl_contract.families import of
from pytest_fl_contract.families.tensorops import wraps
from pytest_fl_contract.hardware import fresh_rows, shared
from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.schema import flag_gems_version
from pytest_fl_contract.registry.tensorops import MATMUL, TensorCall, TensorCase, TensorOp

DTYPES = ("float32",)
HALF_DTYPES = ("float16", "bfloat16")


def empty_cases(op: TensorOp) -> list[tuple[str, TensorCase]]:
    """Each op's first case with an extent of none: for a matmul M and K (a K of none sums
    nothing: zeros, addmm's beta * bias), for an index op the index's."""
    case = op.cases["quick"][0]
    if op.family == MATMUL:
        *batch, m, k, n = case.shape
        return [("m0", replace(case, shape=(*batch, 0, k, n))), ("k0", replace(case, shape=(*batch, m, 0, n)))]
    return [("index0", replace(case, index=0))]


LONG_K = 520  # past four 128-wide K tiles (the widest FlagGems' matmul configs take), not a multiple


def long_k(case: TensorCase) -> TensorCase:
    *batch, m, _, n = case.shape
    return replace(case, shape=(*batch, m, LONG_K, n))


def pytest_sessionstart(session: pytest.Session) -> None:
    """The fresh-process batches start now when the run takes all of ``test_processes.py``."""

    def job(directory: Path) -> shared.Job:
        return fresh_rows.job(settings_of(session.config), "tensorops", False, directory)

    shared.start_for(session, Path(__file__).with_name("test_processes.py"), job)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = settings_of(metafunc.config)
    ops = chosen("tensorops")
    names = metafunc.fixturenames
    if "tensor_op" in names and "case" in names and "dtype" in names:
        params = [param(op, case, dtype) for op in ops for case in op.cases[settings.sweep] for dtype in DTYPES]
        params += [
            param(op, op.cases[settings.sweep][0], dtype)
            for op in ops
            for dtype in HALF_DTYPES
            if op.family == MATMUL or not op.accumulates
        ]  # FlagGems' atomics take no half types on every line
        metafunc.parametrize("tensor_op,case,dtype", params)
    elif "tensor_op" in names and "case" in names:
        metafunc.parametrize(
            "tensor_op,case",
            [pytest.param(op, case, id=f"{op.name}-{case.id}") for op in ops for case in op.cases[settings.sweep]],
        )
    elif "tensor_op" in names and "empty_case" in names:
        metafunc.parametrize(
            "tensor_op,empty_case",
            [pytest.param(op, case, id=f"{op.name}-{label}") for op in ops for label, case in empty_cases(op)],
        )
    elif "tensor_op" in names and "layout" in names:
        metafunc.parametrize(
            "tensor_op,layout",
            [
                pytest.param(op, layout, id=f"{op.name}-{layout}")
                for op in ops
                for layout in op.layouts
                if layout != "contiguous"
            ],
        )
    elif "tensor_op" in names and "first_case" in names:  # each op's first case (every FlagGems op enabled)
        metafunc.parametrize(
            "tensor_op,first_case",
            [
                pytest.param(op, op.cases[settings.sweep][0], id=f"{op.name}-{op.cases[settings.sweep][0].id}")
                for op in ops
            ],
        )
    elif "tensor_op" in names and "out_op" not in names:
        metafunc.parametrize("tensor_op", ops, ids=[op.name for op in ops])
    if "long_case" in names:  # each matmul's first case with K past several K tiles, every float dtype
        metafunc.parametrize(
            "matmul_op,long_case,dtype",
            [
                param(op, long_k(op.cases["quick"][0]), dtype)
                for op in ops
                if op.family == MATMUL
                for dtype in (*DTYPES, *HALF_DTYPES)
            ],
        )
    if "biased_op" in names:  # the ops that add a bias (addmm), on their first case
        metafunc.parametrize(
            "biased_op,case", [pytest.param(op, op.cases[settings.sweep][0], id=op.name) for op in ops if op.bias]
        )
    if "param" in names:  # every argument value of every op, on its first case
        metafunc.parametrize(
            "param_op,param,value,param_case",
            [
                pytest.param(op, p, v, op.cases[settings.sweep][0], id=f"{op.name}-{p.name}={v}")
                for op in ops
                for p in op.params
                for v in p.values
            ],
        )
    if "out_op" in names:
        metafunc.parametrize("out_op", [op for op in ops if op.out], ids=[op.name for op in ops if op.out])
    if "grid_case" in names:
        metafunc.parametrize(
            "grid_op,grid_case", [pytest.param(op, case, id=f"{op.name}-{case.id}") for op in ops for case in op.grid]
        )
    if "large_case" in names:  # hardware: the device holds what the ledger counts (registry: TensorOp.large)
        metafunc.parametrize(
            "large_op,large_case",
            [
                pytest.param(
                    op,
                    case,
                    id=f"{op.name}-{case.id}",
                    marks=pytest.mark.requires_device_memory(of(op).memory_gib(op, case) + 4),
                )
                for op in ops
                for case in op.large
            ],
        )
    if "path" in names:
        version = flag_gems_version()
        metafunc.parametrize(
            "path_op,path",
            [
                pytest.param(op, path, id=f"{op.name}-{slug(path.name)}")
                for op in ops
                for path in op.paths
                if path.in_version(version)
            ],
        )


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
    param = params.get("param")
    if param is not None:
        extra["arguments"] = tuple(param.kwargs(params["value"]).items())
    return TensorCall(case, routed=routed, contract=contract, **extra)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_row_cases(own_items(items, __file__), TensorOp, call_of, wraps, reached=lambda op: bool(op.kernels))
