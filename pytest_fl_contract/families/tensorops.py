"""The matmul and index ops' family behaviour: operands, layouts, the call through dispatch, the
float64 reference, tolerances and the checks, for every tensor-op row alike (the row's own data
and callables say what differs: its torch call, its index's form, its source).

Every call goes through torch dispatch as a model makes it: torch's op inside
``flag_gems.use_gems(include=...)`` (the op's entry points as the lane installed them, a
workaround's routes included).  The reference is the same call on float64 CPU tensors of the
same values (rounded to the call's dtype first).  A layout changes memory, not values - except
an expanded index, which repeats one slice, on both sides alike."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from ..registry.tensorops import INDEX, MATMUL, TensorCase, TensorOp
from . import EPS, assert_within
from .dispatch import counted, outcome, scope_text, use_gems

FLOATS = ("a", "b", "bias", "x", "src")


def _transposed(t: Any) -> Any:
    """The same values in the reverse memory order."""
    return t.permute(*reversed(range(t.dim()))).contiguous().permute(*reversed(range(t.dim()))) if t.dim() > 1 else t


def _strided(torch: Any, t: Any) -> Any:
    """The same values as every other element of a tensor twice as wide (a gap in memory)."""
    if t.dim() == 0 or t.numel() == 0:
        return t
    wide = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


def _expanded(t: Any, dim: int) -> Any:
    """One slice of the index repeated by a stride-0 view: along an axis other than ``dim``
    (the index's first slice there), or, for a 1-D index, its first element everywhere."""
    if t.numel() == 0:
        return t
    if t.dim() == 1:
        return t[:1].expand(t.shape[0])
    axis = next(a for a in range(t.dim()) if a != dim)
    return t.narrow(axis, 0, 1).expand(t.shape)


def wraps(session: Any, op: TensorOp) -> bool:
    """The lane's workaround wraps the op's entry point."""
    info = session.workaround
    return info is not None and f"{op.module}.{op.entry}" in set(info.entries)


def lay_out(op: TensorOp, ops: dict[str, Any], layout: str) -> dict[str, Any]:
    """``ops`` (on their device) in ``layout``."""
    import torch

    ops = dict(ops)
    if layout == "contiguous":
        return ops
    if op.family == MATMUL:
        if layout == "transposed":
            ops["a"], ops["b"] = (t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in (ops["a"], ops["b"]))
        elif layout == "sliced":  # A a column slice of a wider matrix: a row stride past K
            a = ops["a"]
            wide = torch.zeros((*a.shape[:-1], a.shape[-1] + 5), dtype=a.dtype, device=a.device)
            wide[..., : a.shape[-1]] = a
            ops["a"] = wide[..., : a.shape[-1]]
        elif layout == "syrk":  # b is a's transpose: mm's symmetric path
            ops["b"] = ops["a"].transpose(-1, -2)
        elif layout == "batch_broadcast":  # each operand's first batch, expanded: batch stride 0
            ops["a"], ops["b"] = (t[:1].expand(t.shape) for t in (ops["a"], ops["b"]))
        elif layout == "batch_strided":  # each operand every other batch of one twice as long
            for key in ("a", "b"):
                t = ops[key]
                wide = torch.zeros((2 * t.shape[0], *t.shape[1:]), dtype=t.dtype, device=t.device)
                wide[::2] = t
                ops[key] = wide[::2]
        elif layout in ("bias_full", "bias_column"):  # addmm's bias (M, N) or (M, 1): a row stride
            bias, m = ops["bias"], ops["a"].shape[-2]
            rows = torch.arange(m, dtype=bias.dtype, device=bias.device)[:, None] * 0.25  # each row its own
            ops["bias"] = bias[None, :] + rows if layout == "bias_full" else bias[:1] + rows
        return ops
    if layout == "transposed":
        for key in ("x", "src", "index"):
            if key in ops:
                ops[key] = _transposed(ops[key])
    elif layout == "transposed_src":  # the source (gather, index_select: the index) against the input
        key = "src" if "src" in ops else "index"
        ops[key] = _transposed(ops[key])
    elif layout == "strided_index":
        ops["index"] = _strided(torch, ops["index"])
    elif layout == "expanded_index":
        ops["index"] = _expanded(ops["index"], ops["dim"])
    return ops


def prepared(op: TensorOp, ops: dict[str, Any], *, device: str, dtype: str, layout: str) -> dict[str, Any]:
    """The operands as the call gets them: values rounded to ``dtype`` (float64: the
    reference), moved to ``device``, laid out there (a move makes a view dense again)."""
    import torch

    dt = getattr(torch, dtype)
    moved = {
        k: (v.to(dt).to(device) if k in FLOATS else v.to(device) if hasattr(v, "to") else v) for k, v in ops.items()
    }
    return lay_out(op, moved, layout)


def run(
    op: TensorOp,
    ops: dict[str, Any],
    *,
    device: str,
    dtype: str,
    layout: str = "contiguous",
    gems: Any = None,
    out: bool = False,
    enabling: str = "include",
    arguments: dict[str, Any] | None = None,
    on_device: bool = False,
) -> Any:
    """The op on ``ops`` through torch dispatch (``gems``: FlagGems' entry points serve it; None:
    torch itself), the result on the CPU; ``out``: through its out= form, which must return
    the buffer it was given.  A call that never reached FlagGems fails."""
    import torch

    given = prepared(op, ops, device=device, dtype=dtype, layout=layout)
    buffer = None
    if out:
        shape = op.call(
            torch, prepared(op, ops, device="cpu", dtype="float64", layout=layout), **(arguments or {})
        ).shape
        buffer = torch.full(shape, float("nan"), dtype=getattr(torch, dtype), device=device)
    wanted = {op.entry + ("_out" if out else "")} if gems is not None else set()
    count: Any = counted(gems, wanted) if gems is not None else contextlib.nullcontext(set())
    scope = use_gems(gems, op.gems_names, enabling) if gems is not None else contextlib.nullcontext()
    with count as seen, scope:
        result = op.call(torch, given, buffer, **(arguments or {}))
    if gems is not None and result.numel():
        missing = sorted(wanted - seen)
        assert not missing, (
            f"{op.name}: torch dispatch never reached FlagGems' {', '.join(missing)} "
            f"({scope_text(op.gems_names, enabling)}): the contract tested torch's own kernels"
        )
    if buffer is not None:
        assert result.data_ptr() == buffer.data_ptr(), f"{op.name}(out=): returned a tensor that is not out"
    return result.detach() if on_device else result.detach().cpu()


def reference(
    op: TensorOp, ops: dict[str, Any], layout: str = "contiguous", arguments: dict[str, Any] | None = None
) -> Any:
    return run(op, ops, device="cpu", dtype="float64", layout=layout, arguments=arguments)


def rounded(ops: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The operands as a ``dtype`` call sees them, back in float32."""
    import torch

    dt = getattr(torch, dtype)
    return {k: (v.to(dt).float() if k in FLOATS else v) for k, v in ops.items()}


def tolerance(op: TensorOp, case: TensorCase, dtype: str) -> dict[str, float]:
    """A matmul sums K products in fp32 (``allow_tf32=False``) and rounds once to its dtype;
    the operands are normal, so a result is of order sqrt(K): a few fp32 ulps a term, half an
    ulp of a half type of the result.  An index op copies (exact) or sums a few values.  A
    row read past K, or a value landed on the wrong element, is off by far more."""
    n = op.terms(case)
    half = EPS[dtype] if dtype in ("float16", "bfloat16") else 0.0
    scale = math.sqrt(n)
    return {"rtol": 16 * EPS["float32"] + 2 * half, "atol": (16 * EPS["float32"] * n + 2 * half) * scale}


def compare(op: TensorOp, case: TensorCase, got: Any, want: Any, dtype: str, what: str = "") -> None:
    import torch

    assert tuple(got.shape) == tuple(want.shape), (
        f"{what}{op.name}: shape {tuple(got.shape)}, torch {tuple(want.shape)}"
    )
    assert got.dtype == getattr(torch, dtype), f"{what}{op.name}: dtype {got.dtype}, torch {dtype}"
    assert_within(
        got.double(),
        want.to(got.dtype).double(),
        tolerance(op, case, dtype),
        msg=lambda m: f"{what}{op.name} {case.id}: {m}",
    )


def check(
    op: TensorOp,
    case: TensorCase,
    ops: dict[str, Any],
    *,
    device: str,
    dtype: str,
    gems: Any,
    layout: str = "contiguous",
    out: bool = False,
    what: str = "",
    enabling: str = "include",
    arguments: dict[str, Any] | None = None,
) -> None:
    """FlagGems through dispatch against torch in float64 (``arguments``: a swept parameter,
    given to both); where torch refuses the call, FlagGems must refuse it too."""
    ops = rounded(ops, dtype)
    kind, want = outcome(lambda: reference(op, ops, layout, arguments))
    if kind == "raises":
        got_kind, _ = outcome(
            lambda: run(
                op,
                ops,
                device=device,
                dtype=dtype,
                layout=layout,
                gems=gems,
                out=out,
                enabling=enabling,
                arguments=arguments,
            )
        )
        assert got_kind == "raises", f"{what}{op.name}: torch raises {want}, FlagGems returned a result"
        return
    got = run(
        op, ops, device=device, dtype=dtype, layout=layout, gems=gems, out=out, enabling=enabling, arguments=arguments
    )
    compare(op, case, got, want, dtype, what)


def gradients(
    op: TensorOp, ops: dict[str, Any], *, device: str, dtype: str, gems: Any = None, enabling: str = "include"
) -> dict[str, Any]:
    """The float operands' gradients of the op's call through autograd (``gems``: under its
    registration; None: torch itself), the upstream gradient seeded by the result's shape."""
    import torch

    given = prepared(op, ops, device=device, dtype=dtype, layout="contiguous")
    leaves = {
        k: v.detach().clone().requires_grad_()
        for k, v in given.items()
        if k in FLOATS and hasattr(v, "is_floating_point") and v.is_floating_point()
    }
    given.update(leaves)

    def scope() -> Any:
        return use_gems(gems, op.gems_names, enabling) if gems is not None else contextlib.nullcontext()

    with scope():
        result = op.call(torch, given, None)
    g = torch.Generator().manual_seed(11 + result.numel())  # drawn by torch's own CPU generator
    upstream = torch.randn(result.shape, generator=g, dtype=torch.float64).to(device=device, dtype=result.dtype)
    with scope():
        result.backward(upstream)
    return {k: (None if v.grad is None else v.grad.detach().cpu()) for k, v in leaves.items()}


def check_gradients(
    op: TensorOp,
    case: TensorCase,
    ops: dict[str, Any],
    *,
    device: str,
    gems: Any,
    enabling: str = "include",
    what: str = "",
) -> None:
    """Each float operand's fp32 gradient against float64 autograd of the same values: a
    gradient folds the other operand's extents (a matmul's M or N), so its tolerance is the
    forward's over the case's largest extent."""

    ops = rounded(ops, "float32")
    want = gradients(op, ops, device="cpu", dtype="float64")
    got = gradients(op, ops, device=device, dtype="float32", gems=gems, enabling=enabling)
    widest = TensorCase((max(case.shape),) * 3) if op.family == MATMUL else case
    for key, ref in want.items():
        value = got.get(key)
        assert (value is None) == (ref is None), f"{what}{op.name}: gradient of {key}: {value} where torch has {ref}"
        if ref is None:
            continue
        shape = None if value is None else tuple(value.shape)
        assert value is not None and shape == tuple(ref.shape), (
            f"{what}{op.name}: gradient of {key} has shape {shape}, torch {tuple(ref.shape)}"
        )
        assert_within(
            value.double(),
            ref.to(value.dtype).double(),
            tolerance(op, widest, "float32"),
            msg=lambda m, k=key: f"{what}{op.name} {case.id}: gradient of {k}: {m}",
        )


class TensorOpFamily:
    """The tensor ops' family behaviour for one call of a row at any size (the hardware lanes'
    isolated calls): operands drawn on the device, the result through dispatch, the tolerance."""

    suite = "tensorops"

    def inputs(
        self,
        row: TensorOp,
        case: TensorCase,
        *,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
        backward: bool = False,
    ) -> dict[str, Any]:
        import torch

        dt = getattr(torch, dtype)
        return {k: (v.to(dt) if k in FLOATS else v) for k, v in row.operands(case, seed, device=device).items()}

    def outputs(
        self,
        row: TensorOp,
        case: TensorCase,
        inputs: dict[str, Any],
        *,
        gems: Any = None,
        backward: bool = False,
        enabling: str = "include",
    ) -> dict[str, Any]:
        import torch

        wanted = {row.entry} if gems is not None else set()
        count: Any = counted(gems, wanted) if gems is not None else contextlib.nullcontext(set())
        scope = use_gems(gems, row.gems_names, enabling) if gems is not None else contextlib.nullcontext()
        with count as seen, scope:
            found = {"result": row.call(torch, inputs)}
        missing = sorted(wanted - seen)
        if missing:
            raise RuntimeError(f"torch dispatch never reached FlagGems' {', '.join(missing)}: torch's own kernels ran")
        return found

    def tolerance(
        self, row: TensorOp, case: TensorCase, dtype: str, output: str, on_device: bool = False
    ) -> dict[str, float]:
        return tolerance(row, case, dtype)

    def memory_gib(self, row: TensorOp, case: TensorCase) -> float:
        return row.gib(case)


FAMILY = TensorOpFamily()

__all__ = [
    "FAMILY",
    "INDEX",
    "MATMUL",
    "check",
    "check_gradients",
    "gradients",
    "compare",
    "lay_out",
    "reference",
    "run",
    "tolerance",
    "wraps",
]
