"""The injected defect ``equivalent_kernels_differ``, modelled on FlagTree #1227, on the interpreter.

A differential fuzzer found a vendor Triton build that, given ``tl.assume`` inside an ``if``,
dropped a later ``atomic_add`` (3072 became 0) - whether or not the branch was ever taken.
The interpreter runs a kernel's Python, so it never sees an untaken branch's ``tl.assume``; the
miscompile is modelled where the compiler would make it, on the kernel's source: the
interpreter's ``FunctionRewriter`` parses every kernel before running it, and while the defect
is enabled, every store or atomic that follows (at the same level, or nested in what follows)
an ``if`` whose body holds a ``tl.assume`` is removed.  A kernel with no ``tl.assume`` in a
branch - every FlagGems kernel and probe today - is untouched, so only an equivalent variant
that adds one (``probes.variants.assume_untaken``) shows the defect: the equivalent-kernel
contract's to catch.
"""

from __future__ import annotations

import ast
from typing import Any

DEFECT = "equivalent_kernels_differ"
_DROPPED = (
    "store",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_xchg",
    "atomic_cas",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
)


def _tl(node: ast.AST, names: tuple[str, ...]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in names
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
    )


def _assumes_in_branch(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and any(_tl(n, ("assume",)) for n in ast.walk(stmt))


def _drop_stores(stmt: ast.stmt) -> ast.stmt:
    class Drop(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            return ast.copy_location(ast.Pass(), node) if _tl(node.value, _DROPPED) else node

    return Drop().visit(stmt)  # type: ignore[no-any-return]


def miscompile(tree: ast.AST) -> ast.AST:
    """The kernel as the defective compiler builds it: stores after a branch holding
    ``tl.assume`` are gone.  Pure: returns the changed tree.

    >>> src = "def k(p):\\n    if tl.program_id(0) < 0:\\n        tl.assume(p > 0)\\n    tl.store(p, 1)\\n"
    >>> "tl.store" in ast.unparse(miscompile(ast.parse(src)))
    False
    """

    def block(body: list[ast.stmt]) -> list[ast.stmt]:
        out, poisoned = [], False
        for stmt in body:
            if poisoned:
                stmt = _drop_stores(stmt)
            else:
                for field in ("body", "orelse"):
                    if isinstance(getattr(stmt, field, None), list):
                        setattr(stmt, field, block(getattr(stmt, field)))
            out.append(stmt)
            poisoned = poisoned or _assumes_in_branch(stmt)
        return out

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.body = block(node.body)
    return tree


class _Injecting:
    """The interpreter's AST transformer with the defect applied first, while enabled."""

    def __init__(self, inner: Any, enabled: Any) -> None:
        self.inner, self.enabled = inner, enabled

    def visit(self, tree: ast.AST) -> ast.AST:
        return self.inner.visit(miscompile(tree) if DEFECT in self.enabled() else tree)


def install(enabled: Any) -> None:
    """Put the defect in the interpreter's rewriter (once); ``enabled()`` says whether it is on.
    Kernels already rewritten are rewritten again at their next call."""
    from triton.runtime import interpreter

    current = interpreter.FunctionRewriter.ast_transformer
    if not isinstance(current, _Injecting):
        interpreter.FunctionRewriter.ast_transformer = _Injecting(current, enabled)
    interpreter.InterpretedFunction.rewritten_fn.clear()
