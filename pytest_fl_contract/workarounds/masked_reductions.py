"""Keep FlagGems' reductions off the kernels that use a 2-D row mask.

On a platform with ``masked_2d_row_load`` the ``*_non_inner`` kernels read rows past N.
For a single non-inner int dim it runs the fast path (``fastpath.py``: FlagGems' grid,
no mask that combines a row and a column condition) where that applies - float sum,
mean, softmax - and otherwise moves the reduced axis to the back, runs the original
entry point there (on the inner kernel, whose masks are 1-D) and puts the result back.

Rules, from the seed's review:
- Only a single non-inner int dim is routed (``route``); inner, multi-dim, None and
  non-int dims are forwarded unchanged, so the transpose is paid only where it matters.
- keepdim is forced off for the inner call and re-applied; the dim form (int or
  one-element list) is preserved, because the entry points reject the other form.
- softmax-like results are moved back and made contiguous.
- out= entry points are routed with their own semantics: the original writes into a
  buffer of the caller's dtype (so bool -> int64 holds), which is then copied into the
  caller's buffer with the caller's keepdim.  Out bindings are chosen by *name*, never
  by identity, so a build that aliases ``sum_dim_out`` to ``sum_dim`` never gets the
  non-out wrapper on its out binding.
- Targets are whatever the installed FlagGems has: an entry point is wrapped when its
  module defines a ``*non_inner*`` kernel.

Protocol (what ``--fl-workaround MODULE`` must provide): ``COVERS`` (defect ids),
``install()``, ``uninstall()``, ``installed() -> dict[str, str]`` (entry point -> route).
``install`` is idempotent and runs before the first dispatch; ``uninstall`` restores the
exact original objects.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

# Moving the axis to the back also keeps argmax off its non-inner kernel, whose TILE_N is
# not a power of two for N <= 128 on flag_gems 5.0.2.
COVERS = ("masked_2d_row_load", "argmax_tile_not_pow2")


@dataclass(frozen=True)
class Target:
    module: str
    attr: str
    kind: str  # "reduce": drops the dim; "along": keeps the shape (softmax-like)
    tensors: tuple[str, ...] = ()  # parameters moved with the axis; default: the first
    out: bool = False

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.attr}"


TARGETS: tuple[Target, ...] = (
    Target("flag_gems.ops.sum", "sum_dim", "reduce"),
    Target("flag_gems.ops.sum", "sum_dim_out", "reduce", out=True),
    Target("flag_gems.ops.mean", "mean_dim", "reduce"),
    Target("flag_gems.ops.argmax", "argmax", "reduce"),
    Target("flag_gems.ops.prod", "prod_dim", "reduce"),
    Target("flag_gems.ops.std", "std", "reduce"),
    Target("flag_gems.ops.logsumexp", "logsumexp", "reduce"),
    Target("flag_gems.ops.softmax", "softmax", "along"),
    Target("flag_gems.ops.softmax", "softmax_backward", "along", ("grad_output", "output")),
    Target("flag_gems.ops.log_softmax", "log_softmax", "along"),
    Target("flag_gems.ops.log_softmax", "log_softmax_backward", "along", ("grad_output", "output")),
)


def route(shape: Sequence[int], dim: Any) -> int | None:
    """The normalised dim when this call must leave the non-inner kernel, else None."""
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            return None
        dim = dim[0]
    if type(dim) is not int:  # bool, None, SymInt, tensors: forwarded
        return None
    ndim = len(shape)
    if not -ndim <= dim < ndim:
        return None  # the original raises its own error
    d = dim % ndim
    if math.prod(shape) == 0 or math.prod(shape[d + 1 :]) <= 1:
        return None
    return d


def _same_form(dim: Any, new: int) -> Any:
    return type(dim)([new]) if isinstance(dim, (list, tuple)) else new


def make_wrapper(original: Callable[..., Any], target: Target) -> Callable[..., Any]:
    signature = inspect.signature(original)
    params = list(signature.parameters)
    moved = target.tensors or (params[0],)
    has_keepdim = "keepdim" in signature.parameters

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        first = bound.arguments[moved[0]]
        d = route(tuple(getattr(first, "shape", ())), bound.arguments.get("dim"))
        if d is None:
            return original(*args, **kwargs)
        if not target.out:
            from . import fastpath  # imports triton: only once a call is routed

            result = fastpath.try_fast(target.attr, bound.arguments, d)
            if result is not NotImplemented:
                return result
        last = first.ndim - 1
        keepdim = bool(bound.arguments.get("keepdim", False))
        for name in moved:
            bound.arguments[name] = bound.arguments[name].movedim(d, -1).contiguous()
        bound.arguments["dim"] = _same_form(bound.arguments["dim"], last)
        if has_keepdim:
            bound.arguments["keepdim"] = False
        if target.kind == "along":
            return original(*bound.args, **bound.kwargs).movedim(-1, d).contiguous()
        if not target.out:
            result = original(*bound.args, **bound.kwargs)
            return result.unsqueeze(d) if keepdim else result
        out = bound.arguments["out"]
        scratch = out.new_empty(0)  # the caller's dtype and device: the original's dtype rule holds
        bound.arguments["out"] = scratch
        original(*bound.args, **bound.kwargs)
        result = scratch.unsqueeze(d) if keepdim else scratch
        out.resize_(result.shape)
        out.copy_(result)
        return out

    wrapper.__fl_original__ = original  # type: ignore[attr-defined]
    wrapper.__fl_target__ = target  # type: ignore[attr-defined]
    return wrapper


def _has_non_inner_kernel(module: Any) -> bool:
    return any("non_inner" in name for name in vars(module))


def applicable_targets() -> list[Target]:
    """The targets the installed FlagGems has, whose module uses a non-inner kernel."""
    found = []
    for target in TARGETS:
        try:
            module = importlib.import_module(target.module)
        except ImportError:
            continue
        if callable(getattr(module, target.attr, None)) and _has_non_inner_kernel(module):
            found.append(target)
    return found


def _is_out_binding(name: str) -> bool:
    """An out= binding, by name: a function attribute ``*_out`` or an aten ``*.out`` / ``*_out`` overload."""
    return name.endswith(("_out", ".out"))


# (container, attribute name, original) in the order applied
_journal: list[tuple[Any, Any, Any]] = []
_installed: dict[str, str] = {}


def installed() -> dict[str, str]:
    return dict(_installed)


def _set_attr(container: Any, name: str, value: Any) -> None:
    _journal.append((container, name, getattr(container, name)))
    setattr(container, name, value)


def install() -> dict[str, str]:
    """Wrap every applicable entry point, its re-exports and its registration entries."""
    if _installed:
        return installed()
    flag_gems = importlib.import_module("flag_gems")
    if getattr(flag_gems, "current_work_registrar", None) is not None:
        raise RuntimeError(
            "flag_gems already registered its ops (enable/use_gems) before the workaround "
            "was installed; install it before the first dispatch"
        )
    namespaces = [sys.modules[n] for n in ("flag_gems", "flag_gems.ops") if n in sys.modules]
    wrappers: dict[int, dict[bool, Any]] = {}  # id(original) -> {out binding?: its wrapper}
    for target in applicable_targets():
        module = sys.modules[target.module]
        original = getattr(module, target.attr)
        wrapper = make_wrapper(original, target)
        _set_attr(module, target.attr, wrapper)
        _installed[target.qualname] = target.kind + (" out=" if target.out else "")
        for namespace in namespaces:  # re-exports under the same name only: never by identity alone
            if getattr(namespace, target.attr, None) is original:
                _set_attr(namespace, target.attr, wrapper)
        wrappers.setdefault(id(original), {})[target.out] = wrapper

    config = list(flag_gems._FULL_CONFIG)
    for i, (aten_name, fn, *rest) in enumerate(config):
        wrapper = wrappers.get(id(fn), {}).get(_is_out_binding(aten_name))
        if wrapper is not None:
            config[i] = (aten_name, wrapper, *rest)
    _set_attr(flag_gems, "_FULL_CONFIG", tuple(config))
    if hasattr(flag_gems, "FULL_CONFIG_BY_FUNC"):
        by_func: dict[str, list[Any]] = {}
        for item in config:
            by_func.setdefault(item[1].__name__, []).append(item)
        _set_attr(flag_gems, "FULL_CONFIG_BY_FUNC", by_func)
    return installed()


def uninstall() -> None:
    """Put back exactly the objects that were there before ``install``."""
    while _journal:
        container, name, original = _journal.pop()
        setattr(container, name, original)
    _installed.clear()
