"""Triton's compiler reads a module global inside a kernel only if it is a ``tl.constexpr``
instance (or a module, a jitted function, a dtype, ...); the interpreter reads any.  So a kernel
can pass every CPU lane and fail to compile on every device: FlagGems 5.4.0.dev0's
``special_chebyshev_polynomial_w`` loops to ``_MAX_POLY_DEGREE: tl.constexpr = 101`` (an
annotation, not a constexpr) and raised ``CompilationError: at 37:15`` on an H100 for every call,
where the emulated lanes ran it.  ``install`` makes the interpreter refuse such a kernel when
it is first called, with the compiler's own error, by the rule of the compiler beside it
(``triton.compiler.code_generator.CodeGenerator``'s global lookup: the CPU lanes' Triton is
3.7.1; vendor compilers older than 3.2 did not have the rule).
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from types import ModuleType
from typing import Any, Callable

# set on what the emulator (or a test) puts where the compiler never looks: a plain function in
# place of a jitted one (``_patch_limits``: the compiler reads FlagGems' original, which it
# allows), a test's host-side instrument
ALLOWED = "__fl_the_compiler_allows_it__"


def _allowed(name: str, value: Any) -> bool:
    """What the compiler's global lookup lets a kernel read (Triton 3.6 / 3.7)."""
    if getattr(value, ALLOWED, False):
        return True
    from triton import language
    from triton.compiler.code_generator import CodeGenerator
    from triton.runtime import interpreter, jit

    callables = tuple(
        c for c in (getattr(jit, "JITCallable", None), jit.JITFunction, interpreter.InterpretedFunction) if c
    )
    try:
        from triton._utils import is_namedtuple
    except ImportError:  # older Triton: no namedtuple rule to follow

        def is_namedtuple(value: Any) -> bool:
            return False

    module = getattr(value, "__module__", "") or ""
    return (
        name in CodeGenerator.builtin_namespace
        or type(value) is ModuleType
        or isinstance(value, callables)
        or bool(getattr(value, "__triton_builtin__", False))
        or bool(getattr(value, "__triton_aggregate__", False))
        or module.startswith(("triton.language", "triton.experimental.gluon.language"))
        or isinstance(value, (language.dtype, language.constexpr))
        or is_namedtuple(value)
    )


def _local_names(fn: ast.FunctionDef) -> set[str]:
    """The names the kernel binds itself: its parameters and whatever its body assigns."""
    args = fn.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def refused(fn: Callable[..., Any]) -> tuple[str, ast.Name, str] | None:
    """(the kernel's source, the first global it reads that the compiler refuses, its name) or
    None; None too where the source cannot be read (nothing to say about it)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return None
    kernel = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if kernel is None:
        return None
    bound = _local_names(kernel)
    scope = getattr(fn, "__globals__", {})
    for stmt in kernel.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
                if node.id in scope and not _allowed(node.id, scope[node.id]):
                    return src, node, node.id
    return None


def check(fn: Callable[..., Any], seen: dict[Any, Exception | None]) -> None:
    """Raise the compiler's error for ``fn`` (once decided per code object)."""
    key = getattr(fn, "__code__", fn)
    if key not in seen:
        found = refused(fn)
        if found is None:
            seen[key] = None
        else:
            from triton.compiler.errors import CompilationError

            src, node, name = found
            seen[key] = CompilationError(
                src,
                node,
                f"NameError('Cannot access global variable {name} from within @jit'ed function. Triton "
                "kernels can only access global variables that are instanstiated as constexpr "
                "(`x = triton.language.constexpr(42)`)') (the compiler's rule, applied by the interpreter)",
            )
    error = seen[key]
    if error is not None:
        raise error


def install(interpreter: Any) -> None:
    """Every launch and device call of the interpreter checks its function first (the compiler
    reads every global at compile time, whichever branch uses it).  TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1
    lifts the rule, as it does for the compiler."""
    if os.environ.get("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "0") in ("1", "true", "on"):
        return
    patch_lang = interpreter._patch_lang
    seen: dict[Any, Exception | None] = {}

    def patched(fn: Any) -> Any:
        check(fn, seen)
        return patch_lang(fn)

    interpreter._patch_lang = patched
