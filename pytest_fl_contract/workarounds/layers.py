"""Keep FlagGems' normalization layers off the kernels that fold the rows of a 2-D tile.

Layer norm's and RMS norm's weight gradients, group norm's statistics and gradients, and
batch norm's training statistics and gradients fold (rows, channels) tiles under a mask
with a row condition inside one entry point (``registry.layers``: the rows' ``row_folds``):
there is no dim to move.  Each route keeps what FlagGems computes per output row (layer
norm's dx kernel) and computes the folds from torch operations in fp32 or wider - sums and
means over the last dim, which torch dispatch sends to FlagGems' reductions (and so through
this workaround's routes) when ``use_gems`` is on, to torch otherwise.  The results keep
FlagGems' dtypes and shapes.  Where FlagGems' own entry point has a defect the route's
arithmetic does not share (layer_norm_backward's rank, group norm's group mask, batch norm's
missing running buffers, RMS norm's flat weight gradient), the route is right where the
entry point is not: the defect catalogue says so (``workaround: masked_reductions``).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from ..registry import ROWS
from ..registry.layers import Layer


@dataclass(frozen=True)
class Route:
    """One entry point of a layer row that the workaround replaces."""

    layer: Layer
    attr: str
    make: Callable[[Callable[..., Any]], Callable[..., Any]]
    kind: str = "layer"

    @property
    def module(self) -> str:
        return self.layer.module

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.attr}"


def _wide(t: Any) -> Any:
    """``t`` in fp32, or float64 where it is: the folds' precision."""
    import torch

    return t.to(torch.promote_types(t.dtype, torch.float32))


def _mask(output_mask: Sequence[bool] | None) -> list[bool]:
    return [bool(m) for m in output_mask] if output_mask is not None else [True, True, True]


def _layer_norm_backward(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def layer_norm_backward(
        grad_out: Any,
        input: Any,
        normalized_shape: Any,
        mean: Any,
        rstd: Any,
        weight: Any = None,
        bias: Any = None,
        output_mask: Any = None,
    ) -> Any:
        mask = _mask(output_mask)
        n = math.prod(normalized_shape)
        if input.numel() == 0 or n == 0:
            return original(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
        m = input.numel() // n
        x2, dy2 = input.reshape(m, n), grad_out.reshape(m, n)  # (rows, normalized): its dx kernel's rows are rows
        dx = None
        if mask[0]:
            dx = original(
                dy2,
                x2,
                [n],
                mean.reshape(m),
                rstd.reshape(m),
                None if weight is None else weight.reshape(n),
                None,
                [True, False, False],
            )[0].reshape(input.shape)
        dw = db = None
        if mask[1] and weight is not None:
            xhat = (_wide(x2) - _wide(mean).reshape(m, 1)) * _wide(rstd).reshape(m, 1)
            dw = (_wide(dy2) * xhat).sum(0).to(weight.dtype).reshape(weight.shape)
        if mask[2] and bias is not None:
            db = _wide(dy2).sum(0).to(bias.dtype).reshape(bias.shape)
        return dx, dw, db

    return layer_norm_backward


def _rms_norm_backward(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def rms_norm_backward(dy: Any, x: Any, inv_rms: Any, normalized_shape: Any, weight: Any, eps: float = 1e-5) -> Any:
        n = math.prod(normalized_shape)
        if x.numel() == 0 or n == 0:
            return original(dy, x, inv_rms, normalized_shape, weight, eps)
        m = x.numel() // n
        x2, g, r = _wide(x.reshape(m, n)), _wide(dy.reshape(m, n)), _wide(inv_rms).reshape(m, 1)
        w = _wide(weight).reshape(1, n) if weight is not None else 1.0
        wg = g * w
        dx = r * wg - x2 * r**3 * (wg * x2).mean(-1, keepdim=True)
        dw = None if weight is None else (g * x2 * r).sum(0).to(weight.dtype).reshape(weight.shape)
        return dx.to(x.dtype).reshape(x.shape), dw

    return rms_norm_backward


def _group_norm(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def group_norm(input: Any, weight: Any, bias: Any, N: int, C: int, HxW: int, group: int, eps: float = 1e-5) -> Any:
        if input.numel() == 0 or group <= 0 or C % group:
            return original(input, weight, bias, N, C, HxW, group, eps)
        x = _wide(input).reshape(N, group, -1)
        mean = x.mean(-1, keepdim=True)
        centred = x - mean
        rstd = ((centred * centred).mean(-1, keepdim=True) + eps).rsqrt()
        y = (centred * rstd).reshape(N, C, -1)
        if weight is not None:
            y = y * _wide(weight).reshape(1, C, 1)
        if bias is not None:
            y = y + _wide(bias).reshape(1, C, 1)
        return (
            y.to(input.dtype).reshape(input.shape),
            mean.reshape(N, group).to(input.dtype),
            rstd.reshape(N, group).to(input.dtype),
        )

    return group_norm


def _group_norm_backward(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def group_norm_backward(
        grad_out: Any,
        input: Any,
        mean: Any,
        rstd: Any,
        weight: Any,
        N: int,
        C: int,
        HxW: int,
        group: int,
        output_mask: Any,
    ) -> Any:
        mask = _mask(output_mask)
        if input.numel() == 0 or group <= 0 or C % group:
            return original(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
        x, g = _wide(input).reshape(N, group, -1), _wide(grad_out).reshape(N, group, -1)
        r = _wide(rstd).reshape(N, group, 1)
        xhat = (x - _wide(mean).reshape(N, group, 1)) * r
        dx = dw = db = None
        if mask[0]:
            wg = g
            if weight is not None:
                wg = (g.reshape(N, C, -1) * _wide(weight).reshape(1, C, 1)).reshape(N, group, -1)
            dx = r * (wg - wg.mean(-1, keepdim=True) - xhat * (wg * xhat).mean(-1, keepdim=True))
            dx = dx.to(input.dtype).reshape(input.shape)
        dtype = weight.dtype if weight is not None else input.dtype
        if mask[1]:
            dw = (g * xhat).reshape(N, C, -1).sum(-1).sum(0).to(dtype)
        if mask[2]:
            db = g.reshape(N, C, -1).sum(-1).sum(0).to(dtype)
        return dx, dw, db

    return group_norm_backward


def _three_d(t: Any) -> Any:
    """(batch, channels, everything else), as FlagGems' make_3d_for_bn views it."""
    return t.reshape(t.shape[0], t.shape[1], -1) if t.dim() >= 2 else t.reshape(t.shape[0], 1, 1)


def _batch_norm(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def batch_norm(
        input: Any,
        weight: Any = None,
        bias: Any = None,
        running_mean: Any = None,
        running_var: Any = None,
        training: bool = False,
        momentum: float = 0.1,
        eps: float = 1e-5,
    ) -> Any:
        if not training or input.numel() == 0 or input.dim() < 2:
            return original(input, weight, bias, running_mean, running_var, training, momentum, eps)
        x3 = _wide(_three_d(input))
        count = x3.shape[0] * x3.shape[2]
        per_channel = x3.transpose(0, 1).reshape(
            x3.shape[1], -1
        )  # (channels, batch x spatial): folds along the last dim
        mean = per_channel.mean(-1)
        centred = per_channel - mean[:, None]
        var = (centred * centred).mean(-1)
        invstd = (var + eps).rsqrt()
        y = (x3 - mean[None, :, None]) * invstd[None, :, None]
        if weight is not None:
            y = y * _wide(weight)[None, :, None]
        if bias is not None:
            y = y + _wide(bias)[None, :, None]
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
        if running_var is not None:
            unbiased = var * count / max(count - 1, 1)
            running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))
        return y.to(input.dtype).reshape(input.shape), mean.to(input.dtype), invstd.to(input.dtype)

    return batch_norm


def _batch_norm_backward(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def batch_norm_backward(
        grad_out: Any,
        input: Any,
        weight: Any = None,
        running_mean: Any = None,
        running_var: Any = None,
        save_mean: Any = None,
        save_invstd: Any = None,
        train: bool = False,
        eps: float = 1e-5,
        output_mask: Any = None,
    ) -> Any:
        mask = _mask(output_mask)
        if input.numel() == 0 or input.dim() < 2 or (train and (save_mean is None or save_invstd is None)):
            return original(
                grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask
            )
        x3, g3 = _wide(_three_d(input)), _wide(_three_d(grad_out))
        if train:
            mean, invstd = _wide(save_mean), _wide(save_invstd)
        else:
            mean, invstd = _wide(running_mean), (_wide(running_var) + eps).rsqrt()
        xhat = (x3 - mean[None, :, None]) * invstd[None, :, None]
        sum_dy = g3.transpose(0, 1).reshape(g3.shape[1], -1).sum(-1)
        sum_dy_xhat = (g3 * xhat).transpose(0, 1).reshape(g3.shape[1], -1).sum(-1)
        dx = dw = db = None
        if mask[0]:
            scale = invstd if weight is None else invstd * _wide(weight)
            if train:
                count = x3.shape[0] * x3.shape[2]
                dx = (g3 - (sum_dy[None, :, None] + xhat * sum_dy_xhat[None, :, None]) / count) * scale[None, :, None]
            else:
                dx = g3 * scale[None, :, None]
            dx = dx.to(input.dtype).reshape(input.shape)
        dtype = weight.dtype if weight is not None else input.dtype
        if mask[1]:
            dw = sum_dy_xhat.to(dtype)
        if mask[2]:
            db = sum_dy.to(dtype)
        return dx, dw, db

    return batch_norm_backward


# (the layer's torch.nn.functional name, which of its entry points) -> the route: a row of any
# name takes the routes of the functional it calls; a functional with none here is left alone
_ROUTES: dict[tuple[str, str], Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    ("layer_norm", "backward"): _layer_norm_backward,
    ("rms_norm", "backward"): _rms_norm_backward,
    ("group_norm", "forward"): _group_norm,
    ("group_norm", "backward"): _group_norm_backward,
    ("batch_norm", "forward"): _batch_norm,
    ("batch_norm", "backward"): _batch_norm_backward,
}


def _of_the_package(module: Any) -> bool:
    """The module lies inside the ``flag_gems`` package imported now (not a stale one that a
    test's stand-in package or a second install left in ``sys.modules``)."""
    import os
    import sys

    package = sys.modules.get("flag_gems")
    roots = [os.path.realpath(p) for p in getattr(package, "__path__", [])]
    path = os.path.realpath(getattr(module, "__file__", "") or "")
    return any(path.startswith(root + os.sep) for root in roots)


def routes() -> tuple[Route, ...]:
    """The routes of the layer rows the installed FlagGems has (a row without a route is left)."""
    found = []
    for layer in ROWS.rows("layers"):
        try:
            module = importlib.import_module(layer.module)
        except ImportError:
            continue
        if not _of_the_package(module):
            continue
        for role, attr in (("forward", layer.forward), ("backward", layer.backward)):
            make = _ROUTES.get((layer.functional, role))
            if make is not None and callable(getattr(module, attr, None)):
                found.append(Route(layer, attr, make))
    unique: dict[str, Route] = {}
    for route in found:  # a copied row shares its original's entry points: routed once
        unique.setdefault(route.qualname, route)
    return tuple(unique.values())
