"""One-expression mutations of FlagGems' real ``@triton.jit`` kernels, for the defect zoo.

mutmut cannot mutate a jitted kernel: its body is never executed as Python.  Under
``TRITON_INTERPRET=1`` it is, though: every kernel is an ``InterpretedFunction`` whose
``FunctionRewriter`` re-parses the function's *source* (that is where the emulator's honest
``and`` is applied) before running it on numpy.  So a mutant can take that source, change one
expression textually, compile it under a filename registered in ``linecache`` (the rewriter
and the emulator's cache key read the source back through ``inspect``) and put the new
function in the kernel's place: the heuristics, autotuner, grid and entry point around it stay
FlagGems' own.

``rejit`` refuses, naming the kernel, when the expression is not in the source: a FlagGems
version that rewrote the kernel must say so, not leave the mutant silently a no-op.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import linecache
import os
import sys
import textwrap
from types import ModuleType
from typing import Any

from ..util import FlContractError

_serial = itertools.count()


def _module(module: ModuleType | str) -> ModuleType:
    if isinstance(module, ModuleType):
        return module
    return sys.modules.get(module) or importlib.import_module(module)


def interpreted(module: ModuleType | str, kernel_name: str) -> Any:
    """The ``InterpretedFunction`` under ``module.kernel_name``: FlagGems' LibEntry, triton's
    Heuristics and Autotuner each hold the next layer in ``.fn``."""
    from triton.runtime import interpreter

    mod = _module(module)
    where = f"{mod.__name__}.{kernel_name}"
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise FlContractError(f"cannot mutate {where}: kernels are compiled (TRITON_INTERPRET is not 1)")
    kernel = getattr(mod, kernel_name, None)
    if kernel is None:
        raise FlContractError(f"cannot mutate {where}: no such kernel in this FlagGems")
    layer, seen = kernel, 0
    while not isinstance(layer, interpreter.InterpretedFunction):
        layer, seen = getattr(layer, "fn", None), seen + 1
        if layer is None or seen > 16:
            raise FlContractError(f"cannot mutate {where}: no InterpretedFunction under {type(kernel).__name__}")
    return layer


def source(module: ModuleType | str, kernel_name: str) -> str:
    """The kernel's source as it runs now, from its ``def`` (the decorators are the layers
    around it)."""
    fn = interpreted(module, kernel_name).fn
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise FlContractError(
            f"cannot mutate {fn.__module__}.{kernel_name}: its source is not readable ({exc})"
        ) from None
    return src[src.index("def ") :]


def rejit(module: ModuleType | str, kernel_name: str, old: str, new: str, count: int = 1) -> Any:
    """Replace ``old`` by ``new`` in the source of kernel ``module.kernel_name`` and run the
    changed kernel from now on (``count`` occurrences, -1 for all; at least ``count`` must be
    there).  Returns the kernel's ``InterpretedFunction``."""
    from triton.runtime import interpreter

    interp = interpreted(module, kernel_name)
    fn = interp.fn
    where = f"{fn.__module__}.{kernel_name}"
    src = source(module, kernel_name)
    found = src.count(old)
    if found == 0 or (count > 0 and found < count):
        raise FlContractError(
            f"cannot mutate {where}: {old!r} occurs {found} time(s) in its source, {max(count, 1)} needed "
            "(this FlagGems changed the kernel; the mutant must be rewritten for it)"
        )
    mutated = src.replace(old, new) if count < 0 else src.replace(old, new, count)
    filename = f"<fl-contract-mutant {where} #{next(_serial)}>"
    linecache.cache[filename] = (len(mutated), None, mutated.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(mutated, filename, "exec"), fn.__globals__, namespace)  # noqa: S102 - the point
    new_fn = namespace[fn.__name__]
    interp.fn = new_fn
    interp.rewriter = interpreter.FunctionRewriter(new_fn, **interp.kwargs)
    interp.rewrite()  # now, while the source is in linecache: a later clearcache cannot unmake it
    return interp
