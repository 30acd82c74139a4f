"""How many times each ``for`` loop of FlagGems' kernels runs on the registry's path cases
(test tooling, on the emulator): a report, not yet a contract.

A path case is the smallest call that launches its kernel, and a loop that runs once passes
every check a defect in its second iteration would fail (an outside review's defects: an
unadvanced carry, a floored tail, a skipped chunk).  Under the interpreter a kernel is Python
rewritten from its source, so each ``for`` gets a counter; ``tl.static_range`` loops (unrolled
by the compiler, their trip count fixed) are left alone.

    python -m pytest_fl_contract.testing.loops [--json]   # every loop site, most iterations a program ran
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Loop:
    module: str
    kernel: str
    line: int  # from the kernel's def (its line 1)
    source: str  # the loop's iterable, as written
    most: int  # most iterations one program ran


_MOST: dict[tuple[str, str, int, str], int] = {}


def _count(iterable: Iterable[Any], key: tuple[str, str, int, str]) -> Iterator[Any]:
    n = 0
    _MOST.setdefault(key, 0)
    try:
        for value in iterable:
            n += 1
            yield value
    finally:  # a break closes the generator: what ran still counts
        _MOST[key] = max(_MOST[key], n)


def install() -> None:
    """Count from now on (after ``bring_up``, before the kernels first run: rewritten ones are dropped)."""
    from triton.runtime import interpreter

    base = type(interpreter.FunctionRewriter.ast_transformer)
    where: list[tuple[str, str]] = [("?", "?")]

    class Counting(base):  # type: ignore[misc, valid-type]
        def visit_For(self, node: ast.For) -> ast.AST:
            self.generic_visit(node)
            source = ast.unparse(node.iter)
            if "static_range" in source:
                return node
            key = ast.Tuple(elts=[ast.Constant(v) for v in (*where[0], node.lineno, source)], ctx=ast.Load())
            node.iter = ast.Call(func=ast.Name(id="__fl_count__", ctx=ast.Load()), args=[node.iter, key], keywords=[])
            return node

    original = interpreter.FunctionRewriter.rewrite_ast

    def rewrite_ast(self: Any) -> Any:
        where[0] = (str(getattr(self.fn, "__module__", "?")), str(getattr(self.fn, "__name__", "?")))
        return original(self)

    interpreter.FunctionRewriter.ast_transformer = Counting()
    interpreter.FunctionRewriter.rewrite_ast = rewrite_ast  # type: ignore[method-assign]
    interpreter.__fl_count__ = _count  # type: ignore[attr-defined]  # copied into each kernel's globals
    interpreter.InterpretedFunction.rewritten_fn.clear()


def loops() -> list[Loop]:
    """Every loop site that started, with the most iterations one program ran."""
    return sorted((Loop(*key, most) for key, most in _MOST.items()), key=lambda lp: (lp.module, lp.kernel, lp.line))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ..emulation.interpreter import bring_up
    from ..hardware.device import import_flag_gems
    from . import paths

    bring_up("nvidia-small")
    install()
    import_flag_gems()
    paths.trace()
    paths.trace_layers()
    found = loops()
    if "--json" in argv:
        print(json.dumps([asdict(lp) for lp in found]))
        return 0
    once = [lp for lp in found if lp.most < 2]
    print(f"{len(found)} loop sites ran on the path cases; {len(once)} never ran twice in one program:")
    for lp in once:
        print(f"  {lp.most}  {lp.module}.{lp.kernel}, line {lp.line}: for ... in {lp.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
