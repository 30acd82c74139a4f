"""The workaround's routes for the normalization layers (workarounds/layers.py) answer as aten's
own kernels in float64, with the masked-row defect injected: rank-3 inputs, several normalized
dims, no weight, group sizes that are not powers of two, no running buffers, half precision."""

from __future__ import annotations

import pytest
import torch

from pytest_fl_contract.emulation import device
from pytest_fl_contract.registry import layers as rows
from pytest_fl_contract.workarounds import layers

aten = torch.ops.aten


@pytest.fixture
def defect():
    device.enable("masked_2d_row_load")
    yield
    device.disable()


def _route(name: str, attr: str):
    route = next(r for r in layers.routes() if r.layer.name == name and r.attr == attr)
    import sys

    return route.make(getattr(sys.modules[route.module], attr))


def _close(got, want, dtype):
    tol = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        torch.testing.assert_close(g.double(), w.to(g.dtype).double(), rtol=tol, atol=tol)


def _t(shape, seed, dtype="float32"):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape, norm", [((13, 24), 1), ((3, 5, 16), 1), ((2, 3, 4, 6), 2), ((300, 8), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_backward(defect, shape, norm, affine, dtype):
    x, dy = _t(shape, 1, dtype), _t(shape, 2, dtype)
    ns = list(shape[len(shape) - norm :])
    w, b = (_t(ns, 3, dtype), _t(ns, 4, dtype)) if affine else (None, None)
    _, mean, rstd = aten.native_layer_norm(x.double(), ns, None, None, 1e-5)
    mask = [True, affine, affine]
    got = _route("layer_norm", "layer_norm_backward")(dy, x, ns, mean.float(), rstd.float(), w, b, mask)
    want = aten.native_layer_norm_backward(
        dy.double(),
        x.double(),
        ns,
        mean,
        rstd,
        None if w is None else w.double(),
        None if b is None else b.double(),
        mask,
    )
    _close(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape, norm", [((13, 24), 1), ((37, 8), 1), ((2, 3, 4, 6), 2)])
def test_rms_norm_backward(defect, shape, norm, dtype):
    x, dy = _t(shape, 1, dtype), _t(shape, 2, dtype)
    ns = list(shape[len(shape) - norm :])
    w = _t(ns, 3, dtype)
    x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
    torch.nn.functional.rms_norm(x64, ns, w64, 1e-5).backward(dy.double())
    inv_rms = (x.float().reshape(-1, int(torch.tensor(ns).prod())).pow(2).mean(-1) + 1e-5).rsqrt()  # FlagGems': fp32
    got = _route("rms_norm", "rms_norm_backward")(dy, x, inv_rms, ns, w, 1e-5)
    _close(got, (x64.grad, w64.grad), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape, groups", [((3, 8, 5), 4), ((2, 6, 7), 2), ((5, 12, 3), 3), ((2, 4, 3, 5), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(defect, shape, groups, affine, dtype):
    n, c, hw = shape[0], shape[1], int(torch.tensor(shape[2:]).prod())
    x, dy = _t(shape, 1, dtype), _t(shape, 2, dtype)
    w, b = (_t((c,), 3, dtype), _t((c,), 4, dtype)) if affine else (None, None)
    d = lambda t: None if t is None else t.double()  # noqa: E731
    got = _route("group_norm", "group_norm")(x, w, b, n, c, hw, groups, 1e-5)
    want = aten.native_group_norm(x.double(), d(w), d(b), n, c, hw, groups, 1e-5)
    _close(got, want, dtype)
    mask = [True, affine, affine]
    got = _route("group_norm", "group_norm_backward")(
        dy, x, want[1].to(x.dtype), want[2].to(x.dtype), w, n, c, hw, groups, mask
    )
    back = aten.native_group_norm_backward(dy.double(), x.double(), want[1], want[2], d(w), n, c, hw, groups, mask)
    _close(got, back, dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(5, 3, 7), (13, 4), (3, 2, 5, 5), (33, 3, 2)])
@pytest.mark.parametrize("running", [True, False])
def test_batch_norm(defect, shape, running, dtype):
    c = shape[1]
    x, dy = _t(shape, 1, dtype), _t(shape, 2, dtype)
    w, b = _t((c,), 3, dtype), _t((c,), 4, dtype)
    stats = (torch.zeros(c, dtype=x.dtype), torch.ones(c, dtype=x.dtype)) if running else (None, None)
    ref_stats = tuple(None if s is None else s.double() for s in stats)
    before = x.clone()
    got = _route("batch_norm", "batch_norm")(x, w, b, *stats, True, 0.1, 1e-5)
    want = aten.native_batch_norm(x.double(), w.double(), b.double(), *ref_stats, True, 0.1, 1e-5)
    _close(got, want, dtype)
    assert torch.equal(x, before), "the route changed its input"
    if running:
        _close(stats, ref_stats, dtype)
    got = _route("batch_norm", "batch_norm_backward")(
        dy, x, w, *stats, want[1].to(x.dtype), want[2].to(x.dtype), True, 1e-5, [True, True, True]
    )
    back = aten.native_batch_norm_backward(
        dy.double(), x.double(), w.double(), *ref_stats, want[1], want[2], True, 1e-5, [True, True, True]
    )
    _close(got, back, dtype)


def test_every_layer_with_a_row_fold_has_routes_for_the_entry_points_that_launch_it():
    """A layer row whose kernels fold rows of a tile is routed wherever those kernels run."""
    routed = {(r.layer.name, r.attr) for r in layers.routes()}
    for layer in rows.LAYERS:
        backward_folds = any(p.backward and p.kernel in layer.row_folds for p in layer.paths)
        forward_folds = any(not p.backward and p.kernel in layer.row_folds for p in layer.paths)
        assert not backward_folds or (layer.name, layer.backward) in routed, layer.name
        assert not forward_folds or (layer.name, layer.forward) in routed, layer.name
