"""FlagGems' defects the overload suite's cases run into, each an id of the catalogue
(``config/platforms.yaml``, where its description has a minimal reproduction) with the exact
cases it holds, decided from the case's own sample: a strict xfail there, so a fixed defect
shows as an XPASS and a new one as a failure.

A predicate reads the sample the case will run (OpInfo's draw under the suite's seed and the
case's size transform: the same tensors as the call), so it names the inputs the defect needs,
not a test id.
"""

from __future__ import annotations

import functools
import math
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
# parse (all.dims, any.dims and sum.dim_IntList take it); the softmax backwards assert "Invalid
# dim" and gather_backward indexes a dim it lacks (the first samples an H100's dispatch reached)
ZERO_DIM_OPS = frozenset(
    {
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "gather_backward",
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


def _self_of(case: Any, sample: Any) -> Any:
    """The op's own input tensor: the sample's input, except in a backward overload's own
    (aten) call, where the input is the gradient and ``self`` comes next."""
    inp, args, _ = sample
    return args[0] if case.source.caller == "aten" and _base(case).endswith("_backward") and args else inp


def _median_without_names(case: Any, sample: Any) -> bool:
    """Any median overload on a torch without named tensors (``Tensor.names``: gone in 2.13)."""
    import torch

    return _base(case) == "median" and not hasattr(torch.Tensor, "names")


def _unbatched_pad3d(case: Any, sample: Any) -> bool:
    """reflection_pad3d_backward of a (C, D, H, W) input: torch pads it, FlagGems refuses it."""
    import torch

    inp = _self_of(case, sample)
    return _base(case) == "reflection_pad3d_backward" and isinstance(inp, torch.Tensor) and inp.dim() == 4


def _masked_index_not_flat(case: Any, sample: Any) -> bool:
    """_unsafe_masked_index other than one index tensor of the mask's shape into a 1-D self:
    FlagGems reads indices[0] as flat offsets of self, one per element of the mask."""
    import torch

    inp, args, _ = sample
    if _base(case) != "_unsafe_masked_index" or len(args) < 2:
        return False
    mask, indices = args[0], [i for i in args[1] if i is not None]
    return not (
        len(indices) == 1
        and isinstance(inp, torch.Tensor)
        and inp.dim() == 1
        and tuple(indices[0].shape) == tuple(mask.shape)
    )


def _put_indices_broadcast(case: Any, sample: Any) -> bool:
    """_unsafe_masked_index_put_accumulate with index tensors that broadcast to a shape other
    than the first one's: FlagGems adds each later index into the first in place."""
    import torch

    _, args, _ = sample
    if _base(case) != "_unsafe_masked_index_put_accumulate" or len(args) < 2:
        return False
    indices = [i for i in args[1] if isinstance(i, torch.Tensor)]
    return len(indices) > 1 and tuple(torch.broadcast_shapes(*(i.shape for i in indices))) != tuple(indices[0].shape)


# ln of fp32's smallest normal: exp of anything below it is flushed (compiled) or denormal (the
# interpreter) - no relative precision left
FP32_EXP_FLOOR = -87.33654


def _logcumsumexp_underflow(case: Any, sample: Any) -> bool:
    """logcumsumexp where a prefix of a row lies wholly more than fp32's exp range below the
    row's maximum, or a row holds +inf or only -inf: FlagGems shifts every element by the row's
    max, so the prefix's sum is 0 (-inf), or inf - inf is NaN."""
    import torch

    inp, args, kwargs = sample
    if _base(case) != "logcumsumexp" or not isinstance(inp, torch.Tensor) or inp.dim() == 0 or inp.numel() == 0:
        return False
    dim = args[0] if args else kwargs.get("dim")
    x = inp.detach().double()
    top = x.amax(dim, keepdim=True)
    if bool(torch.isinf(top).any()):  # +inf in a row, or a row of -inf only
        return True
    prefix = torch.cummax(x, dim).values
    return bool((prefix - top < FP32_EXP_FLOOR).any())


def _mse_backward_reduced(case: Any, sample: Any) -> bool:
    """mse_loss_backward of a mean or sum loss over more than one element: its gradient is one
    value, which FlagGems' kernel reads as one per element."""
    import torch

    inp, args, kwargs = sample
    if _base(case) != "mse_loss_backward":
        return False
    if case.source.caller == "backward":  # F.mse_loss(input, target, reduction=...)
        reduction = kwargs.get("reduction", args[1] if len(args) > 1 else "mean")
        target = args[0] if args else kwargs.get("target")
        size = torch.broadcast_shapes(inp.shape, target.shape).numel()
        return reduction != "none" and size > 1
    grad, self = inp, args[0]  # aten: (grad_output, self, target, reduction)
    return grad.numel() < self.numel()


def _cdist_p_not_2(case: Any, sample: Any) -> bool:
    """_cdist_backward for a p other than 2: FlagGems' kernel has p = 2's gradient only."""
    inp, args, kwargs = sample
    if _base(case) != "_cdist_backward":
        return False
    if case.source.caller == "backward":  # torch.cdist(x1, x2, p=2.0, compute_mode=...)
        p = args[1] if len(args) > 1 else kwargs.get("p", 2.0)
    else:  # aten: (grad, x1, x2, p, cdist)
        p = args[2]
    return float(p) != 2.0


def _rot90_not_plain(case: Any, sample: Any) -> bool:
    """rot90 of more than a matrix (a size past 1 beyond the two rotated dims) or in a plane
    other than dims [0, 1] as given: FlagGems' kernel indexes a contiguous [M, N] matrix."""
    import math

    import torch

    inp, args, kwargs = sample
    if _base(case) != "rot90" or not isinstance(inp, torch.Tensor) or inp.numel() <= 1:
        return False
    dims = list(args[1] if len(args) > 1 else kwargs.get("dims", [0, 1]))
    return dims != [0, 1] or math.prod(inp.shape[2:]) > 1


def _nearest_exact_2d_differs(case: Any, sample: Any) -> bool:
    """_upsample_nearest_exact2d_backward where nearest-exact and nearest pick another source
    element for some output element (the 1-d test, on the interpolation's own call)."""
    import torch

    inp = sample[0]
    if _base(case) != "_upsample_nearest_exact2d_backward" or not isinstance(inp, torch.Tensor) or inp.dim() != 4:
        return False
    _, args, kwargs = sample
    if case.source.caller != "backward":  # aten: (grad_output, output_size, input_size, scales_h, scales_w)
        size, scales = args[0], tuple(args[2:4])
        where = torch.arange(args[1][-2] * args[1][-1], dtype=torch.float64).reshape(1, 1, *args[1][-2:])
        exact = torch.ops.aten._upsample_nearest_exact2d.default(where, size, *scales)
        return not torch.equal(exact, torch.ops.aten.upsample_nearest2d.default(where, size, *scales))
    where = torch.arange(inp.shape[-2] * inp.shape[-1], dtype=torch.float64).reshape(1, 1, *inp.shape[-2:])
    functional = torch.nn.functional.interpolate
    exact = functional(where, *args, **{**kwargs, "mode": "nearest-exact"})
    nearest = functional(where, *args, **{**kwargs, "mode": "nearest"})
    return not torch.equal(exact, nearest)


def _adaptive_windows_differ(case: Any, sample: Any) -> bool:
    """_adaptive_avg_pool2d of an unbatched (C, H, W) input, or where an axis's input size is
    no multiple of its output size (past one): torch's windows end at ceil((i + 1) * in / out),
    FlagGems' at the floor; or a window wider than its kernel's 64-step loop."""
    import torch

    inp, args, kwargs = sample
    if _base(case) != "_adaptive_avg_pool2d" or not isinstance(inp, torch.Tensor):
        return False
    if inp.dim() == 3:
        return True
    size = args[0] if args else kwargs.get("output_size")
    size = (size, size) if isinstance(size, int) else tuple(size)
    for n_in, n_out in zip(inp.shape[-2:], size):
        n_out = n_in if n_out is None else n_out
        if n_out > 1 and n_in % n_out or n_out > 0 and -(-n_in // n_out) > 64:
            return True
    return False


def _aa_downscale(case: Any, sample: Any) -> bool:
    """_upsample_bilinear2d_aa down to fewer rows or columns than its input: torch widens the
    filter by the scale (the antialias), FlagGems' kernel keeps bilinear's two taps."""
    import torch

    inp, args, kwargs = sample
    if _base(case) != "_upsample_bilinear2d_aa" or not isinstance(inp, torch.Tensor) or inp.dim() != 4:
        return False
    size = kwargs.get("output_size", args[0] if args else None)
    if size is None:
        scales = kwargs.get("scale_factors", args[2] if len(args) > 2 else None)
        size = [int(n * s) for n, s in zip(inp.shape[-2:], scales)]
    return any(o < i for o, i in zip(size, inp.shape[-2:]))


def _ldl_narrower_than_its_rows(case: Any, sample: Any) -> bool:
    """linalg_ldl_factor of an n x n matrix, 0 < n < 64: FlagGems copies rows 64 columns wide."""
    import torch

    inp = sample[0]
    return _base(case) == "linalg_ldl_factor" and isinstance(inp, torch.Tensor) and 0 < inp.shape[-1] < 64


def _ldl_past_64(case: Any, sample: Any) -> bool:
    """linalg_ldl_factor of a matrix past 64 x 64: FlagGems' kernel holds a row in 64 lanes
    (MAX_SIZE) and refuses anything wider, where torch factors any size."""
    import torch

    inp = sample[0]
    return _base(case) == "linalg_ldl_factor" and isinstance(inp, torch.Tensor) and inp.shape[-1] > 64


def _kernels_of(module: Any) -> list[Any]:
    """The Python functions of the jitted kernels a module defines (a pointwise_dynamic
    function's scalar kernel too)."""
    found = []
    for value in vars(module).values():
        value = getattr(value, "_scalar_fn", value)
        if type(value).__name__ in ("JITFunction", "InterpretedFunction") and hasattr(value, "fn"):
            found.append(value.fn)
    return found


def _compiler_refuses_a_global(case: Any, sample: Any) -> bool:
    """The function FlagGems registers for the overload lives in a module with a kernel that
    reads a global the compiler refuses (``emulation.globals_rule``, its own rule): every call
    fails to compile, on the emulator by that rule.  Read from the source, any line."""
    import sys

    from .table import function_of

    gems = sys.modules.get("flag_gems")
    try:
        fn = function_of(gems, case.overload)[0] if gems is not None else None
    except KeyError:
        return False
    return _module_refused(getattr(fn, "__module__", "") or "")


@functools.cache
def _module_refused(name: str) -> bool:
    """Once per module (every case of its overloads asks while a lane collects)."""
    import sys

    from ..emulation.globals_rule import refused

    module = sys.modules.get(name)
    return module is not None and any(refused(k) is not None for k in _kernels_of(module))


def _mm_launch(case: Any, sample: Any) -> bool:
    """An fp32 mm: whether the config its tuner picks fits the device's shared memory is
    decided when it runs (``trigger: launch_resources``, mm_fp32_small_k_shared_memory), never
    by the shape - 5.4's Hopper copy launched one too big for an H100 with M = 0."""
    return _base(case) == "mm" and case.dtype == "float32"


# the fast log's largest error, at u -> 1: log(2) - (1 - 1/2 + 1/3 - 1/4)
FAST_LOG_GAP = math.log(2) - 7 / 12


def _exponential_fast_log(case: Any, sample: Any) -> bool:
    """exponential_ (off Iluvatar, whose fp32 path takes tl.math.log) of enough values for the
    suite's decile test to see it: torch's first decile, -ln(0.9) / lambd, lies under
    FAST_LOG_GAP / lambd, where FlagGems has no value at all."""
    import sys

    import torch

    from .oracle import DRAWS_JUDGED, POOLED, QUANTILES, share_bound

    inp = sample[0]
    if _base(case) != "exponential_" or not isinstance(inp, torch.Tensor):
        return False
    device = getattr(getattr(sys.modules.get("flag_gems"), "runtime", None), "device", None)
    if getattr(device, "vendor_name", None) == "iluvatar" and inp.dtype != torch.float64:
        return False
    n, first = inp.numel(), QUANTILES[0]
    assert -math.log(1 - first) < FAST_LOG_GAP  # the decile the test reads lies in the gap
    return n >= DRAWS_JUDGED and first > share_bound(first * POOLED / (POOLED + 1), n, POOLED * n)


def _fused_adam_not_adam(case: Any, sample: Any) -> bool:
    """_fused_adam(_) of float32 parameters (FlagGems refuses others) that weight decay moves (a
    weight_decay other than 0 on a parameter not all zeros: torch's Adam adds weight_decay * p
    to the gradient, FlagGems decays p AdamW's way or, below 0, not at all), or with amsgrad at
    a step whose bias correction is not 1 (torch keeps the max of the raw second moment and
    divides its root by the correction's; FlagGems keeps the max of the corrected one)."""
    import torch

    if _base(case) not in ("_fused_adam", "_fused_adam_"):
        return False
    params, args, kwargs = sample
    named = {**dict(zip(("grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps"), args)), **kwargs}
    if not params or any(not isinstance(p, torch.Tensor) or p.dtype != torch.float32 for p in params):
        return False
    found_inf = named.get("found_inf")
    if found_inf is not None and float(found_inf) > 0:  # both skip the step
        return False
    decay = named.get("weight_decay", 0.0)
    decayed = decay != 0 and any(bool((p != 0).any()) for p in params)
    beta2 = float(named.get("beta2", 0.999))
    steps = named.get("state_steps", ())
    ams = bool(named.get("amsgrad", False)) and any(
        p.numel() > 0 and 1 - beta2 ** float(s) != 1 for p, s in zip(params, steps)
    )
    return decayed or ams


def _jagged_not_1d_or_cut(case: Any, sample: Any) -> bool:
    """_jagged_to_padded_dense_forward of values with more than one dim (FlagGems' output is
    (batch, max_length) whatever the values' trailing dims), or of a sequence longer than
    max_length (FlagGems copies all of it: into the next row, past the output for the last)."""
    import torch

    values, args, kwargs = sample
    if _base(case) != "_jagged_to_padded_dense_forward" or not isinstance(values, torch.Tensor) or len(args) < 2:
        return False
    offsets, lengths = args[0], args[1]
    if len(offsets) != 1 or len(lengths) != 1 or offsets[0].dim() != 1 or offsets[0].numel() < 2:
        return False
    bounds = offsets[0].long()
    sizes = bounds.diff()
    if bool((sizes < 0).any()) or int(bounds[0]) < 0 or int(bounds[-1]) > values.shape[0]:
        return False  # a call torch refuses or reads past its values: UNTESTED
    return values.dim() != 1 or bool((sizes > lengths[0]).any())


def _prelu_weight_not_last(case: Any, sample: Any) -> bool:
    """_prelu_kernel_backward with more than one slope on any axis but the input's last:
    FlagGems takes the slope of element i as weight[i % x.shape[-1]] and asserts the weight has
    x.shape[-1] elements. Its own call (grad_output, self, weight) or F.prelu(x, w)'s autograd,
    which hands it w viewed as (1, C, 1, ...) - the channel dim 1, the last only for 2-D x."""
    import torch

    inp, args, _ = sample
    if _base(case) != "_prelu_kernel_backward":
        return False
    if case.source.opinfo.startswith("gen:") or case.source.caller == "aten":
        if len(args) < 2:
            return False
        x, weight = args[0], args[1]
    else:  # F.prelu(input, weight): torch views a per-channel weight along dim 1
        x, weight = inp, args[0] if args else None
        if isinstance(weight, torch.Tensor) and weight.numel() > 1 and isinstance(x, torch.Tensor) and x.dim() >= 2:
            weight = weight.reshape(1, -1, *([1] * (x.dim() - 2)))
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor) or weight.numel() <= 1 or x.dim() == 0:
        return False
    shape = (1,) * max(x.dim() - weight.dim(), 0) + tuple(weight.shape)
    return not (all(s == 1 for s in shape[:-1]) and shape[-1] == x.shape[-1])


def _lstm_cell_forward(case: Any, sample: Any) -> bool:
    """_thnn_fused_lstm_cell of any batch: its workspace holds the gates before their
    activations (FlagGems' own backward, like torch's CUDA kernel, reads them activated)."""
    import torch

    inp = sample[0]
    return _base(case) == "_thnn_fused_lstm_cell" and isinstance(inp, torch.Tensor) and inp.numel() > 0


def _small_n_not_inner(case: Any, sample: Any) -> bool:
    """special_log_softmax over a dim with 0 < N <= 1024 elements and more than one element
    after it (K > 1): the one-row kernel reads N contiguous values per (m, k) - except over
    dim 0 with N == 1 (registry/reductions.py's ``_small_n_ignores_k``, on the sample)."""
    import math

    import torch

    inp, args, kwargs = sample
    if _base(case) != "special_log_softmax" or not isinstance(inp, torch.Tensor) or inp.dim() == 0:
        return False
    dim = args[0] if args else kwargs.get("dim")
    if not isinstance(dim, int) or inp.numel() == 0:
        return False
    dim %= inp.dim()
    n, k = inp.shape[dim], math.prod(inp.shape[dim + 1 :])
    return k > 1 and 0 < n <= 1024 and not (dim == 0 and n == 1)


def _gammainc_without_out(case: Any, sample: Any) -> bool:
    """special_gammainc called without an out= tensor: every functional call."""
    _, _, kwargs = sample
    return _base(case) == "special_gammainc" and case.source.caller != "out" and kwargs.get("out") is None


# FlagGems' H_0..H_9 as polynomials in x (its _hermite_Hn), each evaluated in fp32 left to right
def _hermite_expanded(x: Any, n: Any) -> Any:
    """FlagGems' special_hermite_polynomial_h in torch's fp32 arithmetic, operation for
    operation (the interpreter rounds each one; a compiled kernel may fuse a multiply-add)."""
    import torch

    xf = x.to(torch.float32)
    x2 = xf * xf
    x3 = x2 * xf
    x4 = x2 * x2
    x5 = x4 * xf
    x6 = x3 * x3
    x7 = x6 * xf
    x8 = x4 * x4
    x9 = x8 * xf
    terms = [
        torch.ones_like(xf),
        2.0 * xf,
        4.0 * x2 - 2.0,
        8.0 * x3 - 12.0 * xf,
        16.0 * x4 - 48.0 * x2 + 12.0,
        32.0 * x5 - 160.0 * x3 + 120.0 * xf,
        64.0 * x6 - 480.0 * x4 + 720.0 * x2 - 120.0,
        128.0 * x7 - 1344.0 * x5 + 3360.0 * x3 - 1680.0 * xf,
        256.0 * x8 - 3584.0 * x6 + 13440.0 * x4 - 13440.0 * x2 + 1680.0,
        512.0 * x9 - 9216.0 * x7 + 48384.0 * x5 - 80640.0 * x3 + 30240.0 * xf,
    ]
    degree = torch.as_tensor(n).to(torch.int32)
    result = terms[0]
    for k in range(1, 10):
        result = torch.where(degree == k, terms[k], result)
    return result


def _hermite_expansion_off(case: Any, sample: Any) -> bool:
    """special_hermite_polynomial_h where FlagGems' expanded polynomial, in fp32, is off float64
    by more than the suite's oracle allows (the dtype's tolerance plus twice torch's own error
    there and torch's largest): the oracle's own rule on FlagGems' arithmetic, for the degrees
    0..9 and the dtypes it takes (others it refuses)."""
    import torch

    from .oracle import first_difference, tolerance

    x, args, kwargs = sample
    n = args[0] if args else kwargs.get("n")
    if _base(case) != "special_hermite_polynomial_h" or not isinstance(x, torch.Tensor) or n is None:
        return False
    if x.dtype not in (torch.float32, torch.float64) or x.numel() == 0:
        return False
    degree = torch.as_tensor(n).to(torch.int32)
    if int(degree.min()) < 0 or int(degree.max()) > 9:
        return False  # refused: "only supports n in [0, 9]"
    n_t = torch.as_tensor(n, dtype=x.dtype) if not isinstance(n, torch.Tensor) else n
    own = torch.special.hermite_polynomial_h(x, n_t)
    want = torch.special.hermite_polynomial_h(x.double(), n_t.double())
    got = _hermite_expanded(*torch.broadcast_tensors(x, degree)).to(own.dtype)
    return first_difference(got, want.to(own.dtype), tolerance(str(own.dtype).removeprefix("torch.")), own) is not None


def _arange_float_without_dtype(case: Any, sample: Any) -> bool:
    """arange with no dtype and a floating start, end or step: torch's result is the default
    float dtype, FlagGems' int64 (its values truncated)."""
    import torch

    inp, args, kwargs = sample
    if _base(case) != "arange" or kwargs.get("dtype") is not None:
        return False
    bounds = [inp, *args, *(kwargs[k] for k in ("start", "end", "step") if k in kwargs)]
    return any(
        isinstance(v, float) or (isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()))
        for v in bounds
    )


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
    # out-of-place scatter (every overload but scatter_'s) on a strided self: the strided layout
    # makes each tensor a non-dense view, and FlagGems writes its contiguous clone with self's strides
    # every call: the registered function's parameters are max_pool2d_with_indices_backward's
    Known("max_pool2d_backward_registered_with_indices", lambda case, sample: case.overload == "max_pool2d_backward"),
    Known(
        "scatter_strided_self_stored_with_its_strides",
        lambda case, sample: _base(case) == "scatter" and case.transform == "strided",
        ("5.0.2", "5.4"),
    ),
    Known("exponential_truncated_log_series", _exponential_fast_log, ("5.0.2", "5.4")),
    # 5.4 registers nearest-exact's 2-d backward, with the same index rule
    Known("upsample_nearest_exact_takes_nearest_index", _nearest_exact_2d_differs, ("5.4",)),
    # overloads only the 5.4 line registers
    Known("median_reads_tensor_names", _median_without_names, ("5.4",)),
    Known("reflection_pad3d_backward_unbatched_refused", _unbatched_pad3d, ("5.4",)),
    Known("unsafe_masked_index_first_index_flat", _masked_index_not_flat, ("5.4",)),
    Known("unsafe_masked_index_put_indices_not_broadcast", _put_indices_broadcast, ("5.4",)),
    Known("logcumsumexp_shifts_by_row_max", _logcumsumexp_underflow, ("5.4",)),
    Known("mse_loss_backward_scalar_grad_per_element", _mse_backward_reduced, ("5.4",)),
    Known("cdist_backward_p_ignored", _cdist_p_not_2, ("5.4",)),
    Known("rot90_matrix_only", _rot90_not_plain, ("5.4",)),
    Known("adaptive_avg_pool2d_window_end_floored", _adaptive_windows_differ, ("5.4",)),
    Known("upsample_bilinear2d_aa_no_antialias", _aa_downscale, ("5.4",)),
    Known("ldl_factor_rows_stored_64_wide", _ldl_narrower_than_its_rows, ("5.4",)),
    Known("ldl_factor_at_most_64", _ldl_past_64, ("5.4",)),
    Known("kernel_global_not_constexpr", _compiler_refuses_a_global),
    Known("mm_fp32_small_k_shared_memory", _mm_launch),
    Known("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _fused_adam_not_adam, ("5.4",)),
    Known("jagged_to_padded_dense_values_1d_uncut", _jagged_not_1d_or_cut, ("5.4",)),
    Known("prelu_kernel_backward_slope_on_last_dim", _prelu_weight_not_last, ("5.4",)),
    Known("thnn_fused_lstm_cell_workspace_not_activated", _lstm_cell_forward, ("5.4",)),
    Known("small_n_ignores_k", _small_n_not_inner, ("5.4",)),
    Known("special_gammainc_out_none", _gammainc_without_out, ("5.4",)),
    Known("hermite_polynomial_h_expanded_fp32", _hermite_expansion_off, ("5.4",)),
    # the one 5.0.2 registers too, the same arange_start
    Known("arange_float_bounds_give_int64", _arange_float_without_dtype, ("5.0.2", "5.4")),
)


def sample_of(case: Any, budget: int) -> Any:
    """The (input, args, kwargs) the case will call (before any layout change)."""
    from . import boundary
    from .samples import SEED, drawn, transformed

    samples = drawn(case.source.opinfo, case.dtype)
    if case.index >= len(samples):
        return None
    try:
        return transformed(case.overload, case.source, samples[case.index], case.transform, budget=budget, seed=SEED)
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
