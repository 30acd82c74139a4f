"""The reductions' family behaviour: inputs for a case (values that make a wrong fold show:
ramps towards an index op's extreme, zeros where an answer turns on them, products that keep
their size), the float64 reference compared block by block, tolerances and the check, for
every reduction row alike (the row's own fields say what differs).  The reduction contracts
(``contracts/reductions``), the hardware lanes' isolated calls and the benchmarks use it."""

from __future__ import annotations

import math
from typing import Any

from ..registry.reductions import Case, Op
from . import EPS
from .dispatch import counted, use_gems
from .slabs import slabs


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
        return {"rtol": 64 * EPS["float64"], "atol": 8 * EPS["float64"] * max(n if kind != "along" else 1, 1)}
    rtol = EPS[dtype] if dtype != "float32" else 4 * EPS["float32"]
    terms = max(n, 1) if kind != "along" else 1
    return {"rtol": rtol, "atol": 8 * EPS["float32"] * terms + (EPS[dtype] / 64 if dtype != "float32" else 0)}


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
    of ``n`` answer each way; "half" zeroes each value with probability one half.  Every other
    zero is -0.0 (the sign bit set: zero to torch's all, any and count_nonzero, nonzero to a
    kernel that tests the bits)."""
    import torch

    p = 1.0 - 0.5 ** (1.0 / max(n, 1)) if kind in ("sparse", "dense") else 0.5
    draw = torch.rand(x.shape, generator=g) < p
    zeroed = x * draw if kind == "sparse" else x.masked_fill_(draw, 0.0)
    if zeroed.is_floating_point():
        signs = torch.rand(x.shape, generator=g) < 0.5
        zeroed = torch.where((zeroed == 0) & signs, torch.full_like(zeroed, -0.0), zeroed)
    return zeroed


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
        assert_close(
            ref_in.gather(d, idx),
            best,
            rtol=0,
            atol=0,
            msg=lambda m: f"{op.name} points at a value other than the {op.extreme}imum: {m}",
        )
        return
    cpu = x.detach().cpu()
    # the shape by arithmetic: torch's meta kernels import sympy on first use, 3.4 s of an
    # H200 worker's first case (benchmarks/results/h200-worker-profile.txt)
    shape = list(cpu.shape)
    if not op.keeps_shape:
        shape[d % len(shape) : d % len(shape) + 1] = [1] if keepdim else []
    assert tuple(got.shape) == tuple(shape), f"shape {tuple(got.shape)} != expected {tuple(shape)}"
    tol = tolerance(str(x.dtype).removeprefix("torch."), x.shape[d], op.kind)
    for src, dst in blocks(tuple(cpu.shape), d, keepdim, op.kind):
        # NaN exactly where the reference has it (the std of a single element); a block's
        # indices are its own: the message says where the block starts in the result
        where = ", ".join(f"{c.start}:{c.stop}" if c.start is not None else ":" for c in dst)
        assert_close(
            got[dst].double(),
            op.reference(cpu[src], d, keepdim),
            **tol,
            msg=(lambda m, w=where: f"{m}\n(indices within the result's block [{w}])") if dst else None,
        )


def blocks(
    shape: tuple[int, ...], dim: Any, keepdim: bool, kind: str
) -> list[tuple[tuple[slice, ...], tuple[slice, ...]]]:
    """(input index, result index) pairs (``slabs``) over which a call's float64 reference is
    made and compared: 2**27 elements in float64 at once are 1 GiB of fresh pages, 3.4 -
    6.3 s on one thread for a grid-limit case (mostly page faults), where slabs of 2**20
    stay in cache.  Below ``BLOCKWISE_FROM`` elements, one pair covers everything."""
    if math.prod(shape) < BLOCKWISE_FROM:
        return [((), ())]
    return slabs(shape, dim, keepdim, kind in ("along", "scan"), REF_BLOCK)


BLOCKWISE_FROM = 1 << 22
REF_BLOCK = 1 << 20


def reduced_size(shape: tuple[int, ...], dim: Any) -> int:
    if dim is None:
        return math.prod(shape)
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return math.prod(shape[d % len(shape)] for d in set(d % max(len(shape), 1) for d in dims)) if shape else 1


class ReductionFamily:
    """The reductions' family behaviour for one call of a row at any size."""

    suite = "reductions"

    def inputs(
        self, row: Op, case: Case, *, seed: int = 0, device: str = "cpu", dtype: str = "float32", backward: bool = False
    ) -> dict[str, Any]:
        return {"x": make_input(case, dtype, device, seed, row)}

    def outputs(
        self,
        row: Op,
        case: Case,
        inputs: dict[str, Any],
        *,
        gems: Any = None,
        backward: bool = False,
        enabling: str = "include",
    ) -> dict[str, Any]:
        """torch's call of the op where the input is (``gems``: through FlagGems' registration;
        None: torch's own); a call that never reached FlagGems raises."""
        import contextlib

        wanted = {row.entry} if gems is not None else set()
        count: Any = counted(gems, wanted) if gems is not None else contextlib.nullcontext(set())
        scope = use_gems(gems, row.gems_names, enabling) if gems is not None else contextlib.nullcontext()
        with count as seen, scope:
            found = {"result": row.torch_fn(inputs["x"], case.dim, False)}
        missing = sorted(wanted - seen)
        if missing:
            raise RuntimeError(f"torch dispatch never reached FlagGems' {', '.join(missing)}: torch's own kernels ran")
        return found

    def tolerance(self, row: Op, case: Case, dtype: str, output: str, on_device: bool = False) -> dict[str, float]:
        return tolerance(dtype, max(reduced_size(case.shape, case.dim), 1), row.kind)

    def memory_gib(self, row: Op, case: Case) -> float:
        """The input, FlagGems' result and torch's beside it (float32): a result no larger than
        the input, and slack for torch's own temporaries."""
        return 4 * 4 * math.prod(case.shape) / 2**30


FAMILY = ReductionFamily()
