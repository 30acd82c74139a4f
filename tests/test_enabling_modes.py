"""Every route of the workaround under every way a user enables FlagGems, on both lines, on the
emulated Iluvatar lane: ``use_gems(include=...)`` with the route's names, ``use_gems(exclude=...)``,
``use_gems()`` for every op, and ``flag_gems.enable()`` for the process (last: it stays).

Each row the workaround wraps (a reduction, a layer, a matmul) is called as a model calls it -
torch's op, its out= form where the row has one, its gradient through autograd where torch
differentiates it - and must answer as torch does in float64 and reach the workaround's wrapper.
With FlagGems 5.4 enabled for every op, the layer routes' own arithmetic once went through
FlagGems' ``mul``, whose fallback for a tensor it does not serve called ``torch.mul`` and came back
to itself until Python's recursion limit (``emulation.dispatch``)."""

from __future__ import annotations

import os

import pytest

from .conftest import ROOT

WALK = """
import functools

import pytest
import torch

import flag_gems
from pytest_fl_contract.registry import ROWS
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
MODES = ("include", "exclude", "everything", "process")
ENTERED = set()


def spied(fn):
    if not hasattr(fn, "__fl_original__"):  # the workaround's wrappers carry what they wrap
        return fn

    @functools.wraps(fn)
    def entered(*args, **kwargs):
        ENTERED.add(fn.__name__)
        return fn(*args, **kwargs)

    return entered


def scope(mode, names):
    if mode == "include":
        return flag_gems.use_gems(include=list(names))
    if mode == "exclude":  # a list that leaves the route's entry points in
        return flag_gems.use_gems(exclude=["cos", "sin"])
    if mode == "everything":
        return flag_gems.use_gems()
    return __import__("contextlib").nullcontext()  # process: flag_gems.enable() ran


def close(got, want, what):
    torch.testing.assert_close(got.double(), want.double(), rtol=1e-4, atol=1e-4, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def routed_rows(wrapped):
    for op in ROWS.rows("reductions"):
        if any(f"{op.module}.{e.attr}" in wrapped for e in op.entries):
            yield op.name, op.gems_names, lambda m, op=op: walk_op(op, m)
    for layer in ROWS.installed("layers"):
        if {f"{layer.module}.{layer.forward}", f"{layer.module}.{layer.backward}"} & set(wrapped):
            yield layer.name, layer.gems_names, lambda m, layer=layer: walk_layer(layer, m)
    for top in ROWS.installed("tensorops"):
        if f"{top.module}.{top.entry}" in wrapped:
            yield top.name, top.gems_names, lambda m, top=top: walk_tensor_op(top, m)


def walk_op(op, mode):
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(1))
    want = op.torch_fn(x.double(), 1, False)
    with scope(mode, op.gems_names):
        got = op.torch_fn(x, 1, False)
    close(got, want, f"{op.name} over dim 1")
    if op.out_entry is not None:
        buffer = torch.empty(want.shape, dtype=got.dtype)
        with scope(mode, [*op.gems_names, op.out_entry]):
            got = torch.sum(x, 1, out=buffer) if op.name == "sum" else None
        if got is not None:
            close(buffer, want, f"{op.name}(out=) over dim 1")
    if op.kind in ("along", "reduce") and want.dtype.is_floating_point:
        leaf, ref = x.clone().requires_grad_(), x.double().requires_grad_()
        upstream = torch.randn(want.shape, generator=torch.Generator().manual_seed(2))
        result = op.torch_fn(ref, 1, False)
        if not result.requires_grad:
            return
        result.backward(upstream.double())
        with scope(mode, op.gems_names):
            out = op.torch_fn(leaf, 1, False)
            if out.requires_grad:  # a known FlagGems defect loses some rows' derivative (composite_autograd_lost)
                out.backward(upstream)
        if leaf.grad is not None:
            close(leaf.grad, ref.grad, f"{op.name}'s gradient over dim 1")


def walk_layer(layer, mode):
    case = layer.cases["quick"][0]
    g = torch.Generator().manual_seed(3)
    x = torch.randn(case.shape, generator=g)
    channels = layer.channels(case)
    weight = torch.randn(channels, generator=g).add_(1.0)
    bias = torch.randn(channels, generator=g) if "bias" in layer.affine else None
    upstream = torch.randn(case.shape, generator=g)

    def run(dtype, gems):
        leaves = [t.detach().to(dtype).clone().requires_grad_() for t in (x, weight)] + \\
            ([bias.detach().to(dtype).clone().requires_grad_()] if bias is not None else [])
        stats = (torch.zeros(channels, dtype=dtype), torch.ones(channels, dtype=dtype)) \\
            if layer.functional == "batch_norm" else None
        with (scope(mode, layer.gems_names) if gems else __import__("contextlib").nullcontext()):
            y = layer.torch_call(leaves[0], leaves[1], leaves[2] if bias is not None else None, case, stats)
            y.backward(upstream.to(dtype))
        return [y.detach(), *(t.grad for t in leaves)]

    for got, want, what in zip(run(torch.float32, True), run(torch.float64, False), ("y", "dx", "dweight", "dbias")):
        close(got, want, f"{layer.name} {what}")


def walk_tensor_op(top, mode):
    case = top.cases["quick"][0]
    operands = top.operands(case)
    want = top.call(torch, {k: (v.double() if v.is_floating_point() else v) if hasattr(v, "double") else v
                            for k, v in operands.items()})
    with scope(mode, top.gems_names):
        got = top.call(torch, operands)
    close(got, want, f"{top.name} {case.id}")
    if top.out:
        buffer = torch.empty(want.shape, dtype=got.dtype)
        with scope(mode, top.gems_names):
            top.call(torch, operands, buffer)
        close(buffer, want, f"{top.name}(out=) {case.id}")


@pytest.mark.parametrize("mode", MODES)
def test_every_route_under(flag_gems, fl_workaround, mode):
    assert fl_workaround is not None and fl_workaround.entries, "the lane installed no workaround"
    rows = list(routed_rows(fl_workaround.entries))
    assert {"sum", "softmax", "layer_norm", "group_norm", "batch_norm", "mm"} <= {name for name, _, _ in rows}
    ENTERED.clear()
    full, by_func = flag_gems._FULL_CONFIG, getattr(flag_gems, "FULL_CONFIG_BY_FUNC", None)
    spies = {}

    def spy(item):  # one spy a function, under every aten name it is registered for
        if len(item) < 2:
            return item
        return (item[0], spies.setdefault(id(item[1]), spied(item[1])), *item[2:])

    flag_gems._FULL_CONFIG = tuple(spy(item) for item in full)
    if isinstance(by_func, dict):  # use_gems(include=...) reads this table
        flag_gems.FULL_CONFIG_BY_FUNC = {k: [spy(i) for i in v] for k, v in by_func.items()}
    try:
        if mode == "process":
            flag_gems.enable()
        for name, names, walk in rows:
            walk(mode)
    finally:
        if mode != "process":
            flag_gems._FULL_CONFIG = full
            if isinstance(by_func, dict):
                flag_gems.FULL_CONFIG_BY_FUNC = by_func
    assert ENTERED, f"no route of the workaround was reached under {mode}"
"""


@pytest.mark.slow
@pytest.mark.parametrize("line", ["5.0.2", "5.4"])
def test_every_route_under_every_enabling_mode(run_subprocess, request, line):
    env = {}
    if line == "5.4":
        site = request.getfixturevalue("fg54_site")
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_walk=WALK)
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "-q",
        "--tb=short",
        "-W",
        "ignore::UserWarning",
        env=env,
    )
    result.assert_outcomes(passed=4)
