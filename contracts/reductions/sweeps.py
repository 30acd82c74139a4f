"""The reduction contracts' sweeps (which cases each contract runs, per lane sweep) and their
checklist comparison ("does what torch does"); inputs, the float64 check and tolerances are the
family's (``pytest_fl_contract.families.reductions``).

The ops themselves come from the one op registry (``pytest_fl_contract.registry.reductions``): how to
call each entry point, its torch call and float64 reference, its exemptions.  Entry
points are looked up at call time, so whatever the lane installed (a workaround) is what
gets called.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from pytest_fl_contract.families.dispatch import outcome
from pytest_fl_contract.families.reductions import REF_BLOCK, assert_close, blocks, reduced_size, tolerance
from pytest_fl_contract.markers import device_fault
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.coverage import non_inner_kernels
from pytest_fl_contract.registry.reductions import Case, Op
from pytest_fl_contract.util import first_line

# -- sweeps -----------------------------------------------------------------------------


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
        return with_views(ROWS.rows("reductions")) if views else list(ROWS.rows("reductions"))
    chosen = [op for op in ROWS.rows("reductions") if op.installed()]
    if sweep_name == "quick":
        chosen = [
            op
            for op in chosen
            if op.interpreter == "toy" or op.family != "reductions" or non_inner_kernels(sys.modules[op.module])
        ]
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


def cases_for(op: Op, sweep_name: str) -> list[Case]:
    if sweep_name == "quick" and op.interpreter == "toy":
        return list(TOY_CASES)
    if sweep_name == "quick" and op.family != "reductions":
        return list(FAMILY_QUICK)
    return sweep(sweep_name)


# -- "as torch does": one comparison for the checklist contracts ----------------------------


def disagreement(
    op: Op,
    call: Callable[[], Any],
    x: Any,
    dim: Any,
    keepdim: bool = False,
    exact_index: bool = False,
    torch_kwargs: dict[str, Any] | None = None,
) -> str | None:
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
        reference = (
            op.reference(cpu[src], dim, keepdim, **_float64(kw)).to(got.dtype).double()
            if cpu.is_floating_point()
            else want[dst].double()
        )
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

    return {
        k: (torch.float64 if k == "dtype" and v is not None and v.is_floating_point else v) for k, v in kwargs.items()
    }


def torch_outcome(
    op: Op, cpu: Any, dim: Any, keepdim: bool, values: bool = True, kwargs: dict[str, Any] | None = None
) -> tuple[str, Any]:
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
    return max(
        1.0,
        *(
            float(flat[i : i + REF_BLOCK].abs().nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0).max())
            for i in range(0, flat.numel(), REF_BLOCK)
        ),
    )


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


def assert_agrees(
    op: Op,
    call: Callable[[], Any],
    x: Any,
    dim: Any,
    keepdim: bool = False,
    what: str = "",
    exact_index: bool = False,
    torch_kwargs: dict[str, Any] | None = None,
) -> None:
    problem = disagreement(op, call, x, dim, keepdim, exact_index, torch_kwargs)
    assert problem is None, f"{what}: {problem}" if what else problem


# every config of the tuners a row reaches (test_tuning): partial tiles along both axes of the
# kernels' (rows, reduced) view - 5 x 13 = 65 rows, 37 reduced - whatever a config's block sizes
TUNING_CASE = Case((5, 37, 13), 1)
ENABLED_CASE = Case((3, 5, 64), 1)  # every FlagGems op enabled (test_enabled): one non-inner case a row


def differentiable(op: Op) -> bool:
    """torch differentiates the op's result (not an index, a count or a boolean): asked of the
    lane's own torch by a backward on a small float64 input, not kept as a list.  A result
    that merely requires grad is not enough: torch 2.11 gives aminmax's result a grad_fn whose
    backward raises "derivative for aten::aminmax is not implemented" (2.13 implements it)."""
    import torch

    x = torch.rand(2, 3, 4, dtype=torch.float64, requires_grad=True)
    try:
        y = op.torch_fn(x, 1, False)
        if not y.requires_grad:
            return False
        y.backward(torch.ones_like(y))
    except Exception:  # torch refuses a float input, or has no derivative for the op here
        return False
    return x.grad is not None


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
    from pytest_fl_contract.registry.reductions import Call

    reduced = Call(case.shape, case.dim).reduced
    return Case(tuple(s if i in reduced else min(s, 8) for i, s in enumerate(case.shape)), case.dim)
