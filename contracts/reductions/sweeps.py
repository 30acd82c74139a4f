"""Sweeps, inputs and checks shared by the reduction contracts.

The ops themselves come from the one op registry (``pytest_fl_contract.registry.ops``): how to
call each entry point, its torch call and float64 reference, its exemptions.  Entry
points are looked up at call time, so whatever the lane installed (a workaround) is what
gets called.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

from pytest_fl_contract.hardware.devicehealth import device_fault
from pytest_fl_contract.hardware.slabs import slabs
from pytest_fl_contract.registry import ops as registry
from pytest_fl_contract.registry.ops import Op, installed, non_inner_kernels
from pytest_fl_contract.util import first_line

# -- sweeps -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dim: Any  # an int; a list or None where a contract checks those forms

    @property
    def id(self) -> str:
        dim = "all" if self.dim is None else "_".join(map(str, self.dim)) if isinstance(self.dim, list) else self.dim
        return "x".join(map(str, self.shape)) + f"-d{dim}"

    @property
    def n(self) -> int:
        return self.shape[self.dim]

    @property
    def non_inner(self) -> bool:
        """True when FlagGems takes its non-inner (2-D row mask) kernel for this dim."""
        d = self.dim % len(self.shape)
        return math.prod(self.shape[d + 1 :]) > 1


def _grid(ns: list[int], ks: list[int], ms: list[int]) -> list[Case]:
    cases = []
    for n in ns:
        for k in ks:
            for m in ms:
                cases.append(Case((m, n, k), 1))  # middle axis: non-inner when k > 1
            cases.append(Case((n, k), 0))  # leading axis
            cases.append(Case((ms[-1], k, n), -1))  # last axis: always inner
    return list(dict.fromkeys(cases))


def sweep(name: str) -> list[Case]:
    """quick: small grids for the interpreter; full: the issue's sweep, for accelerators."""
    if name == "quick":
        return _grid([5, 13], [1, 64], [1, 3]) + [Case((2, 556, 8), 1)]
    return _grid([*range(1, 17), 556, 4099], [1, 64, 256, 1024], [1, 3])


# Cases for the determinism and real-case contracts: non-inner, partial row tiles.
PARTIAL_TILE_CASES = {
    "quick": [Case((3, 5, 64), 1), Case((13, 64), 0), Case((2, 300, 8), 1)],
    "full": [Case((3, 5, 64), 1), Case((13, 1024), 0), Case((64, 557, 256), 1), Case((4099, 64), 0)],
}
REAL_CASE = {  # Qwen-VL vision tower: bilinear position embedding, sum(dim=1)
    "full": Case((556, 4, 1024), 1),
    "quick": Case((16, 4, 64), 1),  # same N and mask shape; the moved-axis path costs M*K interpreter programs
}

KEEPDIM_CASES = [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 5), -1)]
FORM_CASES = {"non-inner": Case((3, 4, 64), 1), "inner": Case((3, 64, 4), 2)}  # N a power of two: argmax compiles


def ops_for(sweep_name: str, views: bool = True) -> list[Op]:
    """The ops a sweep covers.  full: every op the installed FlagGems has.  quick (the
    interpreter): those whose kernels have a non-inner path (the masked-row defect's
    reach), every op of the other families (issue 29: their defect table is measured on the
    CPU lanes), and the ``toy`` ones (tl.reduce with a combine_fn) on toy shapes only.
    When flag_gems cannot even be imported, every op: each case then fails saying why.
    ``views``: each row's views follow it (max.dim's indices: ``with_views``)."""
    try:
        import flag_gems  # noqa: F401 - the lane session installs the workaround on import
    except Exception:
        return with_views(registry.OPS) if views else list(registry.OPS)
    chosen = [op for op in registry.OPS if installed(op)]
    if sweep_name == "quick":
        chosen = [op for op in chosen if op.interpreter == "toy" or op.family != "reductions"
                  or non_inner_kernels(sys.modules[op.module])]
    return with_views(chosen) if views else chosen


def with_views(rows: Any) -> list[Op]:
    """The rows, each followed by its views where its entry point returns a tuple (max.dim's
    indices, aminmax's max).  The views take the contracts of a sweep (accuracy, determinism, keepdim, ...),
    the index, tile and path contracts; the checklist contracts (``any_op``: layouts, special
    values, dims, generated draws, ...) call the same kernel with the same arguments for the
    values and take the row only: on the interpreter a view there doubled its family's cost."""
    return [view for op in rows for view in (op, *op.views())]


TOY_CASES = (Case((3, 5, 4), 1), Case((5, 4), 0), Case((3, 4, 5), -1))


DTYPES = {"quick": ("float32",), "full": ("float32",)}
HALF_DTYPES = ("bfloat16", "float16")
# Half types run on a subset: their kernels are the fp32 ones with a cast at load and
# store, so partial row tiles (N = 5, 556, 4099) at every K cover them.
QUICK_HALF_CASES = [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 13), -1), Case((2, 556, 8), 1)]


# The op families beyond the reductions (issue 29) on the interpreter: their kernels take one
# program per output row (FlagGems moves the reduced dims to the back, then tiles outputs), so
# the quick sweep's K = 64 costs 64 programs an output row; K = 8 keeps the non-inner layout,
# partial row and column tiles and every N of the quick sweep at an eighth of the programs.
FAMILY_QUICK = _grid([5, 13], [1, 8], [1, 3]) + [Case((2, 556, 8), 1)]
FAMILY_QUICK_HALF = [Case((3, 5, 8), 1), Case((13, 8), 0), Case((3, 8, 13), -1), Case((2, 556, 8), 1)]


def half_cases(sweep_name: str, op: Op | None = None) -> list[Case]:
    if sweep_name == "quick":
        return FAMILY_QUICK_HALF if op is not None and op.family != "reductions" else QUICK_HALF_CASES
    return [c for c in sweep("full") if c.n in (5, 556, 4099)]


DTYPE_CAPABILITY = {"bfloat16": "bf16", "float64": "fp64"}
_EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7, "float64": 2.0**-52}


def tolerance(dtype: str, n: int, kind: str = "reduce") -> dict[str, float]:
    """assert_close tolerances against float64 of the same inputs.

    FlagGems accumulates in fp32 and rounds once to the output dtype, so a half-type
    result is off by at most half an ulp (rtol = eps of the dtype: a kernel that
    accumulates in fp16/bf16 drifts well past it); fp32 results differ by summation order
    (rtol 4 eps).  atol bounds fp32 accumulation over n terms, for sums that cancel; an
    ``along`` result (softmax: values near 1/n) is never a cancelling sum, and an atol that
    grows with n would let a wrong softmax over 32769 columns pass whole (every value off by
    11%): its atol is a few fp32 ulps."""
    if dtype == "float64":  # accumulated in float64: as close as the reference itself
        return {"rtol": 64 * _EPS["float64"], "atol": 8 * _EPS["float64"] * max(n if kind != "along" else 1, 1)}
    rtol = _EPS[dtype] if dtype != "float32" else 4 * _EPS["float32"]
    terms = max(n, 1) if kind != "along" else 1
    return {"rtol": rtol, "atol": 8 * _EPS["float32"] * terms + (_EPS[dtype] / 64 if dtype != "float32" else 0)}


def assert_close(got: Any, want: Any, rtol: float, atol: float, msg: Any = None) -> None:
    """``torch.testing.assert_close(got, want, rtol=, atol=, equal_nan=True)`` for two
    float64 CPU tensors of one shape, at the cost of a few in-place passes when they are
    close: torch.isclose took 12 s over 2**27 elements on one thread, these 0.5 s (blocks of
    64 Ki elements: temporaries that stay in cache and in the allocator), and the grid-limit
    cases compare that many.  The same rule as torch.isclose (equal, both NaN, or a finite
    difference within atol + rtol * |want|); a failure gets assert_close's message."""
    import torch

    if not want.is_floating_point():  # a truth value, a count, an index: compared as numbers
        got, want = got.double(), want.double()
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    for start in range(0, flat_got.numel(), _BLOCK):
        g, w = flat_got[start : start + _BLOCK], flat_want[start : start + _BLOCK]
        diff = (g - w).abs_().nan_to_num_(nan=math.nan, posinf=math.nan)  # an infinite gap is never close
        close = diff <= w.abs().mul_(rtol).add_(atol)
        if not bool(close.logical_or_(g == w).logical_or_(g.isnan() & w.isnan()).all()):
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, msg=msg)
            return


_BLOCK = 1 << 16


def bits(t: Any) -> Any:
    """``t``'s bits as integers of its element size, on the CPU: ``torch.equal`` of two is
    bit for bit, NaN included (NaN != NaN as floats)."""
    import torch

    t = t.detach().cpu().contiguous()
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.int64)


def make_input(case: Case, dtype: str, device: str, seed: int = 0, op: Op | None = None) -> Any:
    """Seeded normal values; for an index op (``op``), a ramp along memory order towards the
    op's extreme with a little noise: a kernel that reads past the end of a row then always
    meets a more extreme value, so the defect shows whatever the seed; for a product, values
    whose product keeps its size."""
    import torch

    g = torch.Generator().manual_seed(seed + hash(case.shape) % 10_000)
    x = torch.randn(case.shape, generator=g, dtype=torch.float32)
    if op is not None and op.absorbing == 0.0 and x.numel():
        # a product (prod, cumprod): normal values' product underflows to 0 past a few hundred
        # terms, and 0 is what a kernel that drops terms also returns.  Magnitudes exp(z / sqrt(n))
        # keep a slice's product near 1 in size, so every term it drops shows
        n = reduced_size(case.shape, case.dim)
        x = x.sign().mul_(torch.randn(case.shape, generator=g).div_(max(n, 1) ** 0.5).exp_())
    if op is not None and op.zeros is not None:
        x = with_zeros(x, op.zeros, reduced_size(case.shape, case.dim), g)
    if op is not None and op.extreme is not None and x.numel():
        ramp = torch.linspace(0.0, float(x.numel()), x.numel()).reshape(case.shape)  # in place: 2**27 elements
        x = x.clamp_(-1, 1).mul_(0.25).add_(ramp if op.extreme == "max" else ramp.neg_())
    return on_device(x.to(getattr(torch, dtype)), device, op)


def with_zeros(x: Any, kind: str, n: int, g: Any) -> Any:
    """Exact zeros where an op's answer turns on them (``Op.zeros``): "sparse" keeps each value
    with probability 1 - 2**(-1/n), "dense" zeroes each with it, so that about half the slices
    of ``n`` answer each way; "half" zeroes each value with probability one half."""
    import torch

    p = 1.0 - 0.5 ** (1.0 / max(n, 1)) if kind in ("sparse", "dense") else 0.5
    draw = torch.rand(x.shape, generator=g) < p
    return x * draw if kind == "sparse" else x.masked_fill_(draw, 0.0)


def on_device(x: Any, device: str, op: Op | None = None) -> Any:
    """``x`` on the device; for an index op, in a buffer whose elements past the tensor's
    end hold the value that wins (+inf for argmax, -inf for argmin).  A kernel that reads
    past its last row otherwise meets whatever memory follows the allocation: garbage that
    decides the index on one run and not the next (an H200 saw both).  With the winner
    there, such a read always shows, on hardware and on the emulator alike; a correct
    kernel never looks."""
    import torch

    x = x.contiguous()
    if op is None or op.extreme is None or not x.numel() or x.dtype == torch.bool:
        return x.to(device)
    big = op.extreme == "max"
    if x.is_floating_point():
        winner = float("inf") if big else float("-inf")
    else:
        info = torch.iinfo(x.dtype)
        winner = info.max if big else info.min
    tail = min(max(x.numel(), 256), 1 << 16)
    buffer = torch.full((x.numel() + tail,), winner, dtype=x.dtype, device=device)
    buffer[: x.numel()].copy_(x.reshape(-1))
    return buffer[: x.numel()].view(x.shape)


def cases_for(op: Op, sweep_name: str) -> list[Case]:
    if sweep_name == "quick" and op.interpreter == "toy":
        return list(TOY_CASES)
    if sweep_name == "quick" and op.family != "reductions":
        return list(FAMILY_QUICK)
    return sweep(sweep_name)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("raises", exception type name): forwarded calls must agree on it."""
    try:
        return ("ok", call())
    except Exception as exc:  # the outcome is the exception type itself
        return ("raises", type(exc).__name__)


def check(op: Op, got: Any, x: Any, d: int, keepdim: bool = False) -> None:
    """Compare a result with the float64 CPU reference (argmax: by the value it points at)."""
    import torch

    got = got.detach().cpu()
    if op.kind == "index":  # the extremum itself, not torch's index of it (amax: a 28th of argmax's time)
        ref_in = x.detach().cpu().double()
        best = (ref_in.amax if op.extreme == "max" else ref_in.amin)(d, keepdim=True)
        shape = best.shape if keepdim else best.squeeze(d).shape
        assert got.shape == shape, f"shape {tuple(got.shape)} != expected {tuple(shape)}"
        assert got.dtype == torch.int64, f"{op.name} returned {got.dtype}"
        in_range = bool(((got >= 0) & (got < x.shape[d])).all())
        assert in_range, f"{op.name} index out of range [0, {x.shape[d]}): {got.flatten()[:8].tolist()}"
        idx = got if keepdim else got.unsqueeze(d)
        assert_close(ref_in.gather(d, idx), best, rtol=0, atol=0,
                     msg=lambda m: f"{op.name} points at a value other than the {op.extreme}imum: {m}")
        return
    cpu = x.detach().cpu()
    # the shape by arithmetic: torch's meta kernels import sympy on first use, 3.4 s of an
    # H200 worker's first case (benchmarks/results/h200-worker-profile.txt)
    shape = list(cpu.shape)
    if not op.keeps_shape:
        shape[d % len(shape): d % len(shape) + 1] = [1] if keepdim else []
    assert tuple(got.shape) == tuple(shape), f"shape {tuple(got.shape)} != expected {tuple(shape)}"
    tol = tolerance(str(x.dtype).removeprefix("torch."), x.shape[d], op.kind)
    for src, dst in blocks(tuple(cpu.shape), d, keepdim, op.kind):
        # NaN exactly where the reference has it (the std of a single element); a block's
        # indices are its own: the message says where the block starts in the result
        where = ", ".join(f"{c.start}:{c.stop}" if c.start is not None else ":" for c in dst)
        assert_close(got[dst].double(), op.reference(cpu[src], d, keepdim), **tol,
                     msg=(lambda m, w=where: f"{m}\n(indices within the result's block [{w}])") if dst else None)


def blocks(shape: tuple[int, ...], dim: Any, keepdim: bool, kind: str) -> list[tuple[tuple[slice, ...], ...]]:
    """(input index, result index) pairs (``slabs``) over which a call's float64 reference is
    made and compared: 2**27 elements in float64 at once are 1 GiB of fresh pages, 3.4 -
    6.3 s on one thread for a grid-limit case (mostly page faults), where slabs of 2**20
    stay in cache.  Below ``BLOCKWISE_FROM`` elements, one pair covers everything."""
    if math.prod(shape) < BLOCKWISE_FROM:
        return [((), ())]
    return slabs(shape, dim, keepdim, kind in ("along", "scan"), _REF_BLOCK)


BLOCKWISE_FROM = 1 << 22
_REF_BLOCK = 1 << 20


# -- "as torch does": one comparison for the checklist contracts ----------------------------


def reduced_size(shape: tuple[int, ...], dim: Any) -> int:
    if dim is None:
        return math.prod(shape)
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return math.prod(shape[d % len(shape)] for d in set(d % max(len(shape), 1) for d in dims)) if shape else 1


def disagreement(op: Op, call: Callable[[], Any], x: Any, dim: Any, keepdim: bool = False,
                 exact_index: bool = False, torch_kwargs: dict[str, Any] | None = None) -> str | None:
    """None when FlagGems does what torch does for this call, else what differs.

    torch on the CPU, in the input's own dtype, decides what raises and the result's shape
    and dtype (what torch raises must raise alike; any exception type will do); values are
    compared with the float64 reference at the accuracy contract's tolerance, scaled by the
    input's magnitude (cancellation), NaN and inf exactly where torch has them; integer
    results and, with ``exact_index``, argmax/argmin indices must be equal."""
    import torch

    cpu = x.detach().cpu()
    by_value = op.kind == "index" and not exact_index and cpu.is_floating_point()  # torch's indices unused
    kw = torch_kwargs or {}
    want_kind, want = torch_outcome(op, cpu, dim, keepdim, values=not by_value, kwargs=kw)
    try:
        got_kind, got = "ok", call()
    except ImportError:
        raise  # the lane's environment, not FlagGems' behaviour: never "raised alike"
    except Exception as exc:
        if device_fault(exc):  # never "what torch does", even where torch refuses the input too
            return f"{op.name}: FlagGems' kernel faulted: {type(exc).__name__}: {first_line(exc)[:160]}"
        first = first_line(exc)[:160]
        got_kind, got = "raises", f"{type(exc).__name__}" + (f" ({first})" if first else "")
    if got_kind != want_kind:
        shown = f"raised {got}" if got_kind == "raises" else f"returned {tuple(got.shape)} {got.dtype}"
        expected = f"raises {want}" if want_kind == "raises" else f"returns {tuple(want.shape)} {want.dtype}"
        return f"{op.name}: FlagGems {shown}; torch {expected}"
    if got_kind == "raises":
        return None
    got = got.detach().cpu()
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        return f"{op.name}: {tuple(got.shape)} {got.dtype}, torch {tuple(want.shape)} {want.dtype}"
    if not got.is_floating_point():
        if by_value:
            return _index_disagreement(op, got, cpu, dim, keepdim)
        return None if torch.equal(got, want) else f"{op.name}: {_first_diff(got, want)}"
    scale = magnitude(cpu)
    tol = tolerance(str(got.dtype).removeprefix("torch."), max(reduced_size(tuple(cpu.shape), dim), 1), op.kind)
    for src, dst in blocks(tuple(cpu.shape), dim, keepdim, op.kind):
        # float64, then rounded to the result's dtype: what overflows there (a product of 1e30s) is inf
        reference = (op.reference(cpu[src], dim, keepdim, **_float64(kw)).to(got.dtype).double() if cpu.is_floating_point()
                     else want[dst].double())
        part = got[dst].double()
        try:
            assert_close(part, reference, rtol=tol["rtol"], atol=tol["atol"] * scale)
        except AssertionError:
            return f"{op.name}: {_first_diff(part, reference, dst)}"
    return None


# Past this many elements torch's values are not worth computing only for the result's shape
# and dtype (a 2**27-element std on one CPU thread: 6 s of the grid-limit case's 28).
META_FROM = 1 << 24


def _float64(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A swept parameter's torch keywords for the float64 reference: a ``dtype`` result is
    computed in float64 (rounded to the result's dtype afterwards, as every value is)."""
    import torch

    return {k: (torch.float64 if k == "dtype" and v is not None and v.is_floating_point else v)
            for k, v in kwargs.items()}


def torch_outcome(op: Op, cpu: Any, dim: Any, keepdim: bool, values: bool = True,
                  kwargs: dict[str, Any] | None = None) -> tuple[str, Any]:
    """What torch does with the call: ("ok", result) or ("raises", type).  Float results
    are compared with the float64 reference, and without ``values`` (indices checked by the
    value they point at) no result is, so torch's own only gives the shape, the dtype and
    whether it raises.  For a large input those come from torch on the CPU with a small
    input of the same rank and dtype whose extents name their dims (2 + i; extents 0 and 1
    kept): the result's extents map back to the input's.  Not torch's meta kernels: they
    skip checks the CPU makes (a dim out of range, float8) and import sympy on first use
    (3.4 s of an H200 worker's first large case)."""
    import torch

    if cpu.numel() >= META_FROM and cpu.is_floating_point():
        label = [s if s < 2 else 2 + i for i, s in enumerate(cpu.shape)]
        kind, probe = outcome(lambda: op.torch_fn(torch.zeros(label, dtype=cpu.dtype), dim, keepdim, **(kwargs or {})))
        if kind == "raises":
            return kind, probe
        if probe.is_floating_point() or not values:
            extent = {2 + i: s for i, s in enumerate(cpu.shape) if s >= 2}
            return "ok", torch.empty([extent.get(v, v) for v in probe.shape], dtype=probe.dtype, device="meta")
    return outcome(lambda: op.torch_fn(cpu, dim, keepdim, **(kwargs or {})))


def magnitude(cpu: Any) -> float:
    """The largest finite |value| (at least 1): tolerances scale with it, for cancellation.
    |x| with NaN and inf zeroed in place, a block at a time (a non-contiguous input is
    copied once by its reshape), no copy of the finite elements."""
    if not cpu.numel():
        return 1.0
    if not cpu.is_floating_point():
        return max(1.0, float(cpu.abs().max()))
    flat = cpu.reshape(-1)
    return max(1.0, *(float(flat[i : i + _REF_BLOCK].abs().nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0).max())
                      for i in range(0, flat.numel(), _REF_BLOCK)))


def _first_diff(got: Any, want: Any, at: tuple[slice, ...] = ()) -> str:
    """Where the two differ most (NaN or inf where the other has none counts first); ``at``
    is where ``got`` was cut from the whole result (``blocks``), for the whole's index."""

    if got.is_floating_point():
        gap = (got - want).abs().nan_to_num(nan=float("inf"))
        gap[(got.isnan() & want.isnan()) | (got == want)] = 0.0
    else:
        gap = (got != want).double()
    if not bool((gap > 0).any()):
        return "values differ"
    index = tuple(int(i) for i in (gap == gap.max()).nonzero()[0])
    shown = tuple(i + ((at[a].start or 0) if a < len(at) else 0) for a, i in enumerate(index))
    where = " in its block" if at else ""
    return f"at {shown}: got {got[index].item()}, torch {want[index].item()} ({int((gap > 0).sum())} differ{where})"


def _index_disagreement(op: Op, got: Any, cpu: Any, dim: Any, keepdim: bool) -> str | None:
    """argmax/argmin: the index must point at an extremum of its slice (ties allowed)."""
    if dim is None:
        dim, cpu, got = 0, cpu.reshape(-1), got.reshape(1) if got.dim() == 0 else got.reshape(-1)
        keepdim = True
    idx = got if keepdim else got.unsqueeze(dim)
    if bool(((idx < 0) | (idx >= cpu.shape[dim])).any()):
        return f"{op.name}: index out of range [0, {cpu.shape[dim]})"
    picked = cpu.gather(dim, idx)  # compared in the input's dtype: exact, no float64 copy
    best = (cpu.amax if op.extreme == "max" else cpu.amin)(dim, keepdim=True)  # argmax: 28x amax's time
    same = (picked == best) | (picked.isnan() & best.isnan())
    return None if bool(same.all()) else f"{op.name}: an index points at a value that is not the extremum"


def assert_agrees(op: Op, call: Callable[[], Any], x: Any, dim: Any, keepdim: bool = False, what: str = "",
                  exact_index: bool = False, torch_kwargs: dict[str, Any] | None = None) -> None:
    problem = disagreement(op, call, x, dim, keepdim, exact_index, torch_kwargs)
    assert problem is None, f"{what}: {problem}" if what else problem


ENABLED_CASE = Case((3, 5, 64), 1)  # every FlagGems op enabled (test_enabled): one non-inner case a row


def differentiable(op: Op) -> bool:
    """torch gives the op's result a gradient (not an index, a count or a boolean): asked of
    torch on a small float64 input, not kept as a list."""
    import torch

    x = torch.zeros(2, 3, 4, dtype=torch.float64, requires_grad=True)
    try:
        return bool(op.torch_fn(x, 1, False).requires_grad)
    except Exception:  # torch refuses a float input (an integer-only op): nothing to differentiate
        return False


def fitted(case: Case, op: Op, sweep_name: str) -> Case:
    """The case an op runs: on the interpreter, ops whose kernels combine element by element
    (``interpreter == "toy"``: prod's tl.reduce) get every size cut to at most 3 (0 and 1
    kept), which keeps the property and costs a tenth; the op families beyond the reductions
    (one program per output row, and cummax's or Welford's tuple combine a few milliseconds
    each there) get every extent they do not reduce cut to at most 8, as ``FAMILY_QUICK``:
    the reduced extent, and with it every partial tile along it, is kept."""
    if sweep_name != "quick":
        return case
    if op.interpreter == "toy":
        return Case(tuple(min(s, 3) for s in case.shape), case.dim)
    if op.family == "reductions" or case.dim is None:
        return case
    from pytest_fl_contract.registry.ops import Call

    reduced = Call(case.shape, case.dim).reduced
    return Case(tuple(s if i in reduced else min(s, 8) for i, s in enumerate(case.shape)), case.dim)
