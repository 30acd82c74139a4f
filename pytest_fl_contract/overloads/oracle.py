"""One case's verdict: FlagGems' function, registered for exactly its overload, against torch's
own CPU kernel in float64.

What FlagGems returns must be what torch returns: the same structure, dtypes and shapes (torch
in the case's dtype says which), values within the dtype's tolerance of the float64 result,
integer, bool and index results exactly, NaN and inf where float64 has them; an in-place or
``out=`` call returns the caller's tensor.  The case counts only if dispatch reached the
function (``counted``'s spy, one overload): an OpInfo sample that torch routes elsewhere says
nothing about it.  Random ops are held to properties instead (``random_verdict``).

Statuses: PASS; WRONG (values or metadata differ: the largest error and the first index that
differs); FAULT (the kernel touched memory it does not own: ``markers.device_fault``); ERROR
(FlagGems raised where torch did not); UNSUPPORTED (FlagGems refuses a dtype or layout torch
takes - its own status, since refusing is not answering wrong); TIMEOUT; UNTESTED (the case
never reached the function, or torch itself refuses the input).
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..families import EPS

STATUSES = ("PASS", "WRONG", "FAULT", "ERROR", "UNSUPPORTED", "TIMEOUT", "UNTESTED")
FAILING = ("WRONG", "FAULT", "ERROR", "TIMEOUT")

# ops whose values torch leaves undefined: only their metadata is the contract
UNDEFINED_VALUES = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)
# ops whose result is a set along its last dim, in no order torch promises: LAPACK's eigenvalues
# come in the order its Schur form deflated them, which differs between fp32 and float64 (a
# 33 x 33 matrix: 24 of 66 parts of torch's own fp32 eigvals "wrong" against float64)
UNORDERED_VALUES = frozenset({"_linalg_eigvals", "linalg_eigvals"})
# what FlagGems says when it declines an input, as opposed to failing on it
_REFUSAL = re.compile(r"not (yet )?supported|unsupported|not implemented|only supports?|does not support", re.I)


@dataclass(frozen=True)
class Verdict:
    status: str
    detail: str
    # under an injected defect: the lanes it made the call's loads read beyond their masks (0: it
    # never touched this call; None: no defect injected, or the call never ran)
    defect_lanes: int | None = None
    # the class names of what FlagGems' call raised, its causes' too (ERROR, FAULT): a known
    # defect that fails with an exception (``fails_with``) takes the case by them
    raised: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")


def raised_names(exc: BaseException) -> tuple[str, ...]:
    """The class names of ``exc`` and of its causes and contexts, in order, once each."""
    names: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(names) < 32:
        names += [c.__name__ for c in type(seen).__mro__ if c.__name__ not in names]
        seen = seen.__cause__ or seen.__context__
    return tuple(names)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def refusal(exc: BaseException) -> bool:
    """FlagGems declined the input (a dtype or layout it does not take)."""
    return isinstance(exc, NotImplementedError) or bool(_REFUSAL.search(str(exc)))


def tolerance(dtype: str) -> dict[str, float]:
    """assert_close tolerances against float64 for a result in ``dtype``: FlagGems computes in
    fp32 (a few ulps a term over the short sums OpInfo's samples make) and rounds once to a half
    type (two of its ulps on top).  A masked row read, a lost tail or a wrong index is off by
    far more."""
    if dtype in ("float16", "bfloat16"):
        return {"rtol": 2 * EPS[dtype] + 64 * EPS["float32"], "atol": 2 * EPS[dtype] + 64 * EPS["float32"]}
    if dtype == "float64":
        return {"rtol": 64 * EPS["float64"] * 2**20, "atol": 64 * EPS["float32"]}  # FlagGems may sum in fp32
    return {"rtol": 64 * EPS["float32"], "atol": 64 * EPS["float32"]}


class Timeout(BaseException):
    """The case ran past its budget (a BaseException: no ``except Exception`` in a kernel's
    host code swallows it)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Any:
    """SIGALRM after ``seconds`` in the main thread (the interpreter runs kernels in Python, so
    it lands); elsewhere no limit."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise Timeout(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def leaves(value: Any) -> list[Any]:
    from torch.utils._pytree import tree_flatten

    return tree_flatten(value)[0]


def first_difference(got: Any, want: Any, tol: dict[str, float] | None, torch_own: Any = None) -> str | None:
    """None where ``got`` (a tensor) matches ``want`` (float64 or exact); else the largest
    error and the first index that differs, in one line.  ``torch_own``: torch's result in the
    case's dtype - FlagGems may be off float64 by twice as much as torch's own kernel is there
    (an ill-conditioned function near its poles) plus torch's largest error anywhere (a long sum
    in another order), on top of the dtype's tolerance."""
    import torch

    g, w = got.detach().cpu(), want.detach().cpu()
    if g.is_complex() or w.is_complex():
        g, w = torch.view_as_real(g.to(torch.complex128)), torch.view_as_real(w.to(torch.complex128))
        # torch's own result as real pairs too: cast to float64 it kept the real parts only, in
        # another shape, so a complex result (eigvals of an ill-conditioned matrix, where fp32
        # and float64 LAPACK differ by units) got no allowance for torch's own error
        if torch_own is not None and torch_own.is_complex():
            torch_own = torch.view_as_real(torch_own.detach().cpu().to(torch.complex128))
    if tol is None:  # exact: integer, bool and index results
        bad = g.to(torch.float64) != w.to(torch.float64)
        both_nan = torch.isnan(g.to(torch.float64)) & torch.isnan(w.to(torch.float64))
        bad = bad & ~both_nan
        err = (g.to(torch.float64) - w.to(torch.float64)).abs()
    else:
        g64, w64 = g.to(torch.float64), w.to(torch.float64)
        nan_g, nan_w = torch.isnan(g64), torch.isnan(w64)
        inf_mismatch = (torch.isinf(g64) | torch.isinf(w64)) & (g64 != w64)
        finite = ~(nan_g | nan_w) & ~(torch.isinf(g64) | torch.isinf(w64))
        err = torch.where(finite, (g64 - w64).abs(), torch.zeros_like(g64))
        allowed = tol["atol"] + tol["rtol"] * w64.abs()
        if torch_own is not None and tuple(torch_own.shape) == tuple(w64.shape):
            own = (torch_own.detach().cpu().to(torch.float64) - w64).abs()
            own = torch.where(torch.isfinite(own), own, torch.zeros_like(own))
            # an element's own error and torch's largest: summing in another order is as right
            allowed = allowed + 2 * own + (own.max() if own.numel() else 0.0)
        bad = (nan_g != nan_w) | inf_mismatch | (finite & (err > allowed))
    if not bool(bad.any()):
        return None
    flat = int(bad.reshape(-1).nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(bad.shape))) if bad.dim() else ()
    err = err.reshape(-1)
    finite_err = err[torch.isfinite(err)]
    worst = float(finite_err.max()) if finite_err.numel() else float("nan")
    return (
        f"max error {worst:.4g}, first at index {list(index)}: got {g.reshape(-1)[flat].item()!r}, "
        f"want {w.reshape(-1)[flat].item()!r} ({int(bad.sum())} of {bad.numel()} differ)"
    )


def in_order_of(values: Any, ref: Any) -> Any:
    """``values`` (a set along the last dim) permuted to pair each with the nearest element of
    ``ref`` of the same row: the closest pair first, then the closest of the rest."""
    import torch

    if values.dim() == 0 or tuple(values.shape) != tuple(ref.shape) or values.numel() == 0:
        return values
    flat_v = values.detach().cpu().reshape(-1, values.shape[-1])
    flat_r = ref.detach().cpu().reshape(-1, ref.shape[-1]).to(torch.complex128)
    out = torch.empty_like(flat_v)
    for row, (v, r) in enumerate(zip(flat_v, flat_r)):
        dist = (v.to(torch.complex128)[None, :] - r[:, None]).abs()
        dist = torch.where(torch.isnan(dist), torch.full_like(dist, float("inf")), dist)
        for _ in range(v.numel()):
            at = int(torch.argmin(dist))
            j, k = divmod(at, dist.shape[1])
            out[row, j] = v[k]
            dist[j, :] = float("inf")
            dist[:, k] = float("inf")
    return out.reshape(values.shape).to(values.device)


def compare(got: Any, meta: Any, ref: Any, *, values: bool = True, unordered: bool = False) -> str | None:
    """FlagGems' result against torch's in the case's dtype (``meta``: structure, dtype, shape)
    and in float64 (``ref``: values).  None when they agree, else one line.  ``unordered``:
    each result is a set along its last dim (``UNORDERED_VALUES``), compared element to
    nearest element of float64's."""
    import torch

    g, m, r = leaves(got), leaves(meta), leaves(ref)
    if len(g) != len(m):
        return f"{len(g)} results, torch {len(m)}"
    if unordered and values:
        g = [
            in_order_of(gv, rv) if isinstance(gv, torch.Tensor) and isinstance(rv, torch.Tensor) else gv
            for gv, rv in zip(g, r)
        ]
        m = [
            in_order_of(mv, rv) if isinstance(mv, torch.Tensor) and isinstance(rv, torch.Tensor) else mv
            for mv, rv in zip(m, r)
        ]
    for i, (gv, mv, rv) in enumerate(zip(g, m, r)):
        where = f"result {i}: " if len(g) > 1 else ""
        if isinstance(mv, torch.Tensor):
            if not isinstance(gv, torch.Tensor):
                return f"{where}{type(gv).__name__}, torch a tensor"
            if gv.dtype != mv.dtype:
                return f"{where}dtype {gv.dtype}, torch {mv.dtype}"
            if tuple(gv.shape) != tuple(mv.shape):
                return f"{where}shape {tuple(gv.shape)}, torch {tuple(mv.shape)}"
            if not values:
                continue
            want = rv if isinstance(rv, torch.Tensor) and tuple(rv.shape) == tuple(mv.shape) else mv
            floating = gv.is_floating_point() or gv.is_complex()
            if floating:
                want = want.to(gv.dtype)  # what a right answer in the result's dtype can be
            problem = first_difference(
                gv,
                want,
                tolerance(str(gv.dtype).removeprefix("torch.")) if floating else None,
                mv if floating and mv is not rv else None,
            )
            if problem:
                return where + problem
        elif isinstance(mv, (bool, int)) and not isinstance(mv, float):
            if gv != mv:
                return f"{where}{gv!r}, torch {mv!r}"
        elif isinstance(mv, float):
            scalar = rv if isinstance(rv, float) else mv
            if not (
                isinstance(gv, (int, float))
                and (math.isclose(gv, scalar, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(gv) and math.isnan(scalar)))
            ):
                return f"{where}{gv!r}, torch {scalar!r}"
    return None


def identity(caller: str, got: Any, inputs: Any, out: dict[str, Any] | None) -> str | None:
    """An in-place call returns its self, an out= call its buffers."""
    if caller == "inplace" and got is not inputs[0]:
        return "the in-place call returned a new tensor, not its self"
    if caller == "out" and out:
        bufs = list(out.values())
        got_list = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(got_list) != len(bufs) or any(a is not b for a, b in zip(got_list, bufs)):
            return "the out= call returned new tensors, not its out buffers"
    return None


def spied(fn: Callable[..., Any]) -> tuple[Callable[..., Any], list[int]]:
    """``fn`` wrapped to count its calls (it keeps ``fn``'s name and module: FlagGems and the
    emulator tell its functions by them)."""
    import functools

    calls: list[int] = []

    @functools.wraps(fn)
    def called(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return fn(*args, **kwargs)

    return called, calls


# what the CPU emulator cannot run, as opposed to what FlagGems gets wrong: its own missing
# pieces (a libdevice function with no host implementation), Triton's interpreter failing on a
# host value, and FlagGems' host code insisting on a CUDA tensor (the emulated device is the CPU)
_EMULATOR_GAP = re.compile(r"CPU emulator|InterpreterError|CUDA (device|tensor)|must be CUDA|require CUDA", re.I)


def emulator_gap(exc: BaseException) -> bool:
    """What the emulator cannot run, as opposed to what the kernel does wrong there: a
    compiler's refusal (``CompilationError``, which the emulator raises by the compiler's rules,
    ``emulation.globals_rule``) is the kernel's on every device, even inside an InterpreterError."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 32:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    if any("CompilationError" in {c.__name__ for c in type(e).__mro__} for e in chain):
        return False
    return any(_EMULATOR_GAP.search(f"{type(e).__name__}: {e}") for e in chain)


def failure(exc: BaseException, emulated: bool = False) -> Verdict:
    """The status of an exception FlagGems' call raised where torch's did not; on the emulated
    device, what the emulator cannot run is UNTESTED (saying so), never a verdict on FlagGems."""
    from ..markers import device_fault

    if emulated and not isinstance(exc, Timeout) and not device_fault(exc) and emulator_gap(exc):
        return Verdict("UNTESTED", f"the CPU emulator cannot run it: {one_line(exc)}")
    if isinstance(exc, Timeout):
        return Verdict("TIMEOUT", str(exc))
    if device_fault(exc):
        return Verdict("FAULT", one_line(exc), raised=raised_names(exc))
    if refusal(exc):
        return Verdict("UNSUPPORTED", one_line(exc))
    return Verdict("ERROR", one_line(exc), raised=raised_names(exc))


# where a random op's draws are compared with torch's: the deciles of torch's pool, for results
# of at least DRAWS_JUDGED values, against POOLED times as many of torch's (cases.run's draws)
QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
DRAWS_JUDGED = 64
POOLED = 4


def random_verdict(got: Any, again: Any, meta: Any, draws: list[Any]) -> Verdict:
    """A random op by property: torch's structure, dtype and shape; the same seed gives the
    same bits; finite values; and where there are enough values, their distribution is torch's
    own draws' (the same call, other seeds): at each decile of torch's pool, the share of
    FlagGems' values at or below it matches the pool's within six standard errors of a
    two-sample proportion - seeded, so the verdict is the same every run.

    Shares, not moments: a share below a cut is a proportion whatever the distribution, so its
    error is known for every one.  A mean or std test presumes the moments exist and the normal
    law's error of the std: a Cauchy draw (cauchy, cauchy_) has neither a mean nor a std - its
    sample std is its largest value's, 8.6 against 31 for torch's own draws - and a heavy
    log-normal's std converges too slowly to test.  Shares hold for discrete draws too (an
    atom at the cut counts on both sides alike)."""
    import torch

    problem = compare(got, meta, meta, values=False)
    if problem:
        return Verdict("WRONG", problem)
    for a, b in zip(leaves(got), leaves(again)):
        if isinstance(a, torch.Tensor) and not torch.equal(
            a.view(-1).view(torch.uint8) if a.numel() else a, b.view(-1).view(torch.uint8) if b.numel() else b
        ):
            return Verdict("WRONG", "the same seed gave different values")
    for i, g in enumerate(leaves(got)):
        if not isinstance(g, torch.Tensor) or not g.is_floating_point() or g.numel() < DRAWS_JUDGED:
            continue
        g64 = g.double().reshape(-1)
        if not bool(torch.isfinite(g64).all()):
            return Verdict("WRONG", f"result {i}: non-finite values from a random op")
        pool = torch.cat([leaves(d)[i].double().reshape(-1) for d in draws]).sort().values
        problem = distribution_differs(g64, pool)
        if problem:
            return Verdict("WRONG", f"result {i}: {problem}")
    return Verdict("PASS", "")


def share_bound(share: float, n: int, m: int) -> float:
    """How far two shares of ``n`` and ``m`` draws of one law may lie apart (six standard errors
    of their difference, ``share`` the pooled one)."""
    return 6 * math.sqrt(share * (1 - share) * (1 / n + 1 / m)) + 1e-6


def distribution_differs(values: Any, pool: Any) -> str | None:
    """None where ``values`` (float64, flat) are drawn as ``pool`` (torch's draws, sorted) is,
    by the share at or below each of the pool's deciles; else the first cut that differs."""
    n, m = values.numel(), pool.numel()
    for q in QUANTILES:
        cut = pool[min(m - 1, int(q * m))]
        got_share = float((values <= cut).double().mean())
        want_share = float((pool <= cut).double().mean())
        bound = share_bound((got_share * n + want_share * m) / (n + m), n, m)
        if abs(got_share - want_share) > bound:
            return (
                f"{got_share:.4g} of the values at or below {float(cut):.4g} (torch's draws' "
                f"{q:g} quantile), torch's draws {want_share:.4g} (+-{bound:.2g})"
            )
    return None


# ops that count elements into bins whose position they compute (x - min) * bins / (max - min):
# in the case's dtype an element within rounding of a bin edge lands on either side of it
BINNED = frozenset({"histc"})


def histogram_difference(got: Any, ref: Any, inputs: Any) -> str | None:
    """histc's counts against float64's, each element within rounding (1e-4 of a bin) of an
    edge allowed to move one count to the neighbouring bin (an H100 put 2 of 1025 values of
    100 bins next door); None when they agree so, else one line."""
    import torch

    inp, args, kwargs = inputs
    names = ("bins", "min", "max")
    given = {**dict(zip(names, args)), **kwargs}
    bins, lo, hi = int(given.get("bins", 100)), float(given.get("min", 0)), float(given.get("max", 0))
    x = inp.detach().cpu().to(torch.float64).reshape(-1)
    if lo == hi and x.numel():
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    at = (x - lo) * bins / (hi - lo)
    near = int(((at - at.round()).abs() < 1e-4).sum())
    g, r = got.detach().cpu().to(torch.float64), ref.detach().cpu().to(torch.float64)
    if tuple(g.shape) != tuple(r.shape):
        return f"shape {tuple(g.shape)}, torch {tuple(r.shape)}"
    moved = float((g - r).abs().sum())
    if moved <= 2 * near:
        return None
    return f"counts differ by {moved:g} in all, past the {2 * near} that the {near} values at a bin edge allow"


# order statistics whose indices torch leaves open among equal values (unless asked to be stable)
TIES_OPEN = frozenset({"sort", "argsort"})


def tied_order_difference(indices: Any, want_values: Any, inp: Any, dim: int) -> str | None:
    """``indices`` (a sort's, along ``dim``) against the sorted values: each line a permutation
    whose values are the sorted ones; which of two equal values comes first is open (an H100's
    sort of whole-valued floats put other indices first among ties); None when they agree."""
    import torch

    idx = indices.detach().cpu().long()
    x = inp.detach().cpu().to(torch.float64)
    if x.dim() == 0 or tuple(idx.shape) != tuple(x.shape):
        return f"indices of shape {tuple(idx.shape)}, input {tuple(x.shape)}"
    lines = idx.movedim(dim, -1).reshape(-1, x.shape[dim])
    if not bool((lines.sort(dim=-1).values == torch.arange(x.shape[dim])).all()):
        return "the indices are not a permutation of each line"
    picked, want = x.gather(dim, idx), want_values.detach().cpu().to(torch.float64)
    same = (picked == want) | (torch.isnan(picked) & torch.isnan(want))
    if bool(same.all()):
        return None
    first = tuple(int(i) for i in (~same).nonzero()[0])
    return f"the indices pick {picked[first].item()!r} at {list(first)}, the sorted values hold {want[first].item()!r}"
