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
- softmax-like results are moved back and made contiguous; inputs are made contiguous
  before anything else (FlagGems does so itself at once).
- out= entry points are routed with their own semantics: the original writes into a
  buffer of the caller's dtype (so bool -> int64 holds), which is then copied into the
  caller's buffer with the caller's keepdim.  Out bindings are chosen by *name*, never
  by identity, so a build that aliases ``sum_dim_out`` to ``sum_dim`` never gets the
  non-out wrapper on its out binding.
- Targets are the reduction rows' entry points (``ROWS.rows("reductions")``, read at install) that the installed FlagGems
  has: one is wrapped when its module defines a ``*non_inner*`` kernel.  Parameters are
  bound by name, so keyword-only ones (std's keepdim) keep their form.

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

from ..registry import ROWS
from ..registry.coverage import non_inner_kernels
from ..registry.reductions import EntryPoint, Op


# Moving the axis to the back also keeps argmax off its non-inner kernel, whose TILE_N is
# not a power of two for N <= 128; every entry point gets a contiguous input (FlagGems
# makes it contiguous at once anyway), which keeps 5.4.0.dev0's softmax from writing into
# an output that kept a permuted input's strides; and a strided out= buffer is filled
# from a contiguous scratch one, since FlagGems writes out= as if contiguous. Past 2**31
# elements in a slice, the fast path's offsets are int64 and the moved axis's inner kernel
# never forms n * K (the hardware run that shows it: results README, "Figures formerly in
# docstrings").
def __getattr__(name: str) -> Any:
    """``COVERS``, the protocol's list of defect ids: what the defect catalogue says this
    workaround covers (``workaround: masked_reductions``), read when first asked."""
    if name == "COVERS":
        from ..config.platforms import load_registry

        return load_registry(entry_points=False).covered_by(__name__)
    raise AttributeError(name)


@dataclass(frozen=True)
class Target:
    """One entry point of a registry op that the workaround may wrap."""

    op: Op
    entry: EntryPoint

    @property
    def module(self) -> str:
        return self.op.module

    @property
    def attr(self) -> str:
        return self.entry.attr

    @property
    def kind(self) -> str:
        return self.entry.kind

    @property
    def out(self) -> str | None:
        return self.entry.out

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.attr}"


def targets() -> tuple[Target, ...]:
    """Every entry point of the op registry's rows, once each (two rows may share one: a
    vendor's row over a FlagGems function, or a copy under another name)."""
    found: dict[str, Target] = {}
    for op in ROWS.rows("reductions"):
        for entry in op.entries:
            found.setdefault(f"{op.module}.{entry.attr}", Target(op, entry))
    return tuple(found.values())


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


def _binder(signature: inspect.Signature) -> Callable[..., inspect.BoundArguments]:
    """``signature.bind`` for every call, at half its cost on the common ones (plain
    positional and keyword arguments: a dict, no per-parameter walk; 2.2 -> 1.0 us on this
    project's CPU).  Wrapped entry points run on every reduction a model makes, and on small
    ones the host's time is the call's time.  Anything unusual goes to ``signature.bind``."""
    params = signature.parameters.values()
    kinds = inspect.Parameter
    positional = [p.name for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    keywords = {p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    required = {
        p.name for p in params if p.default is p.empty and p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)
    }
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in params):
        return signature.bind

    def bind(*args: Any, **kwargs: Any) -> inspect.BoundArguments:
        if len(args) > len(positional) or not keywords.issuperset(kwargs):
            return signature.bind(*args, **kwargs)  # raises TypeError as the call would
        arguments = dict(zip(positional, args))
        if kwargs:
            if not arguments.keys().isdisjoint(kwargs):
                return signature.bind(*args, **kwargs)
            arguments.update(kwargs)
        if not arguments.keys() >= required:
            return signature.bind(*args, **kwargs)
        return inspect.BoundArguments(signature, arguments)  # type: ignore[arg-type]

    return bind


@functools.cache
def _fastpath() -> Any:
    """The fast path's module, imported at the first call that may take it (it imports triton)."""
    from . import fastpath

    return fastpath


def make_wrapper(original: Callable[..., Any], target: Target) -> Callable[..., Any]:
    from torch import Tensor  # flag_gems is imported: so is torch

    signature = inspect.signature(original)
    bind = _binder(signature)
    params = list(signature.parameters)
    moved = target.entry.tensors or (params[0],)
    has_keepdim = "keepdim" in signature.parameters
    out_param = target.out
    fast = out_param is None and target.attr == target.op.entry and target.op.fastpath is not None

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        if fast:  # first: a call the fast path planned before costs a lookup, nothing else
            result = _fastpath().try_fast(target.op, bound.arguments[moved[0]], bound.arguments, route)
            if result is not NotImplemented:
                return result
        for name in moved:
            value = bound.arguments[name]
            if hasattr(value, "is_contiguous") and not value.is_contiguous():
                bound.arguments[name] = value.contiguous()
        first = bound.arguments[moved[0]]
        d = route(tuple(first.shape), bound.arguments.get("dim")) if isinstance(first, Tensor) else None
        if d is None:
            out = bound.arguments.get(out_param) if out_param else None
            if out is None or out.is_contiguous():
                return original(*bound.args, **bound.kwargs)
            # FlagGems writes out= as if contiguous: a strided buffer is filled from a scratch one
            scratch = out.new_empty(0)
            bound.arguments[out_param] = scratch  # type: ignore[index]
            original(*bound.args, **bound.kwargs)
            out.resize_(scratch.shape)
            out.copy_(scratch)
            return out
        last = first.ndim - 1
        keepdim = bool(bound.arguments.get("keepdim", False))
        for name in moved:
            bound.arguments[name] = bound.arguments[name].movedim(d, -1).contiguous()
        bound.arguments["dim"] = _same_form(bound.arguments["dim"], last)
        if has_keepdim:
            bound.arguments["keepdim"] = False
        if out_param is None:
            result = original(*bound.args, **bound.kwargs)
            if target.kind in ("along", "scan"):
                return result.movedim(-1, d).contiguous()
            return result.unsqueeze(d) if keepdim else result
        # out=: the original writes a buffer of the caller's dtype and device (so its dtype
        # rule holds, bool -> int64), which is then put back into the caller's buffer.
        out = bound.arguments[out_param]
        scratch = out.new_empty(0)
        bound.arguments[out_param] = scratch
        original(*bound.args, **bound.kwargs)
        if target.kind in ("along", "scan"):
            result = scratch.movedim(-1, d)
        else:
            result = scratch.unsqueeze(d) if keepdim else scratch
        out.resize_(result.shape)
        out.copy_(result)
        return out

    wrapper.__fl_original__ = original  # type: ignore[attr-defined]
    wrapper.__fl_target__ = target  # type: ignore[attr-defined]
    return wrapper


def applicable_targets() -> list[Target]:
    """The targets the installed FlagGems has, whose module defines a non-inner kernel."""
    found = []
    for target in targets():
        try:
            module = importlib.import_module(target.module)
        except ImportError:
            continue
        if callable(getattr(module, target.attr, None)) and non_inner_kernels(module):
            found.append(target)
    return found


def _is_out_binding(name: str) -> bool:
    """An out= binding, by name: a function attribute ``*_out`` or an aten ``*.out`` / ``*_out`` overload."""
    return name.endswith(("_out", ".out"))


class _Patches:
    """What ``install`` replaced, in order, and the entry points it wrapped.

    Module-level on purpose: flag_gems' module attributes are process-global, so the
    record of what replaced them is too (the protocol's install/uninstall are functions)."""

    def __init__(self) -> None:
        self.journal: list[tuple[Any, str, Any]] = []
        self.entries: dict[str, str] = {}

    def set(self, container: Any, name: str, value: Any) -> None:
        self.journal.append((container, name, getattr(container, name)))
        setattr(container, name, value)

    def undo(self) -> None:
        while self.journal:
            container, name, original = self.journal.pop()
            setattr(container, name, original)
        self.entries.clear()


_PATCHES = _Patches()


def installed() -> dict[str, str]:
    return dict(_PATCHES.entries)


def install() -> dict[str, str]:
    """Wrap every applicable entry point, its re-exports and its registration entries."""
    if _PATCHES.entries:
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
        _PATCHES.set(module, target.attr, wrapper)
        _PATCHES.entries[target.qualname] = target.kind + (" out=" if target.out else "")
        for namespace in namespaces:  # re-exports under the same name only: never by identity alone
            if getattr(namespace, target.attr, None) is original:
                _PATCHES.set(namespace, target.attr, wrapper)
        wrappers.setdefault(id(original), {})[target.out is not None] = wrapper
    from . import layers, matmul  # routes of whole entry points: the normalization layers, the matmuls' K tails

    routes: list[layers.Route | matmul.Route] = [*layers.routes(), *matmul.routes()]
    for route in routes:
        module = sys.modules[route.module]
        original = getattr(module, route.attr)
        wrapper = route.make(original)
        wrapper.__fl_original__ = original  # type: ignore[attr-defined]
        _PATCHES.set(module, route.attr, wrapper)
        _PATCHES.entries[route.qualname] = route.kind
        for namespace in namespaces:
            if getattr(namespace, route.attr, None) is original:
                _PATCHES.set(namespace, route.attr, wrapper)
        wrappers.setdefault(id(original), {})[_is_out_binding(route.attr)] = wrapper

    def rewired(item: tuple[Any, ...]) -> tuple[Any, ...]:
        if not item or len(item) < 2:
            return item
        wrapper = wrappers.get(id(item[1]), {}).get(_is_out_binding(str(item[0])))
        return item if wrapper is None else (item[0], wrapper, *item[2:])

    _PATCHES.set(flag_gems, "_FULL_CONFIG", tuple(rewired(item) for item in flag_gems._FULL_CONFIG))
    by_func = getattr(flag_gems, "FULL_CONFIG_BY_FUNC", None)
    if isinstance(by_func, dict):  # same keys (5.4 adds aliases such as softmax -> softmax_out), rewired items
        _PATCHES.set(flag_gems, "FULL_CONFIG_BY_FUNC", {k: [rewired(i) for i in v] for k, v in by_func.items()})
    return installed()


def uninstall() -> None:
    """Put back exactly the objects that were there before ``install``."""
    _PATCHES.undo()
