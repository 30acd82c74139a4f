"""Equivalent-kernel probes (issue 59): each compiler probe's kernel rewritten into variants
that mean the same, which a correct compiler must run to the same result.

A differential fuzzer found silent miscompiles in vendor Triton builds this way (FlagTree
#981-983, #1227: a ``tl.assume`` inside an ``if`` made the compiler drop a later
``atomic_add``, 3072 -> 0): no reference is needed, only two kernels that must agree.  The
rewrites are source-to-source on the probe's ``@triton.jit`` function (``ast``), so they apply
to every probe of the battery and to any kernel added later, not to a list written by hand:

- ``dead_branch``: a never-taken ``if tl.program_id(0) < 0:`` holding a store of another value
  before the kernel's last store;
- ``assume_untaken``: ``tl.assume`` inside that never-taken branch, first in the body;
- ``reordered``: the first two adjacent independent assignments swapped;
- ``split_mask``: a masked load split into the masked-in and the masked-out half, two loads
  joined by ``tl.where`` (the second load's mask ``M ^ M`` is empty, so it yields ``other``);
- ``unrolled``: a loop over constexpr bounds as ``tl.static_range`` (or back), a loop over a
  runtime bound as ``tl.range(..., loop_unroll_factor=2)``.

A variant a rewrite cannot apply to is simply not generated (a probe without a loop has no
``unrolled``).  A disagreement is printed as a standalone reproduction of the *smallest*
disagreeing variant (fewest changed lines): the original and the variant kernel, the launches
replayed with the exact bytes they saw, and the two results - a vendor runs it without this
package.  The same recording replays the original kernel on Triton's interpreter (``oracle``),
the second oracle on hardware (triton #11153).

The rewrites are pure functions of the source; building and running kernels imports triton
(under the CPU emulator, bring it up first).
"""

from __future__ import annotations

import ast
import copy
import difflib
import inspect
import itertools
import linecache
import os
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_serial = itertools.count()

STORES = (
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


@dataclass(frozen=True)
class Variant:
    name: str  # the rewrite: dead_branch, assume_untaken, reordered, split_mask, unrolled
    source: str  # the variant kernel's source, from its ``def``

    def changed_lines(self, original: str) -> int:
        """How far it is from the original: the lines a diff adds or removes."""
        diff = difflib.unified_diff(original.splitlines(), self.source.splitlines(), lineterm="", n=0)
        return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


# -- the rewrites: FunctionDef -> FunctionDef or None (not applicable) -------------------------


def _tl_call(node: ast.AST, names: Sequence[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in names
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
    )


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _never() -> ast.expr:
    return _expr("tl.program_id(0) < 0")


def _store_index(body: list[ast.stmt]) -> int | None:
    for i in range(len(body) - 1, -1, -1):
        if isinstance(body[i], ast.Expr) and _tl_call(body[i].value, STORES):  # type: ignore[attr-defined]
            return i
    return None


def dead_branch(fn: ast.FunctionDef) -> ast.FunctionDef | None:
    """Before the last top-level store, the same store of ``value + 1`` under a branch no
    program takes: a compiler that if-converts it and loses the predicate stores the wrong value."""
    at = _store_index(fn.body)
    if at is None:
        return None
    store = copy.deepcopy(fn.body[at])
    call = store.value  # type: ignore[attr-defined]
    if len(call.args) >= 2:
        call.args[1] = ast.BinOp(left=call.args[1], op=ast.Add(), right=ast.Constant(1))
    else:
        kw = next((k for k in call.keywords if k.arg in ("value", "val")), None)
        if kw is None:
            return None
        kw.value = ast.BinOp(left=kw.value, op=ast.Add(), right=ast.Constant(1))
    fn.body.insert(at, ast.If(test=_never(), body=[store], orelse=[]))
    return fn


def assume_untaken(fn: ast.FunctionDef) -> ast.FunctionDef | None:
    """``tl.assume`` inside a branch no program takes, before everything (FlagTree #1227)."""
    if _store_index(fn.body) is None:
        return None
    assume = ast.Expr(value=_expr("tl.assume(tl.program_id(0) < 0)"))
    fn.body.insert(_docstring_end(fn), ast.If(test=_never(), body=[assume], orelse=[]))
    return fn


def _docstring_end(fn: ast.FunctionDef) -> int:
    first = fn.body[0]
    return 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0


def _names(node: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _effects(node: ast.AST) -> bool:
    return any(
        _tl_call(n, (*STORES, "debug_barrier", "assume"))
        or isinstance(n, ast.Call)
        and not isinstance(n.func, ast.Attribute)
        for n in ast.walk(node)
    )


def reordered(fn: ast.FunctionDef) -> ast.FunctionDef | None:
    """The first two adjacent assignments where neither reads or writes what the other writes
    (and neither stores or calls a device function) swapped."""
    body = fn.body
    for i in range(len(body) - 1):
        a, b = body[i], body[i + 1]
        if not (isinstance(a, ast.Assign) and isinstance(b, ast.Assign)) or _effects(a) or _effects(b):
            continue
        wa, wb = _names(a, ast.Store), _names(b, ast.Store)
        ra, rb = _names(a, ast.Load), _names(b, ast.Load)
        if wa & (wb | rb) or wb & ra:
            continue
        body[i], body[i + 1] = b, a
        return fn
    return None


def split_mask(fn: ast.FunctionDef) -> ast.FunctionDef | None:
    """The first ``tl.load(p, mask=M, other=o)`` as ``tl.where(M, tl.load(p, mask=M, other=o),
    tl.load(p, mask=M ^ M, other=o))``: the masked-in and the (empty) masked-out half."""
    for node in ast.walk(fn):
        if not _tl_call(node, ("load",)):
            continue
        keywords = {k.arg: k.value for k in node.keywords}  # type: ignore[attr-defined]
        if "mask" not in keywords or "other" not in keywords:
            continue
        mask: ast.expr = keywords["mask"]
        empty = copy.deepcopy(node)
        for kw in empty.keywords:  # type: ignore[attr-defined]
            if kw.arg == "mask":
                kw.value = ast.BinOp(left=copy.deepcopy(mask), op=ast.BitXor(), right=copy.deepcopy(mask))
        where = ast.Call(func=_expr("tl.where"), keywords=[], args=[copy.deepcopy(mask), copy.deepcopy(node), empty])  # type: ignore[list-item]
        return _replace(fn, node, where)
    return None


def _replace(tree: ast.FunctionDef, old: ast.AST, new: ast.AST) -> ast.FunctionDef:
    class Swap(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            return new if node is old else self.generic_visit(node)

    return Swap().visit(tree)  # type: ignore[no-any-return,return-value]


def _constexprs(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}


def unrolled(fn: ast.FunctionDef) -> ast.FunctionDef | None:
    """The first ``for`` loop over ``range``/``tl.range``/``tl.static_range``: static bounds
    switch between unrolled (``tl.static_range``) and not (``range``); runtime bounds get
    ``tl.range(..., loop_unroll_factor=2)``."""
    static = _constexprs(fn)
    for node in ast.walk(fn):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)):
            continue
        call = node.iter
        name = ast.unparse(call.func)
        if name not in ("range", "tl.range", "tl.static_range") or call.keywords:
            continue
        bounds_static = all(
            isinstance(a, ast.Constant)
            or (isinstance(a, ast.Name) and a.id in static)
            or isinstance(a, ast.UnaryOp)
            and isinstance(a.operand, ast.Constant)
            for a in call.args
        )
        if name == "tl.static_range":
            call.func = ast.Name(id="range", ctx=ast.Load())
        elif bounds_static:
            call.func = _expr("tl.static_range")
        else:
            call.func = _expr("tl.range")
            call.keywords = [ast.keyword(arg="loop_unroll_factor", value=ast.Constant(2))]
        return fn
    return None


REWRITES: tuple[tuple[str, Callable[[ast.FunctionDef], ast.FunctionDef | None]], ...] = (
    ("dead_branch", dead_branch),
    ("assume_untaken", assume_untaken),
    ("reordered", reordered),
    ("split_mask", split_mask),
    ("unrolled", unrolled),
)


def kernel_source(kernel: Any) -> str:
    """A jitted kernel's source from its ``def`` (decorators are not the kernel)."""
    fn = getattr(kernel, "fn", kernel)
    src = textwrap.dedent(inspect.getsource(fn))
    return src[src.index("def ") :]


def variants(source: str) -> list[Variant]:
    """Every rewrite that applies to the kernel ``source``, each as its own variant."""
    out = []
    for name, rewrite in REWRITES:
        tree = ast.parse(source)
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        changed = rewrite(fn)
        if changed is not None:
            ast.fix_missing_locations(tree)
            out.append(Variant(name, ast.unparse(tree) + "\n"))
    return out


# -- building and running ----------------------------------------------------------------------


def build(
    source: str,
    like: Any,
    name: str | None = None,
    wrap: Callable[[Any], Any] | None = None,
    namespace: dict[str, Any] | None = None,
) -> Any:
    """``source`` jitted (or wrapped by ``wrap``) with the globals of the kernel ``like``
    (``namespace`` instead, where given): compiled under a filename in ``linecache``, which
    triton and its interpreter read the source back through."""
    import triton

    fn = getattr(like, "fn", like)
    if name is not None:
        tree = ast.parse(source)
        next(n for n in tree.body if isinstance(n, ast.FunctionDef)).name = name
        source = ast.unparse(tree) + "\n"
    filename = f"<fl-contract variant {fn.__name__} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    local: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace if namespace is not None else fn.__globals__, local)  # noqa: S102
    new = next(iter(local.values()))
    return (wrap or triton.jit)(new)


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, ...]
    args: tuple[Any, ...]  # ("tensor", storage index, size, stride, offset) or ("value", v)
    kwargs: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Recording:
    """What a probe's launch did, replayable anywhere: each storage's bytes before its first
    launch, the launches in order, and which storage view is the result."""

    storages: tuple[tuple[str, int, bytes | None, bytes], ...]  # (dtype, numel, bytes or None: all `fill`, fill)
    launches: tuple[Launch, ...]
    result: tuple[int, tuple[int, ...], tuple[int, ...], int]  # storage index, size, stride, offset


class Recorder:
    """Stands in for a kernel in a probe's launch: records each launch, then runs it."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.storages: list[Any] = []  # the tensors whose storages the launches used
        self.snapshots: list[tuple[str, int, bytes | None, bytes]] = []
        self.launches: list[Launch] = []

    def _storage(self, t: Any) -> int:
        import torch

        ptr = t.untyped_storage().data_ptr()
        for i, seen in enumerate(self.storages):
            if seen.untyped_storage().data_ptr() == ptr:
                return i
        flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage()).cpu()
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        step = flat.element_size()
        fill = raw[:step]
        if raw and raw == fill * flat.numel():
            self.snapshots.append((str(t.dtype), flat.numel(), None, fill))
        else:
            self.snapshots.append((str(t.dtype), flat.numel(), raw, b""))
        self.storages.append(t)
        return len(self.storages) - 1

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        import torch

        def launch(*args: Any, **kwargs: Any) -> Any:
            recorded = tuple(
                ("tensor", self._storage(a), tuple(a.shape), tuple(a.stride()), a.storage_offset())
                if isinstance(a, torch.Tensor)
                else ("value", a)
                for a in args
            )
            self.launches.append(Launch(tuple(grid), recorded, tuple(sorted(kwargs.items()))))
            return self.kernel[grid](*args, **kwargs)

        return launch

    def recording(self, result: Any) -> Recording:
        where = self._storage(result)
        return Recording(
            tuple(self.snapshots),
            tuple(self.launches),
            (where, tuple(result.shape), tuple(result.stride()), result.storage_offset()),
        )


def _dtype(name: str) -> Any:
    import torch

    return getattr(torch, name.removeprefix("torch."))


def replay(recording: Recording, kernel: Any, device: str) -> Any:
    """Run ``kernel`` through the recorded launches on fresh copies of the recorded bytes on
    ``device``; the result view, on the host."""
    import torch

    buffers = []
    for dtype, numel, raw, fill in recording.storages:
        if raw is None:
            one = torch.frombuffer(bytearray(fill), dtype=_dtype(dtype))
            buffers.append(one.repeat(numel).to(device))
        else:
            buffers.append(
                torch.frombuffer(bytearray(raw), dtype=_dtype(dtype)).to(device)
                if raw
                else torch.empty(0, dtype=_dtype(dtype), device=device)
            )
    for launch in recording.launches:
        args = [buffers[a[1]].as_strided(a[2], a[3], a[4]) if a[0] == "tensor" else a[1] for a in launch.args]
        kernel[launch.grid](*args, **dict(launch.kwargs))
    index, size, stride, offset = recording.result
    return buffers[index].as_strided(size, stride, offset).cpu()


# -- the second oracle: the same launches on Triton's interpreter --------------------------------

# the oracle child's exit status when it refuses the lane's Triton: the caller skips, it does not fail
ORACLE_UNSUPPORTED = 3


def oracle(recordings: dict[str, Recording], timeout: float = 600) -> dict[str, Any]:
    """Each probe's recorded launches replayed on Triton's interpreter, in a child process:
    the interpreter must be switched on before triton is imported (a compiled ``tl.sum`` cannot
    be called from interpreted Python), and the child runs this process's own Triton with the
    emulator's interpreter patches only (its honest ``and``/``or``, compiled NaN semantics, the
    memory guard; no FlagGems, no defect injected), with accelerators hidden.  Returns
    ``{probe id: result array}``, or ``{probe id: error line}``; raises ``UnsupportedTriton``
    (the child's one line) where the patches do not support this Triton."""
    import pickle
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from ..emulation.interpreter import UnsupportedTriton

    with tempfile.TemporaryDirectory(prefix="fl-oracle-") as tmp:
        inp, out = Path(tmp) / "in.pickle", Path(tmp) / "out.pickle"
        inp.write_bytes(pickle.dumps(recordings))
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
        env.pop("TRITON_INTERPRET", None)  # the emulator sets it, before triton is imported
        done = subprocess.run(
            [sys.executable, "-m", "pytest_fl_contract.probes.oracle", str(inp), str(out)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if done.returncode == ORACLE_UNSUPPORTED:
            raise UnsupportedTriton((done.stderr.strip().splitlines() or ["(no reason given)"])[-1])
        if done.returncode != 0:
            from ..util import FlContractError

            raise FlContractError(f"the interpreter oracle failed: {(done.stderr or done.stdout).strip()[-400:]}")
        return pickle.loads(out.read_bytes())  # type: ignore[no-any-return]  # noqa: S301 - our child's output


# -- the reproduction ----------------------------------------------------------------------------


def _literal(value: Any) -> str:
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return f"float({str(value)!r})"
    return repr(value)


def _helpers(fn: Any, seen: dict[str, Any]) -> dict[str, Any]:
    """The jitted device functions ``fn`` calls (by global name), recursively, as Python
    functions: a reproduction prints their source too."""
    for name in sorted({n.id for n in ast.walk(ast.parse(kernel_source(fn))) if isinstance(n, ast.Name)}):
        value = fn.__globals__.get(name)
        if name not in seen and type(value).__name__ in ("JITFunction", "InterpretedFunction"):
            seen[name] = value.fn
            _helpers(value.fn, seen)
    return seen


def reproduction(
    probe_id: str,
    original: str,
    variant: Variant,
    recording: Recording,
    kernel: Any,
    results: tuple[Any, Any],
    device: str,
) -> str:
    """A script that runs on its own (torch and triton only): the original and the variant
    kernel on the recorded launches, and the two results this run saw."""
    fn = getattr(kernel, "fn", kernel)
    helpers = _helpers(fn, {})
    lines = [
        f"# fl-contract equivalent-kernel probe {probe_id}: variant {variant.name!r} disagrees with the original",
        f"# seen here: original {results[0].tolist()!r}, variant {results[1].tolist()!r}",
        *(
            ["import os", "os.environ.setdefault('TRITON_INTERPRET', '1')  # no accelerator: Triton's interpreter"]
            if device == "cpu"
            else []
        ),
        "import torch",
        "import triton",
        "import triton.language as tl",
        "",
        f"DEVICE = {device!r}",
        "",
    ]
    for helper in helpers.values():
        lines += ["@triton.jit", kernel_source(helper).rstrip(), ""]
    renamed = ast.parse(variant.source)
    next(n for n in renamed.body if isinstance(n, ast.FunctionDef)).name = f"{fn.__name__}_{variant.name}"
    lines += ["@triton.jit", original.rstrip(), "", "", "@triton.jit", ast.unparse(renamed), "", ""]
    lines += ["STORAGES = ["]
    for dtype, numel, raw, fill in recording.storages:
        data = repr(raw.hex()) if raw is not None else repr(fill.hex())
        lines.append(f"    ({dtype!r}, {numel}, {raw is None}, bytes.fromhex({data})),")
    lines += ["]", "LAUNCHES = ["]
    for launch in recording.launches:
        args = ", ".join(repr(a) if a[0] == "tensor" else f"('value', {_literal(a[1])})" for a in launch.args)
        kwargs = ", ".join(f"{k!r}: {_literal(v)}" for k, v in launch.kwargs)
        lines.append(f"    ({launch.grid!r}, [{args}], {{{kwargs}}}),")
    lines += [
        "]",
        f"RESULT = {recording.result!r}",
        "",
        "",
        "def run(kernel):",
        "    buffers = []",
        "    for dtype, numel, constant, data in STORAGES:",
        "        one = torch.frombuffer(bytearray(data), dtype=getattr(torch, dtype.split('.')[-1]))",
        "        buffers.append((one.repeat(numel) if constant else one).to(DEVICE))",
        "    for grid, args, kwargs in LAUNCHES:",
        "        real = [buffers[a[1]].as_strided(a[2], a[3], a[4]) if a[0] == 'tensor' else a[1] for a in args]",
        "        kernel[grid](*real, **kwargs)",
        "    index, size, stride, offset = RESULT",
        "    return buffers[index].as_strided(size, stride, offset).cpu()",
        "",
        "",
        f"a, b = run({fn.__name__}), run({fn.__name__}_{variant.name})",
        "print('original:', a.tolist())",
        "print('variant: ', b.tolist())",
        "assert torch.equal(a, b), 'equivalent kernels disagree: a compiler defect'",
    ]
    return "\n".join(lines) + "\n"


def smallest(found: Sequence[Variant], original: str) -> Variant:
    """The disagreeing variant to report: fewest changed lines, then the rewrites' order."""
    order = [name for name, _ in REWRITES]
    return min(found, key=lambda v: (v.changed_lines(original), order.index(v.name) if v.name in order else 99))
