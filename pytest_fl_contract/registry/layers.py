"""The normalization layers FlagGems registers (issue 29), as data: one row per layer.

A row says where the layer lives in FlagGems (its module, the forward and backward entry
points and the names ``use_gems(include=...)`` takes), how a contract builds a call (which
extents a case normalizes, which affine parameters the layer has), torch's functional call
(the float64 reference, autograd for the gradients), the kernel paths its launches take,
and FlagGems' own defects with the calls that run into them.  The contracts
(``contracts/layers``), the workaround's routes, the mutants and the project's tests read
this table.  Nothing here imports torch.

Unlike a reduction a layer has no dim to route: its weight and bias gradients (and batch and
group norm's statistics) fold the rows of a (rows, channels) tile - the masked-row defect's
shape - inside one entry point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

from .schema import SELF_COMPARING, Defect, Param, Row

FAMILY = "normalization"
EPS = 1e-5


@dataclass(frozen=True)
class LayerCase:
    """A layer's input shape and what it normalizes: the last ``norm`` extents (layer and
    RMS norm), ``groups`` groups of channels (group norm), channel 1 (batch norm)."""

    shape: tuple[int, ...]
    norm: int = 1
    groups: int = 1

    @property
    def id(self) -> str:
        extra = f"-n{self.norm}" if self.norm != 1 else ""
        extra += f"-g{self.groups}" if self.groups != 1 else ""
        return "x".join(map(str, self.shape)) + extra

    @property
    def rows(self) -> int:
        """The rows a layer norm's weight gradient folds: everything before the normalized extents."""
        return math.prod(self.shape[: len(self.shape) - self.norm])


@dataclass(frozen=True)
class LayerCall:
    """What a contract case asks of a layer, as far as a known defect can depend on it."""

    case: LayerCase
    dtype: str = "float32"
    layout: str = "contiguous"  # contiguous | transposed
    values: str = "normal"  # normal, or a special-value kind (nan, pos_inf, huge)
    affine: bool = True  # the layer has its weight (and bias)
    backward: bool = False  # the case checks the gradients too
    routed: bool = False  # a workaround wraps the layer's entry points
    contract: str = ""  # the contract asking (a defect may spare one: a race the emulator's order hides)
    options: tuple[tuple[str, Any], ...] = ()  # a swept argument and its value (eps, training, momentum, ...)
    grads: tuple[str, ...] = ("x", "weight", "bias")  # the leaves a backward case differentiates

    @property
    def shape(self) -> tuple[int, ...]:
        return self.case.shape

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)


@dataclass(frozen=True)
class LayerPath:
    """A kernel a layer's call launches, with the smallest case that reaches it on the CPU
    lane's profiles (``backward``: reached by the gradients)."""

    name: str
    case: LayerCase
    kernel: str
    backward: bool = False
    lines: tuple[str, ...] = ()

    def in_version(self, version: str | None) -> bool:
        return not self.lines or any((version or "").startswith(v) for v in self.lines)


def _no_behaviour(*args: Any, **kwargs: Any) -> Any:
    raise TypeError("a layer row needs its torch call, channels and terms")


@dataclass(frozen=True)
class Layer(Row):
    """A normalization layer's row: the schema's fields, its entry points, its cases, and its
    behaviour as callables of its own (torch's functional call, the weight's shape, the terms an
    output folds), so no consumer asks which layer it is."""

    suite: ClassVar[str] = "layers"  # the contract suite and family behaviour (families.layers)
    case_type: ClassVar[type] = LayerCase

    family: str = FAMILY
    forward: str = ""  # the forward entry point
    backward: str = ""  # the backward entry point (rms_norm: its autograd Function's)
    functional: str = ""  # torch.nn.functional's name for it; the workaround's routes are keyed by it
    affine: tuple[str, ...] = ()  # the affine parameters it takes: ("weight", "bias") or ("weight",)
    cases: dict[str, tuple[LayerCase, ...]] = field(
        default_factory=dict
    )  # sweep -> cases (partial row and column tiles)
    # (x, weight, bias, case, stats, eps) -> torch's output; stats: the running (mean, var) it updates
    torch_call: Callable[..., Any] = _no_behaviour
    channels: Callable[[LayerCase], tuple[int, ...]] = _no_behaviour  # the shape of its weight and bias
    terms: Callable[[LayerCase, str], int] = _no_behaviour  # how many values an output ("y", "dx", ...) folds
    running_stats: bool = False  # updates running statistics in training (batch norm)
    # its arguments beyond the case, each a sweep axis (contracts/layers/test_params.py): the
    # default as a model sends it and the values a kernel that bakes the default gets wrong;
    # "grads" (which leaves need a gradient: autograd's output_mask) for every layer
    params: tuple[Param, ...] = ()
    paths: tuple[LayerPath, ...] = ()
    row_folds: tuple[str, ...] = ()  # kernels that fold the rows of a 2-D tile (the masked-row defect's reach)
    optional_affine: bool = True  # torch takes the layer without its weight and bias
    large: tuple[LayerCase, ...] = ()  # past 2**31 elements (hardware lanes; half precision, gradients too)
    wide: tuple[LayerCase, ...] = ()  # a normalized extent past Triton's 2**20-element tile (every lane)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (
            not self.forward
            or not self.backward
            or not self.cases
            or _no_behaviour in (self.torch_call, self.channels, self.terms)
        ):
            raise ValueError(
                f"layer {self.name!r}: a layer row needs its entry points, cases, torch call, channels and terms"
            )

    def entry_names(self) -> tuple[str, ...]:
        return (self.forward, self.backward)

    def row_masked(self, version: str | None) -> tuple[str, ...]:
        return self.row_folds


def _normalized(case: LayerCase) -> tuple[int, ...]:
    """The extents layer and RMS norm normalize: the last ``norm``."""
    return case.shape[len(case.shape) - case.norm :]


def _channel(case: LayerCase) -> tuple[int, ...]:
    """Group and batch norm's weight: one value a channel (dim 1)."""
    return (case.shape[1],)


def _row_terms(case: LayerCase, what: str) -> int:
    """Layer and RMS norm: y and dx fold a row's normalized extents, a weight gradient the rows."""
    return max(math.prod(_normalized(case)) if what in ("y", "dx") else case.rows, 1)


def _group_terms(case: LayerCase, what: str) -> int:
    """Group norm: y and dx fold a group (its channels by the spatial extent); the weight
    gradient a channel over the batch and the spatial extent."""
    spatial = math.prod(case.shape[2:])
    if what in ("y", "dx"):
        return max(case.shape[1] // max(case.groups, 1) * spatial, 1)
    return max(case.shape[0] * spatial, 1)


def _batch_terms(case: LayerCase, what: str) -> int:
    """Batch norm: every output folds a channel over the batch and the spatial extent."""
    return max(case.shape[0] * math.prod(case.shape[2:]), 1)


def _layer_norm(x: Any, weight: Any, bias: Any, case: LayerCase, stats: Any = None, eps: float = EPS) -> Any:
    import torch.nn.functional as F

    return F.layer_norm(x, _normalized(case), weight, bias, eps)


_TORCH_DEFAULT = "torch's default"  # an argument left out of the call: what a model sends most


def _rms_norm(x: Any, weight: Any, bias: Any, case: LayerCase, stats: Any = None, eps: Any = EPS) -> Any:
    """eps as given; ``_TORCH_DEFAULT`` leaves it out (torch then takes finfo(dtype).eps)."""
    import torch.nn.functional as F

    if eps == _TORCH_DEFAULT:
        return F.rms_norm(x, _normalized(case), weight)
    return F.rms_norm(x, _normalized(case), weight, eps)


def _group_norm(x: Any, weight: Any, bias: Any, case: LayerCase, stats: Any = None, eps: float = EPS) -> Any:
    import torch.nn.functional as F

    return F.group_norm(x, case.groups, weight, bias, eps)


def _batch_norm(
    x: Any,
    weight: Any,
    bias: Any,
    case: LayerCase,
    stats: Any = None,
    eps: float = EPS,
    training: bool = True,
    momentum: float = 0.1,
) -> Any:
    """Training mode by default, its running (mean, var) updated in place as torch does; eval
    mode normalizes by the running statistics (which it needs)."""
    import torch.nn.functional as F

    running_mean, running_var = stats if stats is not None else (None, None)
    return F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


# -- FlagGems' own defects of the family (seen on the interpreter; catalogue: config/platforms.yaml) --


def _rank_above_two(call: LayerCall) -> bool:
    """layer_norm_backward takes M = input.shape[0] rows of input.numel() / M columns, not the
    normalized extents: for an input of rank three or more its dx uses the wrong rows' mean
    and rstd, and its weight gradient kernel writes N = numel / shape[0] values into a
    weight of the normalized size (past it)."""
    return call.backward and len(call.shape) - call.case.norm >= 2


def _group_size_not_pow2(call: LayerCall) -> bool:
    """group_norm_kernel masks its (BLOCK_GROUP_SIZE, HW) tile's rows with channel < C, not
    < the group's end: for a group size that is not a power of two a group's tile holds
    the next group's first channels (its mean, variance and stores), and the gradients'
    kernels do alike."""
    size = call.shape[1] // max(call.case.groups, 1) if len(call.shape) > 1 else 1
    return size & (size - 1) != 0


def _affine_off(call: LayerCall) -> bool:
    return not call.affine


def _empty(call: LayerCall) -> bool:
    return 0 in call.shape


def _fp64(call: LayerCall) -> bool:
    return call.dtype == "float64"


# layer_norm / rms_norm: rows (everything before the normalized extents) x the normalized
# columns; the forward tiles output rows (stores keep the row mask), the weight gradient folds
# rows: weight_bias_backward_kernel a loop over BLOCK_ROW_SIZE rows per column tile,
# rms_norm_grad_dw_kernel 16 rows a program into a partial buffer torch.sum then folds.
_ROWS = {
    "quick": (LayerCase((13, 24)), LayerCase((3, 5, 16)), LayerCase((37, 8)), LayerCase((2, 3, 4, 6), norm=2)),
    "full": (
        LayerCase((13, 24)),
        LayerCase((3, 5, 16)),
        LayerCase((37, 8)),
        LayerCase((2, 3, 4, 6), norm=2),
        LayerCase((4099, 96)),
        LayerCase((8, 557, 768)),
        LayerCase((300, 1025)),
    ),
}
# group_norm: (N, C, HW) with group sizes a power of two and not; batch_norm: (N, C, HW)
# with N and HW partial tiles of its (BLOCK_M batch, BLOCK_N spatial) walk
_GROUPS = {  # one group, a group a channel, and between: sizes a power of two and not
    "quick": (
        LayerCase((3, 8, 5), groups=4),
        LayerCase((2, 6, 7), groups=2),
        LayerCase((5, 12, 3), groups=3),
        LayerCase((2, 4, 3, 5), groups=2),
        LayerCase((3, 8, 5), groups=1),
        LayerCase((3, 8, 5), groups=8),
    ),
    "full": (
        LayerCase((3, 8, 5), groups=4),
        LayerCase((2, 6, 7), groups=2),
        LayerCase((5, 12, 3), groups=3),
        LayerCase((2, 4, 3, 5), groups=2),
        LayerCase((3, 8, 5), groups=1),
        LayerCase((3, 8, 5), groups=8),
        LayerCase((8, 64, 33, 33), groups=32),
        LayerCase((16, 96, 49), groups=8),
    ),
}
_BATCH = {
    "quick": (LayerCase((5, 3, 7)), LayerCase((13, 4)), LayerCase((3, 2, 5, 5)), LayerCase((33, 3, 2))),
    "full": (
        LayerCase((5, 3, 7)),
        LayerCase((13, 4)),
        LayerCase((3, 2, 5, 5)),
        LayerCase((33, 3, 2)),
        LayerCase((65, 64, 49)),
        LayerCase((7, 128, 1025)),
    ),
}


def _row_offsets_wrap(call: LayerCall) -> bool:
    """The last row's offset, (rows - 1) * N, past int32 (a kernel that multiplies an int32 row
    index by the row length writes or reads 4 GiB before the tensor there)."""
    n = math.prod(call.shape[len(call.shape) - call.case.norm :])
    return (call.case.rows - 1) * n >= 2**31


def _layer_norm_weight_grad_wraps(call: LayerCall) -> bool:
    """weight_bias_backward_kernel loads dY + rows * N with rows an int32 range: past 2**31 the
    last rows read other memory into the weight and bias gradients (silently: an H200 gave
    dweight 14 ulps off torch at (65537, 32768) fp16).  The workaround's route computes them
    otherwise (it held with the route forced on)."""
    return call.backward and not call.routed and _row_offsets_wrap(call)


def _rms_norm_wraps(call: LayerCall) -> bool:
    """rms_norm's one-row forward kernel (N <= 4096) offsets by tl.program_id(0) * N in int32:
    past 2**31 it faults (an H200 at (524289, 4096), route or not); its dx and weight-gradient
    kernels do the same for any N (wrong gradients at (65537, 32768); the route's held)."""
    n = math.prod(call.shape[len(call.shape) - call.case.norm :])
    return _row_offsets_wrap(call) and (n <= 4096 or (call.backward and not call.routed))


def _group_tile_past_numel(call: LayerCall) -> bool:
    """group_norm_kernel takes a whole group as one (next_pow2(C / groups), next_pow2(H * W))
    tile: past Triton's 2**20 elements a tile it does not compile (a 1024 x 1024 image with a
    group of 2 channels); the workaround's route tiles it."""
    shape = call.shape
    if len(shape) < 3 or call.routed or 0 in shape:
        return False
    group = -(-shape[1] // max(call.case.groups, 1))
    hw = math.prod(shape[2:])
    return (1 << (group - 1).bit_length()) * (1 << (hw - 1).bit_length()) > 2**20


_ROW_FEATURES = (
    "masked_2d_row_load",
    "masked_2d_col_load",
    "mask_2d_logic",
    "python_and_or_masks",
    "masked_2d_store",
    "partial_2d_tiles",
    "runtime_loop",
    "masked_loop_tail",
    "reduce_partial_tile",
    "half_accumulation",
    "masked_load_other",
    "grid_axes",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
)
L = LayerPath
# Past 2**31 elements, where an int32 offset wraps: a kernel that multiplies tl.program_id (int32)
# by a row stride (rms_norm's one-row kernel and its dx kernel; layer norm widens its ids) or
# walks a channel's (batch, spatial) extent.  One case per forward kernel a width reaches (rows
# of at most 8192 and 4096 columns one row a program, wider ones a loop); float16 halves the
# 4 GiB tensors a call holds, gradients included (dx is the input's size)
_LARGE_ROWS = (LayerCase((262145, 8192)), LayerCase((65537, 32768)))
_LARGE_RMS = (LayerCase((524289, 4096)), LayerCase((65537, 32768)))
_LARGE_CHANNELS = LayerCase((2, 64, 2**24 + 1))
# A normalized extent past 2**20 elements, Triton's largest tile: a kernel that takes it whole
# does not compile (group norm's group), one that loops over it holds; a few seconds on the
# interpreter, where the same limit holds
_WIDE_ROWS = (LayerCase((2, 2**20 + 1)),)


def _grads(affine: tuple[str, ...]) -> Param:
    """autograd's output_mask subsets: the input alone, each affine parameter alone, all but the input."""
    values = (("x",), *((name,) for name in affine), affine)
    return Param("grads", tuple(dict.fromkeys(values)))


_EPS_PARAM = Param("eps", (EPS, 1e-3, 0.1))  # a kernel that bakes the default is off by ~5% at 0.1
_ROW_PARAMS = (_EPS_PARAM, _grads(("weight", "bias")))
_BATCH_PARAMS = (
    _EPS_PARAM,
    Param("training", (True, False)),
    Param("momentum", (0.1, 0.5, 1.0)),
    Param("running_stats", (True, False)),
    _grads(("weight", "bias")),
)


LAYERS: tuple[Layer, ...] = (
    Layer(
        name="layer_norm",
        module="flag_gems.ops.layernorm",
        forward="layer_norm",
        backward="layer_norm_backward",
        gems_names=("layer_norm", "layer_norm_backward"),
        functional="layer_norm",
        affine=("weight", "bias"),
        torch_call=_layer_norm,
        channels=_normalized,
        terms=_row_terms,
        params=_ROW_PARAMS,
        cases=_ROWS,
        paths=(
            L(
                "forward, several rows a program (N <= 128)",
                LayerCase((13, 24)),
                "layer_norm_persistent_kernel_multiline",
            ),
            L("forward, one row a program", LayerCase((3, 300)), "layer_norm_persistent_kernel"),
            L("forward, a loop over columns (N past 8192)", LayerCase((2, 8193)), "layer_norm_loop_kernel"),
            L("forward, past two column tiles: each loop runs twice", LayerCase((2, 16385)), "layer_norm_loop_kernel"),
            L("backward: dx", LayerCase((13, 24)), "layer_norm_backward_kernel", backward=True),
            L(
                "backward: dx, a loop past one 2048-column tile",
                LayerCase((3, 2049)),
                "layer_norm_backward_kernel",
                backward=True,
            ),
            L(
                "backward: weight and bias gradients over the rows",
                LayerCase((13, 24)),
                "weight_bias_backward_kernel",
                backward=True,
            ),
            L(
                "backward: weight and bias gradients, a loop over 128-row tiles",
                LayerCase((300, 8)),
                "weight_bias_backward_kernel",
                backward=True,
            ),
        ),
        row_folds=("weight_bias_backward_kernel",),
        features=_ROW_FEATURES,
        defects=(
            Defect("layer_norm_backward_rank", _rank_above_two, corrupts=True),
            Defect("empty_input_diverges", _empty),
            Defect("fp64_computed_in_fp32", _fp64),
            Defect("layer_norm_weight_grad_int32_rows", _layer_norm_weight_grad_wraps),
        ),
        large=_LARGE_ROWS,
        wide=_WIDE_ROWS,
    ),
    Layer(
        name="rms_norm",
        module="flag_gems.ops.rms_norm",
        forward="rms_norm",
        backward="rms_norm_backward",
        gems_names=("rms_norm",),
        functional="rms_norm",
        affine=("weight",),
        cases=_ROWS,
        torch_call=_rms_norm,
        channels=_normalized,
        terms=_row_terms,
        params=(Param("eps", (_TORCH_DEFAULT, EPS, 1e-3, 0.1)), _grads(("weight",))),
        paths=(
            L("forward, one row a program (N <= 4096)", LayerCase((13, 24)), "rms_norm_kernel"),
            L("forward, a loop over columns", LayerCase((2, 4097)), "rms_norm_loop_kernel"),
            # the loop kernel's tiles (8192 on the CPU lane's tuner): N a multiple of one,
            # and past one (its unmasked loops run)
            L("forward, N a multiple of the column tile", LayerCase((2, 8192)), "rms_norm_loop_kernel"),
            L("forward, past one column tile", LayerCase((2, 8193)), "rms_norm_loop_kernel"),
            L("forward, past two column tiles: each loop runs twice", LayerCase((2, 16385)), "rms_norm_loop_kernel"),
            L("backward: dx", LayerCase((13, 24)), "rms_norm_grad_dx_kernel", backward=True),
            L(
                "backward: weight gradient, 16 rows a program",
                LayerCase((37, 8)),
                "rms_norm_grad_dw_kernel",
                backward=True,
            ),
            L(
                "backward: weight gradient past one 256-column tile",
                LayerCase((37, 300)),
                "rms_norm_grad_dw_kernel",
                backward=True,
            ),
        ),
        row_folds=("rms_norm_grad_dw_kernel",),
        features=_ROW_FEATURES,
        defects=(
            Defect("rms_norm_needs_weight", _affine_off),
            Defect("rms_norm_default_eps", lambda c: c.option("eps") == _TORCH_DEFAULT),
            Defect("rms_norm_weight_grad_flat", lambda c: c.backward and c.affine and c.case.norm > 1),
            Defect("fp64_computed_in_fp32", _fp64),
            Defect("rms_norm_int32_row_offsets", _rms_norm_wraps),
        ),
        large=_LARGE_RMS,
        wide=_WIDE_ROWS,
    ),
    Layer(
        name="group_norm",
        module="flag_gems.ops.groupnorm",
        forward="group_norm",
        backward="group_norm_backward",
        gems_names=("group_norm", "group_norm_backward"),
        functional="group_norm",
        affine=("weight", "bias"),
        torch_call=_group_norm,
        channels=_channel,
        terms=_group_terms,
        params=_ROW_PARAMS,
        cases=_GROUPS,
        paths=(
            L("forward, a group's (channels, HW) tile a program", LayerCase((3, 8, 5), groups=4), "group_norm_kernel"),
            L("backward: dx", LayerCase((3, 8, 5), groups=4), "group_norm_backward_kernel", backward=True),
            # its launcher leaves BLOCK_HW_SIZE at 128: past it the dx sums loop over HW tiles
            L(
                "backward: dx past one 128-wide HW tile",
                LayerCase((2, 4, 129), groups=2),
                "group_norm_backward_kernel",
                backward=True,
            ),
            L(
                "backward: weight and bias gradients over the batch",
                LayerCase((3, 8, 5), groups=4),
                "weight_bias_backward_kernel",
                backward=True,
            ),
        ),
        row_folds=("group_norm_kernel", "group_norm_backward_kernel", "weight_bias_backward_kernel"),
        features=_ROW_FEATURES,
        # two programs store the next group's first channels: on hardware a race (its outcome
        # chance, hardware lanes skip those calls); the emulator's program order hides it from
        # the determinism contract and shows it to every other
        defects=(
            Defect(
                "group_norm_group_size_not_pow2",
                lambda c: _group_size_not_pow2(c) and c.contract not in SELF_COMPARING,
                corrupts=True,
            ),
            Defect("empty_input_diverges", _empty),
            Defect("fp64_computed_in_fp32", _fp64),
            Defect("group_norm_tile_past_max_numel", _group_tile_past_numel),
        ),
        large=(replace(_LARGE_CHANNELS, groups=32),),
        wide=(LayerCase((1, 2, 2**19 + 1)),),
    ),
    Layer(
        name="batch_norm",
        module="flag_gems.ops.batch_norm",
        forward="batch_norm",
        backward="batch_norm_backward",
        gems_names=("batch_norm", "batch_norm_backward"),
        functional="batch_norm",
        affine=("weight", "bias"),
        torch_call=_batch_norm,
        channels=_channel,
        terms=_batch_terms,
        running_stats=True,
        params=_BATCH_PARAMS,
        cases=_BATCH,
        paths=(
            L(
                "forward, training: a channel a program over (batch, spatial) tiles",
                LayerCase((5, 3, 7)),
                "batch_norm_forward_kernel",
            ),
            # BLOCK_M is min(2048, next_pow2(batch)): past 2048 the Welford walk steps over batch tiles
            L(
                "forward, training: a batch past one 2048-row tile",
                LayerCase((2049, 2, 3)),
                "batch_norm_forward_kernel",
            ),
            L("backward", LayerCase((5, 3, 7)), "batch_norm_backward_kernel", backward=True),
        ),
        row_folds=("batch_norm_forward_kernel", "batch_norm_backward_kernel"),
        features=_ROW_FEATURES,
        defects=(
            Defect(
                "batch_norm_stats_into_input",
                lambda c: c.values == "no_running_stats" or c.option("running_stats") is False,
            ),
            Defect("batch_norm_backward_ignores_eval", lambda c: c.backward and c.option("training") is False),
            Defect("batch_norm_backward_needs_input_grad", lambda c: c.backward and "x" not in c.grads),
            Defect("fp64_computed_in_fp32", _fp64),
        ),
        large=(_LARGE_CHANNELS,),
        wide=(LayerCase((2, 2, 2**19 + 1)),),
    ),
)
