"""Which FlagGems modules the masked-row defect reaches, read from FlagGems' source.

A kernel is reached when it loads a 2-D tile under a mask with a row condition (an index
expanded to a column, ``n[:, None] < N``, combined with another condition by ``&`` or
``and``) and folds the tile along its rows (a reduction or scan over axis 0, or over the
whole tile: ``tl.sum(x)`` with no axis, as batch and group norm's statistics do), or feeds
a row-masked tile to ``tl.dot`` as its second operand (a K tail): a dropped row condition
then reads rows past the end *into the result*.  A kernel that only reduces along
its columns reads the extra rows too but never stores them (amax, 5.0.2's log_softmax), so it
is not reached.  The source is parsed, never imported: no device is needed, and any
installed FlagGems line can be read (``root``).

Every reached module must be a registry row's module, or be listed in ``NOT_ROWS`` with the
reason the workaround leaves it: so a FlagGems release that adds an op with a non-inner
kernel fails the project's tests (``tests/test_coverage.py``) until it has a row.
``python -m pytest_fl_contract.registry.coverage [ROOT]`` prints the table.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ROWS

FOLDS = frozenset(
    {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "cumsum", "cumprod", "associative_scan"}
)

# Reached modules with no row yet, by family, and why the workaround leaves them: none is a
# reduction over a dim of one input that moving the axis fixes, and each is wrong on a
# defective compiler only where the rows read past the end are folded in (the op-family work
# gives them rows and contracts).  Keys: the module's path under flag_gems.
_FAMILIES = {
    "a fused normalization (instance norm's running statistics): no aten entry point of the "
    "layer rows (registry.layers) reaches it": ("fused.instance_norm",),
    "an index op (5.4's index_reduce: a compare-and-swap loop over a (rows, index) tile ends when "
    "tl.sum over the whole tile says every lane stopped; rows past the end never stop and swap past "
    "the output): the index-op family has no rows yet": ("ops.index_reduce",),
    "a fused loss: the reduction over classes runs inside the loss kernel, with no dim entry point": (
        "fused.cross_entropy_loss",
    ),
    "linear algebra and distances: Gram products, Jacobi sweeps and cdist's backward fold row tiles "
    "weighted by a masked (other=0) operand: wrong where the rows past the end hold NaN or inf": (
        "ops.svd",
        "ops.cdist_backward",
    ),
    "matmul variants and fused GEMMs: a tl.dot over a K tail loaded under a row condition, as mm's; "
    "the matmul rows (mm, addmm, bmm) stand for the kernel shape, and their route (the second operand a view "
    "of zero-padded memory) is the one each would take": (
        "ops.baddbmm",
        "ops.linear",
        "ops.scaled_mm",
        "ops.scaled_grouped_mm",
        "ops.w8a8_block_fp8_matmul",
        "fused.cutlass_scaled_mm",
        "fused.fused_moe",
        "fused.fused_marlin_moe",
        "fused.matmul_bias_activation",
        "fused.matmuladd",
    ),
    "mm's stream-K kernels: mm's own entry points launch them, with the operands mm's route pads": ("ops.mm_streamk",),
    "convolutions: an implicit GEMM whose K (channels by window) tail is loaded under a row condition": (
        "ops.conv2d",
        "ops.conv3d",
        "ops.conv_transpose1d",
        "ops.conv_transpose2d",
    ),
    "attention (flash, MLA, sparse): P @ V loads V's sequence tail under a row condition inside one fused kernel": (
        "ops.attention",
        "ops.flash_kernel",
        "ops.flash_attention_backward",
        "fused.flash_mla",
        "fused.flash_mla_with_kvcache",
        "fused.flashmla_sparse",
        "fused.sparse_attention",
    ),
    "fused attention, MoE routing, recurrent and sequence-packing kernels (serving engines' paths, "
    "no aten reduction)": (
        "fused.DSA.bin_topk",
        "fused.DSA.indexer_k_tiled",
        "fused.DSA.sparse_mla",
        "fused.FLA.fused_recurrent",
        "fused.FLA.chunk_gated_delta_direct",
        "fused.grouped_topk",
        "fused.rwkv_mm_sparsity",
        "fused.pack_seq",
        "fused.unpack_seq",
    ),
}
NOT_ROWS = {module: why for why, modules in _FAMILIES.items() for module in modules}
SCANNED = ("ops", "fused")  # FlagGems' default backend: what flag_gems.enable() registers


@dataclass(frozen=True)
class Reach:
    """A FlagGems module and its kernels the defect reaches."""

    module: str  # dotted, under flag_gems (e.g. flag_gems.ops.sum)
    kernels: tuple[str, ...]

    @property
    def name(self) -> str:
        """The module's path under flag_gems (``ops.sum``): the key of ``NOT_ROWS``."""
        return self.module.split(".", 1)[-1]


def _names(fn: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """What each local name is assigned, anywhere in the kernel (loops assign in turn)."""
    env: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            env.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            env.setdefault(node.target.id, []).append(node.value)
    return env


def _holds(
    node: ast.expr,
    env: dict[str, list[ast.expr]],
    test: Callable[[list[ast.expr]], bool],
    seen: frozenset[str] = frozenset(),
) -> bool:
    """Some tuple subscript in the expression, or in what its names are assigned, has
    elements that pass ``test``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Tuple) and test(sub.slice.elts):
            return True
        if isinstance(sub, ast.Name) and sub.id in env and sub.id not in seen:
            if any(_holds(v, env, test, seen | {sub.id}) for v in env[sub.id]):
                return True
    return False


def _is_column(elts: list[ast.expr]) -> bool:
    """``x[:, None]``: an index expanded to a column of a 2-D tile."""
    return (
        len(elts) == 2
        and isinstance(elts[0], ast.Slice)
        and isinstance(elts[1], ast.Constant)
        and elts[1].value is None
    )


def _column(node: ast.expr, env: dict[str, list[ast.expr]], seen: frozenset[str] = frozenset()) -> bool:
    return _holds(node, env, _is_column, seen)


def _wider(node: ast.expr, env: dict[str, list[ast.expr]]) -> bool:
    """The expression expands an index to three or more dims (``n[:, None, None]``): a 3-D
    tile, which the 2-D defect does not describe."""
    return _holds(node, env, lambda elts: len(elts) > 2)


def _row_mask(node: ast.expr, env: dict[str, list[ast.expr]], seen: frozenset[str] = frozenset()) -> bool:
    """A 2-D mask that combines a row condition with another (``&`` or ``and``)."""
    if not seen and _wider(node, env):
        return False
    if isinstance(node, ast.Name) and node.id in env and node.id not in seen:
        return any(_row_mask(v, env, seen | {node.id}) for v in env[node.id])
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return len(node.values) > 1 and any(_column(v, env, seen) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return any(_column(side, env, seen) or _row_mask(side, env, seen) for side in (node.left, node.right))
    return False


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _whole(call: ast.Call, position: int = 1) -> bool:
    """A fold given no axis at all: over every element of its tile."""
    return len(call.args) <= position and not any(kw.arg == "axis" for kw in call.keywords)


def _axis(call: ast.Call, position: int = 1) -> object:
    for kw in call.keywords:
        if kw.arg == "axis" and isinstance(kw.value, ast.Constant):
            return kw.value.value
    arg = call.args[position] if len(call.args) > position else None
    return arg.value if isinstance(arg, ast.Constant) else None


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def reached_kernels(source: str) -> tuple[str, ...]:
    """The kernels of one module's source that the defect reaches."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not _is_jit(fn):
            continue
        env = _names(fn)
        calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call)]
        masked = any(
            _call_name(c) == "load"
            and any(_row_mask(m, env) for m in [kw.value for kw in c.keywords if kw.arg == "mask"] + c.args[1:2])
            for c in calls
        )
        folds = any(_call_name(c) in FOLDS and (_axis(c) == 0 or _whole(c)) for c in calls)
        if (masked and folds) or _dot_tail(calls, env):
            found.append(fn.name)
    return tuple(found)


def _row_masked_load(node: ast.expr, env: dict[str, list[ast.expr]], seen: frozenset[str] = frozenset()) -> bool:
    """The expression is (or names) a load under a row condition - alone (``k[:, None] < K``,
    broadcast over the columns) or combined."""
    if isinstance(node, ast.Name) and node.id in env and node.id not in seen:
        return any(_row_masked_load(v, env, seen | {node.id}) for v in env[node.id])
    if isinstance(node, ast.Call) and _call_name(node) in ("to", "trans") and isinstance(node.func, ast.Attribute):
        return _row_masked_load(node.func.value, env, seen)
    if not (isinstance(node, ast.Call) and _call_name(node) == "load"):
        return False
    masks = [kw.value for kw in node.keywords if kw.arg == "mask"] + node.args[1:2]
    return any(not _wider(m, env) and (_column(m, env) or _row_mask(m, env)) for m in masks)


def _dot_tail(calls: list[ast.Call], env: dict[str, list[ast.expr]]) -> bool:
    """``tl.dot(a, b)`` whose second operand was loaded under a row condition: ``b``'s rows are
    the K that the product folds, so rows read past K enter every output (times the first
    operand's masked zeros: NaN or inf there shows)."""
    return any(_call_name(c) == "dot" and len(c.args) > 1 and _row_masked_load(c.args[1], env) for c in calls)


def non_inner_kernels(module: Any) -> tuple[str, ...]:
    """The kernels of a FlagGems module (imported) that a dropped row condition breaks, read
    from its source.  A module with no source to read (a compiled build, a test's stand-in)
    is known by its kernels' names instead: FlagGems calls them ``*_non_inner``."""
    path = getattr(module, "__file__", None)
    if not path or not str(path).endswith(".py"):
        return tuple(name for name in vars(module) if "non_inner" in name)
    return module_kernels(path)


@functools.cache
def module_kernels(path: str | None) -> tuple[str, ...]:
    """``reached_kernels`` of the module at ``path`` (none for a module with no source file)."""
    try:
        return reached_kernels(Path(path).read_text(encoding="utf-8", errors="replace")) if path else ()
    except OSError:
        return ()


def flag_gems_root() -> Path | None:
    """The installed flag_gems package's directory, found without importing it."""
    spec = importlib.util.find_spec("flag_gems")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def scan(root: Path, under: Iterable[str] = SCANNED) -> tuple[Reach, ...]:
    """Every module under ``root``'s folders ``under`` with a kernel the defect reaches."""
    found = []
    for folder in under:
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else ():
            kernels = module_kernels(str(path))
            if kernels:
                dotted = ".".join(("flag_gems", *path.relative_to(root).with_suffix("").parts))
                found.append(Reach(dotted, kernels))
    return tuple(found)


def rows(reach: Reach) -> list[str]:
    """The registry rows whose module is the reached one (a matmul row: where it names the
    kernels whose K tail the defect reads)."""
    return [row.name for row in ROWS.rows() if row.module == reach.module and (row.suite != "tensorops" or row.kernels)]


def covered(reach: Reach) -> str | None:
    """How the project covers a reached module: the registry row(s) for it, or why not; None
    when nothing does."""
    if rows(reach):
        return "row: " + ", ".join(rows(reach))
    return f"no row: {NOT_ROWS[reach.name]}" if reach.name in NOT_ROWS else None


def uncovered(found: Iterable[Reach]) -> tuple[Reach, ...]:
    return tuple(r for r in found if covered(r) is None)


def summary(found: Iterable[Reach]) -> str:
    """One line for a lane's header and report: what the defect reaches, what has no row."""
    found = tuple(found)
    rowed = [r for r in found if rows(r)]
    rest = [r.name for r in found if not rows(r)]
    missing = [r.name for r in uncovered(found)]
    line = f"the masked-row defect reaches {len(found)} FlagGems modules: {len(rowed)} with rows"
    if rest:
        line += f"; no row (the workaround leaves them): {', '.join(rest)}"
    if missing:
        line += f"; UNKNOWN to the registry: {', '.join(missing)}"
    return line


def table(found: Iterable[Reach]) -> Iterator[str]:
    yield "| module | kernels the defect reaches | covered by |"
    yield "|---|---|---|"
    for r in found:
        yield f"| `{r.module}` | {', '.join(f'`{k}`' for k in r.kernels)} | {covered(r) or '**nothing**'} |"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else flag_gems_root()
    if root is None or not (root / "ops").is_dir():
        print(f"fl-contract: error: no flag_gems package {'at ' + str(root) if root else 'installed'}", file=sys.stderr)
        return 2
    found = scan(root)
    print("\n".join(table(found)))
    missing = uncovered(found)
    if missing:
        print(
            f"\n{len(missing)} reached module(s) with no row: {', '.join(r.module for r in missing)}", file=sys.stderr
        )
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
