"""FlagGems' defects the overload suite's cases run into, each an id of the catalogue
(``config/platforms.yaml``, where its description has a minimal reproduction) with the exact
cases it holds, decided from the case's own sample: a strict xfail there, so a fixed defect
shows as an XPASS and a new one as a failure.

A predicate reads the sample the case will run (OpInfo's draw under the suite's seed and the
case's size transform: the same tensors as the call), so it names the inputs the defect needs,
not a test id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..registry.schema import in_line


@dataclass(frozen=True)
class Known:
    id: str  # the catalogue's
    applies: Callable[[Any, Any], bool]  # (case, its sample as (input, args, kwargs)) -> bool
    flag_gems: tuple[str, ...] = ()  # FlagGems lines it is in (none: every line)


def _base(case: Any) -> str:
    return case.overload.split(".", 1)[0]


def _zero_dim(case: Any, sample: Any, ops: frozenset[str] | None = None) -> bool:
    """A dim-taking op (or a repeat) called on a 0-dim tensor, which torch treats as one element."""
    import torch

    inp = sample[0]
    return (
        case.overload in (ZERO_DIM_OPS if ops is None else ops)
        and isinstance(inp, torch.Tensor)
        and inp.dim() == 0
        and case.transform in ("none", "transposed", "strided", "expanded")
    )


# the overloads whose FlagGems entry points refuse a 0-dim input torch takes: all.dim/any.dim and
# index_select assert "Invalid dim", index_add indexes a dim it lacks, sum's out= and
# unfold_backward divide by a zero extent, tile/repeat generate code for rank 0 that does not
# parse (all.dims, any.dims and sum.dim_IntList take it)
ZERO_DIM_OPS = frozenset(
    {
        "all.dim",
        "any.dim",
        "index_select",
        "index_add",
        "index_add_",
        "sum.IntList_out",
        "unfold_backward",
        "tile",
        "repeat",
    }
)


def _scalar_index_embedding(case: Any, sample: Any) -> bool:
    """Embedding's backward for a 0-dim index: torch's output (and gradient) is one row, (D,);
    FlagGems' embedding_dense_backward asserts a gradient of at least two dims, on both lines."""
    import torch

    _, args, _ = sample
    index = args[0] if args else None
    return case.overload == "embedding_dense_backward" and isinstance(index, torch.Tensor) and index.dim() == 0


def _zero_steps(case: Any, sample: Any) -> bool:
    _, args, kwargs = sample
    steps = args[1] if len(args) > 1 else kwargs.get("steps")
    return _base(case) == "linspace" and steps == 0


def _negative(case: Any, sample: Any) -> bool:
    import torch

    inp = sample[0]
    return isinstance(inp, torch.Tensor) and inp.is_floating_point() and bool((inp < 0).any())


def _group_not_pow2(case: Any, sample: Any) -> bool:
    """native_group_norm(_backward) called through aten (C and group by their schema's names),
    or group_norm's own call F.group_norm(input, num_groups, ...) and its autograd: a group of
    C / G channels, not a power of two."""
    import torch

    from .samples import schema

    if case.overload not in ("native_group_norm", "native_group_norm_backward"):
        return False
    inp, args, kwargs = sample
    channels: Any
    groups: Any
    if case.source.opinfo == "nn.functional.group_norm" and case.source.caller in ("op", "backward"):
        if not isinstance(inp, torch.Tensor) or inp.dim() < 2:
            return False
        channels, groups = inp.shape[1], args[0] if args else kwargs.get("num_groups")
    else:  # aten's positional form: the overload's own (aten caller), or native_group_norm's OpInfo
        sch = schema(case.overload if case.source.caller == "aten" else "native_group_norm")
        named = {**dict(zip((a.name for a in sch.arguments), (inp, *args))), **kwargs} if sch else {}
        channels, groups = named.get("C"), named.get("group")
    if not isinstance(channels, int) or not isinstance(groups, int) or groups <= 0:
        return False
    size = channels // groups
    return size > 0 and size & (size - 1) != 0


def _same_shape_scatter(case: Any, sample: Any) -> bool:
    """scatter_add_ with self, index and src of one shape over a dim other than the last."""
    import torch

    inp, args, _ = sample
    if _base(case) != "scatter_add_" or len(args) < 3 or not all(isinstance(t, torch.Tensor) for t in args[1:3]):
        return False
    dim = args[0] % max(inp.dim(), 1)
    return inp.shape == args[1].shape == args[2].shape and inp.dim() > 1 and dim != inp.dim() - 1


def _layer_norm_all_dims(case: Any, sample: Any) -> bool:
    """native_layer_norm normalizing over every dim of its input: torch's mean and rstd keep the
    input's rank (all ones), FlagGems' have one dim."""
    inp, args, _ = sample
    return case.overload == "native_layer_norm" and len(args) > 0 and len(args[0]) == inp.dim()


def _nearest_exact_differs(case: Any, sample: Any) -> bool:
    """_upsample_nearest_exact1d where nearest-exact and nearest pick another source element for
    some output element: torch's two ops on the input's width, the indices as values (an
    integer upscale agrees)."""
    import torch

    inp, args, _ = sample
    if _base(case) != "_upsample_nearest_exact1d" or not isinstance(inp, torch.Tensor) or inp.dim() != 3:
        return False
    width = inp.shape[-1]
    where = torch.arange(width, dtype=torch.float64).reshape(1, 1, width)
    try:
        exact = torch.ops.aten._upsample_nearest_exact1d.default(where, *args[:2])
        nearest = torch.ops.aten.upsample_nearest1d.default(where, *args[:2])
    except (RuntimeError, TypeError):
        return False
    return not torch.equal(exact, nearest)


# 5.4.0.dev0 refuses a 0-dim input in these too (index_copy(_) and index_reduce_ index a dim it
# lacks, logsumexp asserts "Invalid dim", unfold_copy divides by a zero extent), besides ZERO_DIM_OPS
ZERO_DIM_OPS_54 = ZERO_DIM_OPS | {"index_copy", "index_copy_", "index_reduce_", "logsumexp", "unfold_copy"}

KNOWN: tuple[Known, ...] = (
    Known("zero_dim_input_rejected", _zero_dim, ("5.0.2",)),
    Known("zero_dim_input_rejected", lambda case, sample: _zero_dim(case, sample, ZERO_DIM_OPS_54), ("5.4",)),
    Known("zero_dim_input_rejected", _scalar_index_embedding),
    Known("linspace_zero_steps", _zero_steps, ("5.0.2", "5.4")),
    Known(
        "digamma_reflection_fp32",
        lambda case, sample: _base(case) == "digamma_" and _negative(case, sample),
        ("5.0.2",),
    ),
    # 5.4 registers the out-of-place digamma too, the same kernel
    Known(
        "digamma_reflection_fp32",
        lambda case, sample: _base(case) in ("digamma", "digamma_") and _negative(case, sample),
        ("5.4",),
    ),
    Known("group_norm_group_size_not_pow2", _group_not_pow2),
    Known("scatter_add_same_shape_copy", _same_shape_scatter),
    Known("layer_norm_stat_shape", _layer_norm_all_dims, ("5.0.2", "5.4")),
    Known("upsample_nearest_exact_takes_nearest_index", _nearest_exact_differs, ("5.0.2", "5.4")),
)


def sample_of(case: Any, budget: int) -> Any:
    """The (input, args, kwargs) the case will call (before any layout change)."""
    from . import boundary
    from .samples import SEED, drawn, fresh

    samples = drawn(case.source.opinfo, case.dtype)
    if case.index >= len(samples):
        return None
    try:
        return boundary.redraw(fresh(samples[case.index]), case.transform, budget=budget, seed=SEED)
    except boundary.NotApplicable:
        return None


def known(case: Any, version: str | None, budget: int) -> list[str]:
    """The catalogue ids of the known defects ``case`` runs into on FlagGems ``version``."""
    candidates = [k for k in KNOWN if in_line(k.flag_gems, version)]
    if not candidates:
        return []
    sample = sample_of(case, budget)
    if sample is None:
        return []
    return [k.id for k in candidates if _applies(k, case, sample)]


def _applies(known: Known, case: Any, sample: Any) -> bool:
    """A predicate that cannot read this sample (a call of another shape than it was written
    for) does not apply: the case runs unmarked and fails if the defect shows, where its
    exception stopped the whole session's collection (an H100 lane's group_norm sample)."""
    try:
        return bool(known.applies(case, sample))
    except Exception:  # noqa: BLE001 - any exception: the predicate was written for another call form
        return False
