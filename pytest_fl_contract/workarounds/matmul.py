"""Keep a matmul's K tail off memory past its second operand.

FlagGems' mm, addmm and bmm kernels load the second operand's last K tile under a row
condition (``k[:, None] < K``); a compiler that drops it reads the rows past K.  They meet the
first operand's masked zeros, so only NaN or inf there shows - which is what memory past a
tensor holds on a device that reuses it.  There is no axis to move: the route keeps FlagGems'
kernel, arguments and K (so its tuning key and path choice stay), and gives it the second
operand as a view of a zero-padded buffer laid out like the operand, K padded to a multiple
of the largest K tile of the module's configs, so the rows a dropped condition reads are
zeros.  ``a @ a.T`` (mm's symmetric kernel) pads ``a`` and keeps the pair.  The copy is
O(K * N) against the matmul's O(M * N * K); a K that is a multiple of the tile copies nothing.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from ..registry import ROWS
from ..registry.tensorops import MATMUL, TensorOp
from .layers import _of_the_package

_FALLBACK_TILE = 256  # the largest BLOCK_K of FlagGems' tuned configs on every line read
_TILE_NAMES = ("BLOCK_K", "TILE_K", "BLOCK_SIZE_K")
# entry point -> the position of its (..., K, N) operand
_SECOND = {
    "mm": 1,
    "mm_out": 1,
    "addmm": 2,
    "addmm_out": 2,
    "addmm_dtype": 2,
    "addmm_dtype_out": 2,
    "bmm": 1,
    "bmm_out": 1,
}


@dataclass(frozen=True)
class Route:
    """One entry point of a matmul row that the workaround replaces."""

    op: TensorOp
    attr: str
    make: Callable[[Callable[..., Any]], Callable[..., Any]]
    kind: str = "matmul K tail"

    @property
    def module(self) -> str:
        return self.op.module

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.attr}"


def _configs(obj: Any) -> list[Any]:
    """The autotuner configs behind a kernel object (libentry and heuristics wrap it)."""
    for _ in range(8):
        if obj is None:
            return []
        configs = getattr(obj, "configs", None)
        if isinstance(configs, list):
            return configs
        obj = getattr(obj, "fn", None)
    return []


@functools.cache
def k_tile(module_name: str) -> int:
    """The largest K tile any tuned config of the module's kernels may pick."""
    import sys

    module = sys.modules.get(module_name)
    found = [
        int(value)
        for obj in (vars(module).values() if module is not None else ())
        for config in _configs(obj)
        for name, value in getattr(config, "kwargs", {}).items()
        if name in _TILE_NAMES
    ]
    return max(found, default=_FALLBACK_TILE)


def _pad_k(t: Any, tile: int) -> Any:
    """``t`` (..., K, N) as a view of zeros padded along K to a multiple of ``tile``, in the
    same memory order (K-major stays K-major), or ``t`` where K needs no padding."""
    k = t.shape[-2]
    if t.dim() < 2 or t.numel() == 0 or k % tile == 0:
        return t
    rows = -(-k // tile) * tile
    if t.stride(-2) == 1 and t.shape[-1] > 1:  # column-major: each column's K values lie together
        buf = t.new_zeros((*t.shape[:-2], t.shape[-1], rows))
        buf[..., :k].copy_(t.transpose(-1, -2))
        return buf[..., :k].transpose(-1, -2)
    buf = t.new_zeros((*t.shape[:-2], rows, t.shape[-1]))
    buf[..., :k, :].copy_(t)
    return buf[..., :k, :]


def _transpose_pair(a: Any, b: Any) -> bool:
    """``b`` is ``a.T`` over the same memory: mm's symmetric kernel serves it."""
    return (
        a.dim() == b.dim() == 2
        and a.data_ptr() == b.data_ptr()
        and tuple(b.shape) == tuple(a.shape)[::-1]
        and tuple(b.stride()) == tuple(a.stride())[::-1]
    )


def _k_tail(original: Callable[..., Any], attr: str, module: str) -> Callable[..., Any]:
    position = _SECOND[attr]
    name = list(inspect.signature(original).parameters)[position]

    @functools.wraps(original)
    def k_tail(*args: Any, **kwargs: Any) -> Any:
        given = list(args)
        b = given[position] if len(given) > position else kwargs.get(name)
        if not hasattr(b, "stride"):
            return original(*args, **kwargs)
        tile = k_tile(module)
        if len(given) > position and attr.startswith("mm") and _transpose_pair(given[0], b):
            a = _pad_k(given[0].transpose(-1, -2), tile).transpose(-1, -2)  # K is a's last axis
            given[0], given[position] = a, a.transpose(-1, -2)
        elif len(given) > position:
            given[position] = _pad_k(b, tile)
        else:
            kwargs[name] = _pad_k(b, tile)
        return original(*given, **kwargs)

    k_tail.__fl_original__ = original  # type: ignore[attr-defined]
    return k_tail


def routes() -> tuple[Route, ...]:
    """The K-tail routes of the matmul rows the installed FlagGems has."""
    found = []
    for op in (row for row in ROWS.rows("tensorops") if row.family == MATMUL):
        try:
            module = importlib.import_module(op.module)
        except ImportError:
            continue
        if not _of_the_package(module):
            continue
        for attr in _SECOND:
            # the row's entry point and its bindings (mm: mm, mm_out; addmm: addmm_dtype too)
            if callable(getattr(module, attr, None)) and (attr == op.entry or attr.startswith(op.entry + "_")):
                found.append(Route(op, attr, functools.partial(_k_tail, attr=attr, module=op.module)))
    unique: dict[str, Route] = {}
    for route in found:  # a copied row shares its original's entry points: routed once
        unique.setdefault(route.qualname, route)
    return tuple(unique.values())
