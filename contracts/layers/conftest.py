"""Parametrization from the layer rows and the lane's sweep, and each case's tag and known defects."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pytest_fl_contract.contracts.marking import chosen, mark_row_cases, own_items, param, slug

from pytest_fl_contract.families import of
from pytest_fl_contract.hardware import fresh_rows, shared
from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.layers import Layer, LayerCall, LayerCase
from pytest_fl_contract.registry.schema import flag_gems_version

DTYPES = ("float32",)
HALF_DTYPES = ("float16", "bfloat16")
GRADIENTS = (
    "backward",
    "affine",
    "determinism",
    "layout",
    "empty",
    "large_index",
    "enabled",
    "params",
    "processes",
)  # the contracts that check gradients too


def pytest_sessionstart(session: pytest.Session) -> None:
    """The fresh-process batches start now when the run takes all of ``test_processes.py``."""

    def job(directory: Path) -> shared.Job:
        return fresh_rows.job(settings_of(session.config), "layers", True, directory)

    shared.start_for(session, Path(__file__).with_name("test_processes.py"), job)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = settings_of(metafunc.config)
    layers = chosen("layers")
    names = metafunc.fixturenames
    if "layer" in names and "case" in names and "dtype" in names:
        params = [
            param(layer, case, dtype) for layer in layers for case in layer.cases[settings.sweep] for dtype in DTYPES
        ]
        params += [param(layer, layer.cases[settings.sweep][0], dtype) for layer in layers for dtype in HALF_DTYPES]
        metafunc.parametrize("layer,case,dtype", params)
    elif "layer" in names and "case" in names:
        metafunc.parametrize(
            "layer,case",
            [
                pytest.param(layer, case, id=f"{layer.name}-{case.id}")
                for layer in layers
                for case in layer.cases[settings.sweep]
            ],
        )
    elif "layer" in names and not {"empty_case", "half_case", "first_case"} & set(names):
        metafunc.parametrize("layer", layers, ids=[layer.name for layer in layers])
    if "param" in names:  # every argument value of every layer, on its first case: forward and
        # backward, and an argument other than grads forward alone too (a backward known defect
        # marks the whole case, and must not hide what the forward does with the argument)
        metafunc.parametrize(
            "param_layer,param,value,param_case,direction",
            [
                pytest.param(
                    layer,
                    p,
                    v,
                    layer.cases[settings.sweep][0],
                    d,
                    id=f"{layer.name}-{p.name}={_text(v)}{'-forward-only' if d == FORWARD_ONLY else ''}",
                )
                for layer in layers
                for p in layer.params
                for v in p.values
                for d in (("backward",) if p.name == "grads" else ("backward", FORWARD_ONLY))
            ],
        )
    if "first_case" in names:  # the layer's first case (every FlagGems op enabled)
        metafunc.parametrize(
            "layer,first_case",
            [
                pytest.param(
                    layer, layer.cases[settings.sweep][0], id=f"{layer.name}-{layer.cases[settings.sweep][0].id}"
                )
                for layer in layers
            ],
        )
    if "half_case" in names:  # the layer's first case in each half precision
        metafunc.parametrize(
            "layer,half_case,dtype",
            [param(layer, layer.cases[settings.sweep][0], dtype) for layer in layers for dtype in HALF_DTYPES],
        )
    if "empty_case" in names:  # the layer's first case with no rows (a batch of none)
        cases = [(layer, layer.cases[settings.sweep][0]) for layer in layers]
        metafunc.parametrize(
            "layer,empty_case",
            [
                pytest.param(
                    layer, replace(c, shape=(0, *c.shape[1:])), id=f"{layer.name}-0x{'x'.join(map(str, c.shape[1:]))}"
                )
                for layer, c in cases
            ],
        )
    if "wide_case" in names:
        metafunc.parametrize(
            "wide_layer,wide_case",
            [pytest.param(layer, case, id=f"{layer.name}-{case.id}") for layer in layers for case in layer.wide],
        )
    if "large_case" in names:  # hardware: the device holds what the ledger counts (registry: Layer.large)
        metafunc.parametrize(
            "large_layer,large_case,dtype",
            [
                pytest.param(
                    layer,
                    case,
                    LARGE_DTYPE,
                    id=f"{layer.name}-{case.id}",
                    marks=pytest.mark.requires_device_memory(of(layer).memory_gib(layer, case)),
                )
                for layer in layers
                for case in layer.large
            ],
        )
    if "path" in names:
        version = flag_gems_version()
        metafunc.parametrize(
            "path_layer,path",
            [
                pytest.param(layer, path, id=f"{layer.name}-{slug(path.name)}")
                for layer in layers
                for path in layer.paths
                if path.in_version(version)
            ],
        )


LARGE_DTYPE = "float16"
FORWARD_ONLY = "forward"


def _text(value) -> str:
    return "+".join(value) if isinstance(value, tuple) else str(value).replace(" ", "_").replace("'", "")


def call_of(params: dict, contract: str, routed: bool) -> LayerCall | None:
    """The LayerCall a case makes: its case and, where the case sets them, dtype, layout,
    special values, the affine parameters and whether it checks the gradients."""
    case = next((v for v in params.values() if isinstance(v, LayerCase)), None)
    path = params.get("path")
    if case is None and path is not None:
        case = path.case
    if case is None:
        return None
    extra = {k: params[k] for k in ("dtype", "layout", "values") if isinstance(params.get(k), str)}
    backward = (contract in GRADIENTS and params.get("direction") != FORWARD_ONLY) or bool(
        path is not None and path.backward
    )
    affine = params.get("affine", True) is not False
    param = params.get("param")
    if param is not None and param.name == "grads":
        extra["grads"] = params["value"]
    elif param is not None:
        extra["options"] = tuple(param.kwargs(params["value"]).items())
    return LayerCall(case, backward=backward, affine=affine, routed=routed, contract=contract, **extra)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_row_cases(own_items(items, __file__), Layer, call_of, wraps)


def wraps(session, layer: Layer) -> bool:
    """The lane's workaround wraps one of the layer's entry points."""
    info = session.workaround
    names = {f"{layer.module}.{layer.forward}", f"{layer.module}.{layer.backward}"}
    return info is not None and bool(names & set(info.entries))
