"""The defect zoo: each mutant a real-world way a reduction goes wrong, applied on the CPU
lane, against which the contract suite must fail.  mutmut cannot mutate @triton.jit
kernels, so mutants act through the entry points (wrapping FlagGems' functions in the
process under test), through the emulator's interpreter hooks, or inside the kernels:
``rejit`` changes one expression of a real kernel's source under the interpreter
(``KERNEL_EDITS``).  ``mutants`` (the pytest plugin) applies one; ``run`` runs the zoo.
"""

from __future__ import annotations

from typing import Any, Callable

from ..registry import ROWS
from ..util import FlContractError
from .mutation import KERNEL_EDITS, Mutant
from .mutation import entry as _entry
from .mutation import kernel_edits as _kernel_edits
from .mutation import wrap as _wrap
from .mutation import wrap_tensor_op as _wrap_tensor_op


def _dims(x: Any, dim: Any) -> tuple[int, int, int] | None:
    """(d, N, K) for a single dim, else None."""
    import math

    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            return None
        dim = dim[0]
    if type(dim) is not int:
        return None
    d = dim % x.ndim
    return d, x.shape[d], math.prod(x.shape[d + 1 :])


def _last_k_tile_dropped() -> None:
    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            info = _dims(inp, dim)
            if info and info[2] > 32 and out.is_floating_point():
                d, _, K = info
                tail = K % 32 or 32  # the last column tile is never stored
                view = out if keepdim else out.unsqueeze(d)
                flat = view.reshape(*view.shape[: d + 1], K)
                flat[..., K - tail :] = 0
            return out

        return sum_dim

    _wrap("sum", None, make)


def _rows(keep: Callable[[int], tuple[int, int]], extra: bool = False) -> Callable[[], None]:
    """sum over rows [start, stop) of the reduced dim (plus the tail again when ``extra``)."""

    def apply() -> None:
        def make(orig):
            def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
                info = _dims(inp, dim)
                if info is None or info[1] < 2:
                    return orig(inp, dim, keepdim, dtype=dtype)
                d, N, _ = info
                stop, tail = keep(N)
                out = orig(inp.narrow(d, 0, stop).contiguous(), dim, keepdim, dtype=dtype)
                if extra and tail:
                    out = out + orig(inp.narrow(d, N - tail, tail).contiguous(), dim, keepdim, dtype=dtype)
                return out

            return sum_dim

        _wrap("sum", None, make)

    return apply


def _prod_identity_zero() -> None:
    def make(orig):
        def prod_dim(inp, dim=None, keepdim=False, *, dtype=None):
            return orig(inp, dim, keepdim, dtype=dtype) * 0  # accumulator started at 0, not 1

        return prod_dim

    _wrap("prod", None, make)


def _keepdim_ignored() -> None:
    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            return orig(inp, dim, False, dtype=dtype)

        return mean_dim

    _wrap("mean", None, make)


def _half_accumulation() -> None:
    import torch

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            if info is None or inp.dtype not in (torch.float16, torch.bfloat16):
                return orig(inp, dim, keepdim, dtype=dtype)
            d = info[0]
            acc = torch.zeros_like(inp.select(d, 0))
            for i in range(inp.shape[d]):  # every partial sum rounded to the input's precision
                acc = acc + inp.select(d, i)
            return acc.unsqueeze(d) if keepdim else acc

        return sum_dim

    _wrap("sum", None, make)


def _bool_sum_returns_bool() -> None:
    import torch

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            return out.bool() if inp.dtype == torch.bool and dtype is None else out

        return sum_dim

    _wrap("sum", None, make)


def _out_not_written() -> None:
    def make(orig):
        _, plain = _entry("sum")

        def sum_dim_out(inp, dim=None, keepdim=False, *, dtype=None, out):
            return plain(inp, dim, keepdim, dtype=dtype)  # result returned, buffer untouched

        return sum_dim_out

    _wrap("sum", ROWS.get("sum").out_entry, make)


def _softmax_without_max() -> None:
    def make(orig):
        def softmax(self, dim, half_to_float=False):
            e = self.float().exp()  # no max subtraction: overflows for inputs above ~88
            return (e / e.sum(dim, keepdim=True)).to(self.dtype)

        return softmax

    _wrap("softmax", None, make)


def _negative_dim_off_by_one() -> None:
    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            if isinstance(dim, (list, tuple)):
                dim = type(dim)(d - 1 if d < 0 and d - 1 >= -inp.ndim else d for d in dim)
            elif isinstance(dim, int) and dim < 0 and dim - 1 >= -inp.ndim:
                dim = dim - 1
            return orig(inp, dim, keepdim, dtype=dtype)

        return mean_dim

    _wrap("mean", None, make)


def _second_call_garbage() -> None:
    seen: set[Any] = set()

    def make(orig):
        def softmax(self, dim, half_to_float=False):
            out = orig(self, dim, half_to_float)
            key = (self.data_ptr(), tuple(self.shape), dim)
            if key in seen and out.numel():  # the second identical call reads stale memory
                out.view(-1)[-1] += 1.0e-3
            seen.add(key)
            return out

        return softmax

    _wrap("softmax", None, make)


def _mean_wrong_count() -> None:
    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            out = orig(inp, dim, keepdim, dtype=dtype)
            return out * info[1] / (info[1] + 1) if info and info[2] > 1 else out  # N+1 on the non-inner path

        return mean_dim

    _wrap("mean", None, make)


def _routes_inner_dims() -> None:
    from ..workarounds import masked_reductions as mr

    original = mr.route

    def route(shape, dim):
        d = original(shape, dim)
        if d is None and isinstance(dim, (int, list, tuple)) and not isinstance(dim, bool):
            single = dim[0] if isinstance(dim, (list, tuple)) and len(dim) == 1 else dim
            if type(single) is int and len(shape) and -len(shape) <= single < len(shape):
                return single % len(shape)  # the transpose is paid on inner dims too
        return d

    mr.route = route


def _argmax_last_index() -> None:
    def make(orig):
        def argmax(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            return out if dim is None else (out + 1).clamp(max=inp.shape[dim] - 1)

        return argmax

    _wrap("argmax", None, make)


# -- the reduction checklist's mutants: ways other backends' kernels go wrong -------------


def _keepdim_wrong_axis() -> None:
    """keepdim re-inserts the reduced dim counting from the end the wrong way for dims
    below -1 (``unsqueeze(dim + 1)`` on a negative dim)."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, False, dtype=dtype)
            if not keepdim:
                return out
            d = dim[0] if isinstance(dim, (list, tuple)) and len(dim) == 1 else dim
            if isinstance(d, int) and d < -1:
                return out.unsqueeze(d + 1)
            return orig(inp, dim, True, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _dim_list_first_only() -> None:
    """A dim list reduces its first dim only (a loop that returns early)."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            if isinstance(dim, (list, tuple)) and len(dim) > 1:
                out = orig(inp, [dim[0]], True, dtype=dtype)
                return out if keepdim else out.squeeze(dim[0] % inp.ndim)
            return orig(inp, dim, keepdim, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _dim_none_first_dim() -> None:
    """dim=None reduces dim 0 only (None read as 0)."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            return orig(inp, [0] if dim is None and inp.ndim else dim, keepdim, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _softmax_nan_dropped() -> None:
    """A non-inner softmax treats NaN as -inf (a max that skips NaN, then exp(-inf) = 0)."""

    def make(orig):
        def softmax(self, dim, half_to_float=False):
            info = _dims(self, dim)
            if info and info[2] > 1:
                self = self.nan_to_num(nan=float("-inf"), posinf=float("inf"), neginf=float("-inf"))
            return orig(self, dim, half_to_float)

        return softmax

    _wrap("softmax", None, make)


def _sum_inf_minus_inf_zero() -> None:
    """Opposite infinities cancel to 0 (an accumulator that clamps to the finite range)."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            return (
                out.nan_to_num(nan=0.0, posinf=float("inf"), neginf=float("-inf")) if out.is_floating_point() else out
            )

        return sum_dim

    _wrap("sum", None, make)


def _log_softmax_neginf_slice_zero() -> None:
    """An all -inf slice gives 0 where torch gives NaN (a guard that zeroes the denominator)."""

    def make(orig):
        def log_softmax(self, dim, half_to_float=False):
            return orig(self, dim, half_to_float).nan_to_num(nan=0.0, posinf=float("inf"), neginf=float("-inf"))

        return log_softmax

    _wrap("log_softmax", None, make)


def _mean_skips_nan() -> None:
    """mean leaves NaN out of the slice (a load masked with ``x == x``: NaN never counts);
    torch's mean of a slice holding NaN is NaN.  (argmax skipping NaN, once a mutant here,
    is FlagGems' own behaviour on hardware: the registered ``nan_dropped_by_max``.)"""

    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            if inp.is_floating_point() and bool(inp.isnan().any()):
                return inp.nanmean(dim, keepdim, dtype=dtype)
            return orig(inp, dim, keepdim, dtype=dtype)

        return mean_dim

    _wrap("mean", None, make)


def _read_as_contiguous() -> None:
    """A non-contiguous input is read as if contiguous (its storage walked in order)."""
    import torch

    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            if not inp.is_contiguous() and inp.numel():
                base = torch.as_strided(inp, inp.shape, torch.empty(inp.shape).stride(), inp.storage_offset())
                return orig(base, dim, keepdim, dtype=dtype)
            return orig(inp, dim, keepdim, dtype=dtype)

        return mean_dim

    _wrap("mean", None, make)


def _storage_offset_ignored() -> None:
    """A view that starts inside its storage is read from the storage's start."""
    import torch

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            if inp.storage_offset() and inp.is_contiguous():
                inp = torch.as_strided(inp, inp.shape, inp.stride(), 0)
            return orig(inp, dim, keepdim, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _out_not_resized() -> None:
    """out= of the wrong size is written as far as it reaches, never resized."""

    def make(orig):
        _, plain = _entry("sum")

        def sum_dim_out(inp, dim=None, keepdim=False, *, dtype=None, out):
            result = plain(inp, dim, keepdim, dtype=dtype).flatten()
            flat = out.view(-1)
            n = min(flat.numel(), result.numel())
            flat[:n] = result[:n].to(out.dtype)
            return out

        return sum_dim_out

    _wrap("sum", ROWS.get("sum").out_entry, make)


def _dtype_arg_ignored() -> None:
    """The dtype= argument is dropped: half in, half out."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            return orig(inp, dim, keepdim)

        return sum_dim

    _wrap("sum", None, make)


def _half_result_widened() -> None:
    """A half input comes back as float32 (the accumulator's dtype is returned)."""
    import torch

    def make(orig):
        def softmax(self, dim, half_to_float=False):
            out = orig(self, dim, half_to_float)
            return out.float() if self.dtype in (torch.float16, torch.bfloat16) else out

        return softmax

    _wrap("softmax", None, make)


def _argmax_last_of_ties() -> None:
    """Ties resolve to the last maximum (a >= where torch keeps the first)."""

    def make(orig):
        def argmax(inp, dim=None, keepdim=False, *, dtype=None):
            if dim is None:
                return orig(inp, dim, keepdim, dtype=dtype)
            d = dim % inp.ndim
            flipped = orig(inp.flip(d), dim, keepdim, dtype=dtype)
            return inp.shape[d] - 1 - flipped

        return argmax

    _wrap("argmax", None, make)


def _empty_sum_nan() -> None:
    """The sum of nothing is NaN (0/0 left over from a mean's code path)."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            if inp.numel() == 0 and out.is_floating_point():
                out = out.fill_(float("nan"))
            return out

        return sum_dim

    _wrap("sum", None, make)


def _unit_dims_squeezed() -> None:
    """keepdim=False squeezes every size-1 dim, not the reduced one (``squeeze()``)."""

    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, True, dtype=dtype)
            return out if keepdim else out.squeeze()

        return mean_dim

    _wrap("mean", None, make)


def _tail_tile_of_one_row() -> None:
    """A row tail of exactly one row past a 16-row tile is skipped (N % 16 == 1, N > 16):
    an off-by-one only odd sizes meet."""

    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            if info and info[1] > 16 and info[1] % 16 == 1:
                d = info[0]
                out = orig(inp.narrow(d, 0, info[1] - 1).contiguous(), dim, keepdim, dtype=dtype)
                return out
            return orig(inp, dim, keepdim, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _column_grid_y() -> None:
    """A non-inner mean written as one program per (row, column), the column on grid axis y
    (FlagGems' argmin and log_softmax launch so): right up to 65535 columns, past them no
    CUDA-like device launches it."""
    import triton
    import triton.language as tl

    from ..workarounds.fastpath import FLOATS

    @triton.jit
    def column_mean(out, x, N, K, BLOCK_N: tl.constexpr):
        m, k = tl.program_id(0), tl.program_id(1)
        n = tl.arange(0, BLOCK_N)
        v = tl.load(x + m * N * K + n * K + k, mask=n < N, other=0.0).to(tl.float32)
        tl.store(out + m * K + k, tl.sum(v, axis=0) / N)

    def make(orig):
        def mean_dim(inp, dim, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            if not info or info[2] == 1 or dtype is not None or str(inp.dtype) not in FLOATS or not inp.numel():
                return orig(inp, dim, keepdim, dtype=dtype)
            d, n, k = info
            x = inp.contiguous()
            shape = list(x.shape)
            shape[d] = 1
            out = x.new_empty(shape)
            column_mean[(x.numel() // (n * k), k)](out, x, n, k, BLOCK_N=triton.next_power_of_2(n))
            return out if keepdim else out.squeeze(d)

        return mean_dim

    _wrap("mean", None, make)


# -- the kernels' own paths (issue #34): keyword parameters, tiles, K == 1, split-K, full
# reductions, aliasing, threads, backward.  Most act inside FlagGems' real kernels:
# ``rejit`` changes one expression of the jitted source (KERNEL_EDITS), the others wrap an
# entry point or hook the interpreter (installed only when the mutant is applied).

FASTPATH = "pytest_fl_contract.workarounds.fastpath"
FORCED = ("--fl-force-workaround",)  # the fast path runs only where the workaround is installed

# mutant name -> its kernel edits: (module, kernel, old expression, new expression, count; -1 all)
KERNEL_EDITS.update(
    {
        "softmax_online_no_rescale": (
            (
                "flag_gems.ops.softmax",
                "softmax_kernel_non_inner",
                "z * tl.exp(m - m_new) + tl.exp(inp - m_new)",
                "z + tl.exp(inp - m_new)",
                1,
            ),
        ),
        "sum_first_tile_only": (
            (
                "flag_gems.ops.sum",
                "sum_dim_kernel_non_inner",
                "for start_n in range(0, N, TILE_N):",
                "for start_n in range(0, TILE_N, TILE_N):",
                1,
            ),
        ),
        "argmax_cross_tile_ties_last": (
            (
                "flag_gems.ops.argmax",
                "argmax_kernel_non_inner",
                "update = local_max > max_values",
                "update = local_max >= max_values",
                -1,
            ),
            (
                "flag_gems.ops.argmax",
                "argmax_kernel_inner",
                "update = local_max > max_values",
                "update = local_max >= max_values",
                -1,
            ),
        ),
        "argmin_cross_tile_ties_last": (
            (
                "flag_gems.ops.argmin",
                "argmin_kernel",
                "update = local_min < min_values",
                "update = local_min <= min_values",
                -1,
            ),
        ),
        "argmin_k1_tile_offset_dropped": (
            (
                "flag_gems.ops.argmin",
                "argmin_kernel_opt_k1",
                "tl.where(update, start_n + local_argmin, argmin_vals)",
                "tl.where(update, local_argmin, argmin_vals)",
                1,
            ),
        ),
        "softmax_backward_non_inner_drops_scale": (
            (
                "flag_gems.ops.softmax",
                "softmax_backward_kernel_non_inner",
                "out_tile * (out_grad_tile - scale[None, :])",
                "out_tile * out_grad_tile",
                -1,
            ),
        ),
        "argmax_dim_none_block_offset_dropped": (
            (
                "flag_gems.ops.argmax",
                "argmax_kernel_1",
                "max_index = max_index + pid * BLOCK_SIZE",
                "max_index = max_index",
                1,
            ),
        ),
        "mean_vec_fp16_accumulation": (
            (
                "flag_gems.ops.mean",
                "mean_dim_kernel_non_inner_vec",
                "ACC_DTYPE = tl.float32",
                "ACC_DTYPE = input_dtype",
                1,
            ),
        ),
        "inner_softmax_mask_dropped": (
            (
                "flag_gems.ops.softmax",
                "softmax_kernel_inner",
                'inp = tl.load(input_ptrs, mask=mask, other=-float("inf")).to(',
                "inp = tl.load(input_ptrs).to(",
                1,
            ),
        ),
        # min/max (issue 29), from amax_kernel / max_kernel / min_kernel (5.0.2 and 5.4.0.dev0)
        "amax_tail_other_zero": (
            (
                "flag_gems.ops.amax",
                "amax_kernel",
                "a = tl.load(inp + cols, mask, other=min_value)",
                "a = tl.load(inp + cols, mask, other=0.0)",
                1,
            ),
        ),
        "amax_first_column_tile_only": (
            (
                "flag_gems.ops.amax",
                "amax_kernel",
                "for off in range(0, N, BLOCK_N):",
                "for off in range(0, BLOCK_N, BLOCK_N):",
                1,
            ),
        ),
        "max_dim_cross_tile_ties_last": (
            (
                "flag_gems.ops.max",
                "max_kernel",
                "update_mask = max_value > result_value",
                "update_mask = max_value >= result_value",
                1,
            ),
        ),
        "min_dim_tile_offset_dropped": (
            (
                "flag_gems.ops.min",
                "min_kernel",
                "tl.where(update, start_n + local_argmin, argmin_values)",
                "tl.where(update, local_argmin, argmin_values)",
                1,
            ),
        ),
        "max_dim_values_of_last_tile": (
            (
                "flag_gems.ops.max",
                "max_kernel",
                "result_value = tl.where(update_mask, max_value, result_value)",
                "result_value = max_value",
                1,
            ),
        ),
        "aminmax_min_without_its_mask": (
            (
                "flag_gems.ops.aminmax",
                "aminmax_kernel",
                "_min = tl.where(mask, tl.minimum(_min, a), _min)",
                "_min = tl.minimum(_min, a)",
                1,
            ),
        ),
        # variance and norms (issue 29), from var.py's var_welford_kernel and vector_norm.py's kernels
        "var_masked_lanes_counted": (
            ("flag_gems.ops.var", "var_welford_kernel", "count = _count + mask", "count = _count + 1", 1),
        ),
        "var_correction_ignored": (
            ("flag_gems.ops.var", "var_welford_kernel", "var = acc / (N - correction)", "var = acc / (N - 1)", 1),
        ),
        "vector_norm_sign_kept": (
            ("flag_gems.ops.vector_norm", "v_norm_kernel", "_sum += pow(tl.abs(a), ord)", "_sum += pow(a, ord)", 1),
        ),
        "min_norm_tail_other_zero": (
            (
                "flag_gems.ops.vector_norm",
                "min_norm_kernel",
                'a = tl.load(X + cols, mask, other=float("inf"))',
                "a = tl.load(X + cols, mask, other=0.0)",
                1,
            ),
        ),
        # scans, from cumsum.py's carry kernels and cummax.py / cummin.py's loop kernels
        "cumsum_first_block_carry_only": (
            (
                "flag_gems.ops.cumsum",
                "add_base_sum_abc_kernel",
                "last_part_offset = base_part_offset + (pid_b - 1) * C",
                "last_part_offset = base_part_offset + 0 * C",
                1,
            ),
        ),
        "cumsum_row_prefix_of_its_own_block": (
            (
                "flag_gems.ops.cumsum",
                "reduce_then_scan_block_scan_kernel_row",
                "previous_sum_ptr + pid_m * num_tiles_n + pid_n - 1",
                "previous_sum_ptr + pid_m * num_tiles_n + pid_n",
                1,
            ),
        ),
        "cummax_loop_ties_keep_the_carry": (
            (
                "flag_gems.ops.cummax",
                "scan_part_max_abc_loop_kernel",
                "(result >= prev_max_val_b)",
                "(result > prev_max_val_b)",
                1,
            ),
        ),
        "cummin_carry_of_the_block_only": (
            (
                "flag_gems.ops.cummin",
                "scan_part_min_abc_loop_kernel",
                "prev_min_val = tl.sum(tl.where(last_mask, final_vals, 0), axis=0)",
                "prev_min_val = tl.sum(tl.where(last_mask, result, 0), axis=0)",
                1,
            ),
        ),
        # all / any / count_nonzero, from all.py's, any.py's and count_nonzero.py's kernels
        "all_tail_other_zero": (
            (
                "flag_gems.ops.all",
                "all_kernel_dim",
                "a = tl.load(inp + cols, mask, other=1.0)",
                "a = tl.load(inp + cols, mask, other=0.0)",
                1,
            ),
        ),
        "any_first_column_tile_only": (
            (
                "flag_gems.ops.any",
                "any_kernel_dim",
                "for off in range(0, N, BLOCK_N):",
                "for off in range(0, BLOCK_N, BLOCK_N):",
                1,
            ),
        ),
        "count_nonzero_counts_masked_lanes": (
            (
                "flag_gems.ops.count_nonzero",
                "count_nonzero_kernel",
                "x = tl.load(x_ptr + offset, mask=mask, other=0)",
                "x = tl.load(x_ptr + offset, mask=mask, other=1)",
                1,
            ),
        ),
        # normalization layers, from layernorm.py's, rms_norm.py's, groupnorm.py's and batch_norm.py's kernels
        "layer_norm_variance_over_padding": (
            (
                "flag_gems.ops.layernorm",
                "layer_norm_persistent_kernel_multiline",
                "s = tl.where(mask, d * d, 0)",
                "s = d * d",
                1,
            ),
        ),
        "layer_norm_weight_grad_first_row_tile": (
            (
                "flag_gems.ops.layernorm",
                "weight_bias_backward_kernel",
                "for off in range(0, M, BLOCK_ROW_SIZE):",
                "for off in range(0, BLOCK_ROW_SIZE, BLOCK_ROW_SIZE):",
                1,
            ),
        ),
        "rms_norm_mean_square_over_the_block": (
            (
                "flag_gems.ops.rms_norm",
                "rms_norm_kernel",
                "var = tl.sum(x * x, axis=0) / N",
                "var = tl.sum(x * x, axis=0) / BLOCK_SIZE",
                1,
            ),
        ),
        "group_norm_centred_without_its_mask": (
            (
                "flag_gems.ops.groupnorm",
                "group_norm_kernel",
                "x = tl.where(xy_mask, X_val - mean, 0.0)",
                "x = X_val - mean",
                1,
            ),
        ),
        "batch_norm_input_grad_without_the_bias_term": (
            (
                "flag_gems.ops.batch_norm",
                "batch_norm_backward_kernel",
                "(term1 * curr_pre_lin + term2) / count",
                "(term1 * curr_pre_lin) / count",
                1,
            ),
        ),
        # matmul tails and index ops (issue 29), from mm.py's, addmm.py's, bmm.py's and index_select.py's kernels
        "mm_tail_drops_last_k": (
            ("flag_gems.ops.mm", "mm_kernel_general", "mask_k = rk < K", "mask_k = rk < K - 1", 1),
        ),
        "addmm_beta_ignored": (
            (
                "flag_gems.ops.addmm",
                "addmm_kernel",
                "accumulator = accumulator * alpha + bias * beta",
                "accumulator = accumulator * alpha + bias",
                1,
            ),
        ),
        "bmm_k_offsets_not_advanced": (("flag_gems.ops.bmm", "bmm_kernel", "offs_k += TILE_K", "offs_k += 0", 1),),
        "index_select_last_index_dropped": (
            (
                "flag_gems.ops.index_select",
                "index_select_kernel",
                "indices = tl.load(index + cols_offsets, mask=(cols_offsets < index_len), other=0)",
                "indices = tl.load(index + cols_offsets, mask=(cols_offsets < index_len - 1), other=0)",
                1,
            ),
        ),
        "softmax_inner_tail_other_zero": (
            (
                "flag_gems.ops.softmax",
                "softmax_kernel_inner",
                'inp = tl.load(input_ptr + n_offsets, mask=mask, other=-float("inf"))\n            m_new',
                "inp = tl.load(input_ptr + n_offsets, mask=mask, other=0.0)\n            m_new",
                1,
            ),
        ),
        # outside review (paths only some sizes take), written from FlagGems 5.0.2's kernels
        "prod_loop_every_other_chunk": (
            (
                "flag_gems.ops.prod",
                "prod_kernel",
                "for start_n in range(0, N, BLOCK_N):",
                "for start_n in range(0, N, 2 * BLOCK_N):",
                1,
            ),
        ),
        "cumsum_cta_tiles_one_prefix": (
            (
                "flag_gems.ops.cumsum",
                "reduce_then_scan_block_scan_kernel_row",
                "prefix += tl.sum(x, 0)",
                "prefix = prefix",
                1,
            ),
        ),
        "mm_last_group_taken_full": (
            (
                "flag_gems.ops.mm",
                "mm_kernel_general",
                "group_size = min(grid_m - group_id * GROUP_M, GROUP_M)",
                "group_size = min(grid_m, GROUP_M)",
                1,
            ),
        ),
        "mm_syrk_mirror_skipped": (
            ("flag_gems.ops.mm", "mm_kernel_syrk", "if pid_m > pid_n:", "if pid_m < pid_n:", 1),
        ),
        "rms_norm_loop_floor_prev_multiple": (
            (
                "flag_gems.ops.rms_norm",
                "rms_norm_loop_kernel",
                "prev_multiple = prev_multiple_of(N, TILE_N)",
                "prev_multiple = N // TILE_N * TILE_N",
                1,
            ),
        ),
        "amax_full_mid_other_zero": (
            (
                "flag_gems.ops.amax",
                "amax_kernel_2",
                "mid_val = tl.load(mid_ptrs, mask=mask, other=min_value)",
                "mid_val = tl.load(mid_ptrs, mask=mask, other=0.0)",
                1,
            ),
        ),
        "argmax_dim_none_ties_last_block": (
            (
                "flag_gems.ops.argmax",
                "argmax_kernel_2",
                "index_val = tl.argmax(mid_val, axis=0)",
                "index_val = tl.argmax(mid_val, axis=0, tie_break_left=False)",
                1,
            ),
        ),
        # the workaround's own fast path (workarounds/fastpath.py): the fixture the contracts put
        # under test must fail them when it is wrong, on each of its plans (tiles, flat columns,
        # splits, tiny-K slabs) - written from its kernels
        "fastpath_row_tail_exact_block_dropped": (
            (FASTPATH, "_sum_rows", "if n + (BLOCK_R >> level) <= n_end:", "if n + (BLOCK_R >> level) < n_end:", 1),
        ),
        "fastpath_split_rows_unclamped": (
            (FASTPATH, "_split_rows", "tl.minimum(N, n_start + rows_per_split)", "n_start + rows_per_split", 1),
        ),
        "fastpath_flat_columns_m_stride": (
            (
                FASTPATH,
                "_columns",
                "return c, (c // K) * N * K + c % K, c < MK",
                "return c, (c // K) * N + c % K, c < MK",
                1,
            ),
        ),
        "fastpath_softmax_wide_fold_unscaled": (
            (
                FASTPATH,
                "_softmax_stats_rows",
                "s = tl.sum(st * tl.exp(mt - m_safe[None, :]), axis=0)",
                "s = tl.sum(st, axis=0)",
                1,
            ),
        ),
        "fastpath_softmax_split_merge_unscaled": (
            (
                FASTPATH,
                "fl_softmax_norm_split_kernel",
                "s += tl.load(s_ptr + stat, mask=cmask, other=0.0) * tl.exp(mi - m_safe)",
                "s += tl.load(s_ptr + stat, mask=cmask, other=0.0)",
                1,
            ),
        ),
        "slab_step_not_whole_rows": (
            (FASTPATH, "_slab_sums", "STEP: tl.constexpr = (BLOCK // K_C) * K_C", "STEP: tl.constexpr = BLOCK", 1),
        ),
        "slab_tail_last_element_dropped": (
            (FASTPATH, "_slab_sums", "mask=lanes & (full + j < end)", "mask=lanes & (full + j < end - 1)", 1),
        ),
        "slab_softmax_fold_unscaled": (
            (
                FASTPATH,
                "_slab_fold",
                "sk = tl.sum(tl.where(mine, s * tl.exp(m - mk_safe), 0.0), axis=0)",
                "sk = tl.sum(tl.where(mine, s, 0.0), axis=0)",
                1,
            ),
        ),
        "slab_softmax_split_merge_unscaled": (
            (
                FASTPATH,
                "fl_slab_softmax_norm_kernel",
                "lane_s += tl.load(s_ptr + stat) * tl.exp(tl.load(m_ptr + stat) - m_safe)",
                "lane_s += tl.load(s_ptr + stat)",
                1,
            ),
        ),
        # an outside review of the fast path, written from its kernels (the contract's far-from-zero,
        # -inf-head and half_to_float calls kill them)
        "fastpath_softmax_max_starts_at_zero": (
            (
                FASTPATH,
                "_softmax_stats_rows",
                'm = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)',
                "m = tl.zeros([BLOCK_K], dtype=tl.float32)",
                1,
            ),
        ),
        "slab_softmax_fold_max_identity_zero": (
            (
                FASTPATH,
                "_slab_fold",
                'mk = tl.max(tl.where(mine, m, float("-inf")), axis=0)',
                "mk = tl.max(tl.where(mine, m, 0.0), axis=0)",
                1,
            ),
        ),
        "fastpath_softmax_merge_skips_last_split": (
            (FASTPATH, "fl_softmax_norm_split_kernel", "for _ in range(0, splits):", "for _ in range(1, splits):", 1),
        ),
        "fastpath_mean_narrowed_before_scale": (
            (
                FASTPATH,
                "fl_reduce_rows_kernel",
                "total = _sum_rows(in_ptr, 0, N, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL) * scale",
                "total = _sum_rows(in_ptr, 0, N, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL).to(out_ptr.dtype.element_ty)"
                ".to(tl.float32) * scale",
                1,
            ),
        ),
        "fastpath_split_partials_narrowed": (
            (
                FASTPATH,
                "fl_reduce_rows_split_kernel",
                "tl.store(part_ptr + pid_s * MK + c, part, mask=cmask)",
                "tl.store(part_ptr + pid_s * MK + c, part.to(in_ptr.dtype.element_ty), mask=cmask)",
                1,
            ),
        ),
        "fastpath_softmax_fold_neginf_guard_dropped": (
            (FASTPATH, "_fold_rows", 'm_safe = tl.where(m_new == float("-inf"), 0.0, m_new)', "m_safe = m_new", 1),
        ),
        "slab_softmax_stats_neginf_guard_dropped": (
            (FASTPATH, "_slab_stats", 'm_safe = tl.where(m_new == float("-inf"), 0.0, m_new)', "m_safe = m_new", 1),
        ),
        "fastpath_softmax_store_in_input_dtype": (
            (FASTPATH, "_softmax_write_rows", "y.to(out_ptr.dtype.element_ty)", "y.to(in_ptr.dtype.element_ty)", -1),
        ),
        "fastpath_whole_blocks_column_mask_dropped": (
            (FASTPATH, "_sum_rows", "acc += tl.load(ptrs, mask=kmask[None, :], other=0.0)", "acc += tl.load(ptrs)", 1),
        ),
        # a second outside review (FlagGems 5.0.2's kernels as installed): paths only some shapes,
        # dtypes or operand forms take
        "outside_mm_even_k_last_tile_twice": (
            (
                "flag_gems.ops.mm",
                "mm_kernel_general",
                "for start_k in range(0, prev_multiple, BLOCK_K):",
                "for start_k in range(0, K // BLOCK_K * BLOCK_K, BLOCK_K):",
                1,
            ),
        ),
        "outside_addmm_bias_row_stride_dropped": (
            (
                "flag_gems.ops.addmm",
                "addmm_kernel",
                "i_ptrs = i_ptr + stride_im * offs_cm[:, None] + stride_in * offs_cn[None, :]",
                "i_ptrs = i_ptr + stride_in * offs_cn[None, :]",
                1,
            ),
        ),
        "outside_layer_norm_multiline_rows_step_tile_n": (
            (
                "flag_gems.ops.layernorm",
                "layer_norm_persistent_kernel_multiline",
                "m_offsets = pid * TILE_M + tl.arange(0, TILE_M)",
                "m_offsets = pid * TILE_N + tl.arange(0, TILE_M)",
                1,
            ),
        ),
        "outside_cumsum_row_int32_accumulator": (
            (
                "flag_gems.ops.cumsum",
                "reduce_then_scan_root_scan_kernel_row",
                "acc_dtype: tl.constexpr = get_scan_accum_type(in_ptr.type.element_ty)",
                "acc_dtype: tl.constexpr = tl.int32 if in_ptr.type.element_ty.is_int() "
                "else get_scan_accum_type(in_ptr.type.element_ty)",
                1,
            ),
        ),
        "outside_var_mean_full_between_blocks_dropped": (
            (
                "flag_gems.ops.var_mean",
                "var_mean_kernel_2",
                "var = nvar / (N - correction)",
                "var = tl.sum(acc) / (N - correction)",
                1,
            ),
        ),
        "outside_rms_norm_fp16_computed_in_fp16": (
            (
                "flag_gems.ops.rms_norm",
                "rms_norm_kernel",
                "if tl.constexpr(in_ptr.dtype.element_ty == tl.float16)",
                "if tl.constexpr(False)",
                1,
            ),
        ),
        # a third outside review (FlagGems 5.0.2's kernels as installed): families the second did not touch
        "outside2_cummax_carry_ties_keep_the_carry": (
            (
                "flag_gems.ops.cummax",
                "add_base_max_kernel",
                "out_vals >= last_part_max_via_max, out_indices, last_part_max_index_via_max",
                "out_vals > last_part_max_via_max, out_indices, last_part_max_index_via_max",
                1,
            ),
            (
                "flag_gems.ops.cummax",
                "add_base_max_abc_kernel",
                "out_vals >= last_part_max_via_max, out_indices, last_part_max_index_via_max",
                "out_vals > last_part_max_via_max, out_indices, last_part_max_index_via_max",
                1,
            ),
        ),
        "outside2_softmax_non_inner_write_pass_row_offset_dropped": (
            (
                "flag_gems.ops.softmax",
                "softmax_kernel_non_inner",
                "offsets = pid_m * N * K + n_offsets[:, None] * K + k_offsets\n            mask = (n_offsets[:, None] < N) & (k_offsets[None, :] < K)",
                "offsets = n_offsets[:, None] * K + k_offsets\n            mask = (n_offsets[:, None] < N) & (k_offsets[None, :] < K)",
                1,
            ),
        ),
        "outside2_index_select_indices_masked_by_n": (
            (
                "flag_gems.ops.index_select",
                "index_select_kernel",
                "indices = tl.load(index + cols_offsets, mask=(cols_offsets < index_len), other=0)",
                "indices = tl.load(index + cols_offsets, mask=(cols_offsets < N), other=0)",
                1,
            ),
        ),
        "outside2_batch_norm_welford_step_of_the_row_tile": (
            (
                "flag_gems.ops.batch_norm",
                "batch_norm_forward_kernel",
                "step = m_step * n_num_steps + n_step + 1",
                "step = n_step + 1",
                1,
            ),
        ),
        "outside2_bmm_b_batch_stride_assumed_contiguous": (
            ("flag_gems.ops.bmm", "bmm_kernel", "B += pid_b * stride_bb", "B += pid_b * K * N", 1),
        ),
        "outside2_argmin_split_k_cross_tile_ties_last": (
            (
                "flag_gems.ops.argmin",
                "argmin_split_K_kernel_merged",
                "mask = local_min < global_min",
                "mask = local_min <= global_min",
                1,
            ),
        ),
        "outside2_group_norm_backward_sums_first_hw_tile": (
            (
                "flag_gems.ops.groupnorm",
                "group_norm_backward_kernel",
                "for off in range(0, HW, BLOCK_HW_SIZE):",
                "for off in range(0, BLOCK_HW_SIZE, BLOCK_HW_SIZE):",
                1,
            ),
        ),
        "outside2_std_full_bessel_hard_coded": (
            (
                "flag_gems.ops.std",
                "_std_reduce_kernel",
                "var = var * N / tl.maximum(N - correction, 1.0)",
                "var = var * N / tl.maximum(N - 1, 1.0)",
                1,
            ),
        ),
        "outside2_count_nonzero_combine_counts_blocks": (
            (
                "flag_gems.ops.count_nonzero",
                "count_nonzero_combin_kernel_1",
                "nonzero_count += tl.sum(x)",
                "nonzero_count += tl.sum((x != 0).to(tl.int64))",
                1,
            ),
        ),
    }
)


def _fast_path_mutant(name: str, description: str, select: str) -> Mutant:
    """A mutant of the workaround's own fast path: its kernel edits (``KERNEL_EDITS[name]``),
    run with the workaround installed (the fast path runs nowhere else)."""
    return Mutant(name, description, select, _kernel_edits(name), args=FORCED)


def _plan_key_drops(position: int) -> Callable[[], None]:
    """The fast path memoises a plan under a key that leaves out what decides it (``_key``'s
    tuple without one field): a later call that differs only there reuses the first call's plan."""

    def apply() -> None:
        from ..workarounds import fastpath

        original = fastpath._key

        def key(op, x, arguments):
            k = original(op, x, arguments)
            return None if k is None else k[:position] + k[position + 1 :]

        fastpath._key = key

    return apply


def _k_div_any() -> None:
    """The plan hands its row walks a K_DIV that need not divide K (the vector width whatever
    K is): on hardware, loads misaligned by the compiler's belief; on the interpreter the
    kernels' K = (K // K_DIV) * K_DIV drops the rows' last columns, which the contracts see."""
    from ..workarounds import fastpath

    original = fastpath._meta

    def meta(plan, K):
        return {**original(plan, K), "K_DIV": fastpath.VECTOR}

    fastpath._meta = meta


def _gems_kernel(fn: Any) -> bool:
    """A FlagGems kernel (the hooks below leave the project's own probe kernels alone)."""
    return str(getattr(fn, "__module__", "")).startswith("flag_gems")


def _gather_index_read_as_contiguous() -> None:
    """gather's generated kernel walks the index with the strides of a contiguous index (the
    non-contiguous-index class of FlagGems #5746): a transposed index is read in the wrong order."""
    import torch

    def make(orig):
        def gather(inp, dim, index, out=None, sparse_grad=False):
            if index.numel() and not index.is_contiguous() and 0 not in index.stride():
                index = torch.as_strided(index, index.shape, torch.empty(index.shape).stride(), index.storage_offset())
            return orig(inp, dim, index, out=out, sparse_grad=sparse_grad)

        return gather

    _wrap_tensor_op("gather", make)


def _scatter_add_stride0_index_first_slice() -> None:
    """scatter_add_ with an expanded (stride-0) index applies only its first slice (the stride-0
    class of FlagGems #6448): the rest of the source never lands."""

    def make(orig):
        def scatter_add_(x, dim, index, src):
            zero = [axis for axis in range(index.dim()) if index.stride(axis) == 0 and index.shape[axis] > 1]
            if zero:
                index, src = index.narrow(zero[0], 0, 1), src.narrow(zero[0], 0, 1)
            return orig(x, dim, index, src)

        return scatter_add_

    _wrap_tensor_op("scatter_add_", make)


def _index_add_alpha_dropped() -> None:
    def make(orig):
        def index_add(inp, dim, index, src, alpha=1):
            return orig(inp, dim, index, src)

        return index_add

    _wrap_tensor_op("index_add", make)


def _std_correction_zero_is_none() -> None:
    def make(orig):
        def std(x, dim=None, *, correction=None, keepdim=False):
            return orig(x, dim, correction=correction or None, keepdim=keepdim)  # 0 is falsy: "not given"

        return std

    _wrap("std", None, make)


def _softmax_half_to_float_ignored() -> None:
    def make(orig):
        def softmax(self, dim, half_to_float=False):
            return orig(self, dim, False)

        return softmax

    _wrap("softmax", None, make)


def _keepdim_dropped_dim_none() -> None:
    def make(orig):
        def argmax(inp, dim=None, keepdim=False, *, dtype=None):
            return orig(inp, dim, keepdim and dim is not None, dtype=dtype)

        return argmax

    _wrap("argmax", None, make)


def _prod_zero_tile_skipped() -> None:
    """A row tile whose product is exactly 0 is taken for an empty tile and skipped (0 used
    as the 'nothing here' sentinel): modelled with tiles of the kernel's TILE_N, 8192."""
    import torch

    tile = 8192

    def make(orig):
        def prod_dim(inp, dim=None, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            if info is None or info[1] <= tile:
                return orig(inp, dim, keepdim, dtype=dtype)
            d, n, _ = info
            out = None
            for start in range(0, n, tile):
                part = orig(inp.narrow(d, start, min(tile, n - start)).contiguous(), dim, keepdim, dtype=dtype)
                out = part if out is None else torch.where(part == 0, out, out * part)
            return out

        return prod_dim

    _wrap("prod", None, make)


def _reduce_size1_returns_view() -> None:
    def make(orig):
        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            info = _dims(inp, dim)
            if info and info[1] == 1 and dtype is None and inp.is_floating_point():
                return inp if keepdim else inp.squeeze(info[0])  # nothing to reduce: the input itself
            return orig(inp, dim, keepdim, dtype=dtype)

        return sum_dim

    _wrap("sum", None, make)


def _launch_skipped_off_main_thread() -> None:
    """A launcher whose per-thread state (a launch cache, a current-device context) is empty
    off the main thread: there the launch silently does nothing and the output keeps what
    torch.empty gave."""
    import threading

    from triton.runtime import interpreter

    original = interpreter.GridExecutor.__call__

    def call(self, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread() and _gems_kernel(self.fn):
            return None
        return original(self, *args, **kwargs)

    interpreter.GridExecutor.__call__ = call


def _log_softmax_backward_non_inner_drops_term() -> None:
    def make(orig):
        def log_softmax_backward(grad_output, output, dim, input_dtype):
            info = _dims(output, dim)
            if info and info[2] > 1:  # the - exp(y) * sum(g) term lost on the non-inner path
                return grad_output.to(input_dtype).clone()
            return orig(grad_output, output, dim, input_dtype)

        return log_softmax_backward

    _wrap("log_softmax", "log_softmax_backward", make)


def _bound_to_first_scalar_n() -> None:
    """A launcher that caches a kernel per constexprs only and bakes in the scalar N of its
    first launch: a later call with another N but the same tiles reduces the first N rows."""
    from triton.runtime import interpreter

    original = interpreter.InterpretedFunction.run
    first: dict[Any, Any] = {}

    def run(self, *args, **kwargs):
        if _gems_kernel(self.fn) and "N" in self.arg_names and self.arg_names.index("N") < len(args):
            i = self.arg_names.index("N")
            consts = tuple(sorted((k, v) for k, v in kwargs.items() if k.isupper() and isinstance(v, (int, bool))))
            n = first.setdefault((self.fn.__module__, self.fn.__name__, consts), args[i])
            args = (*args[:i], n, *args[i + 1 :])
        return original(self, *args, **kwargs)

    interpreter.InterpretedFunction.run = run


def _full_reduction_last_block_dropped() -> None:
    """The two-stage full reduction (dim=None, dim=[]) launches floor(M / BLOCK) first-stage
    programs instead of cdiv: the last partial block never counts (its partial is the
    identity)."""
    from triton.runtime import interpreter

    stage1 = {"sum_kernel_1": 0, "mean_kernel_1": 0, "prod_kernel_mid": 1}  # kernel -> identity
    original = interpreter.InterpretedFunction.run

    def run(self, *args, grid, **kwargs):
        name = self.fn.__name__
        if _gems_kernel(self.fn) and name in stage1 and isinstance(grid, tuple) and len(args) >= 4:
            mid, m, block = args[1], args[2], args[3]
            grid = (max(1, m // block), *grid[1:])
            mid.fill_(stage1[name])
        return original(self, *args, grid=grid, **kwargs)

    interpreter.InterpretedFunction.run = run


def _masked_load_no_other_garbage() -> None:
    """A compiler that leaves the masked lanes of a load without ``other`` undefined (NaN
    here); compiled Triton on NVIDIA zero-fills them, nothing promises it."""
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original = builder.create_masked_load

    def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
        handle = original(self, ptrs, mask, other, *args, **kwargs)
        if other is None and mask is not None and handle.data.dtype.kind == "f":
            handle.data = np.where(np.asarray(mask.data, dtype=bool), handle.data, np.nan).astype(handle.data.dtype)
        return handle

    builder.create_masked_load = create_masked_load


def _autotune_picks_last_config() -> None:
    """The autotuner settles on the last valid config instead of the first: FlagGems' argmin
    split-K grid assumes BLOCK_M = 8, so a BLOCK_M = 4 config leaves rows unwritten (a defect
    of FlagGems' own that a GPU whose tuner picks that config meets)."""
    from triton.runtime import autotuner

    def bench(self, *args, config, **meta):
        return [float(len(self.configs) - self.configs.index(config))] * 3

    autotuner.Autotuner._bench = bench


def _sum_out_returns_fresh() -> None:
    def make(orig):
        def sum_dim_out(inp, dim=None, keepdim=False, *, dtype=None, out):
            return orig(inp, dim, keepdim, dtype=dtype, out=out).clone()  # out written, a copy returned

        return sum_dim_out

    _wrap("sum", ROWS.get("sum").out_entry, make)


def _mean_multi_dim_wrong_count() -> None:
    import math

    def make(orig):
        def mean_dim(inp, dim=None, keepdim=False, *, dtype=None):
            out = orig(inp, dim, keepdim, dtype=dtype)
            if isinstance(dim, (list, tuple)) and len(dim) > 1:
                n = math.prod(inp.shape[d] for d in dim)
                out = out * n / inp.shape[dim[-1]]  # divided by the last dim's size only
            return out

        return mean_dim

    _wrap("mean", None, make)


def _outside_gather_programs_past_first() -> None:
    """gather's generated kernel (gather.py: ``offset = pid * BLOCK_SIZE_N + tl.arange(0,
    BLOCK_SIZE_N)``) with its program id folded to 0 (a compiler that takes the grid for one
    program): every program stores the first 512 index elements; the rest of ``out`` is never
    written (here: zeros, a fresh allocation's)."""

    def make(orig):
        def gather(inp, dim, index, out=None, sparse_grad=False):
            result = orig(inp, dim, index, out=out, sparse_grad=sparse_grad)
            if index.numel() > 512:
                flat = result.view(-1) if result.is_contiguous() else None
                if flat is not None:
                    flat[512:] = 0
            return result

        return gather

    _wrap_tensor_op("gather", make)


def _outside2_index_add_duplicates_last_wins() -> None:
    """index_add's generated kernel with its ``tl.atomic_add`` lowered to a load, an add and a
    store (the bfloat16 fallback its own TODO sketches, or a vendor without atomics on that
    dtype): lanes of one block that hit the same output read the same old value, the last
    store wins - of a repeated index only the last source slice is added."""
    import torch

    def make(orig):
        def index_add(inp, dim, index, src, alpha=1):
            flat = index.reshape(-1)
            if flat.numel() < 2 or torch.unique(flat).numel() == flat.numel():
                return orig(inp, dim, index, src, alpha=alpha)
            last = {int(v): i for i, v in enumerate(flat.tolist())}
            keep = torch.tensor(sorted(last.values()), dtype=torch.long, device=index.device)
            return orig(inp, dim, flat.index_select(0, keep), src.index_select(dim, keep), alpha=alpha)

        return index_add

    _wrap_tensor_op("index_add", make)


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "masked_row_load",
            "Iluvatar: the row half of a 2-D load mask is dropped (emulated compiler defect)",
            "sum or mean or softmax",
            args=("--fl-inject", "masked_2d_row_load"),
        ),
        Mutant(
            "last_k_tile_dropped",
            "the last column tile of a non-inner sum is never stored",
            "sum",
            _last_k_tile_dropped,
        ),
        Mutant(
            "last_row_tile_dropped",
            "the last partial row tile is skipped",
            "sum",
            _rows(lambda n: (n - (n % 4 or 4) if n > 4 else n - 1, 0)),
        ),
        Mutant(
            "row_tile_read_twice",
            "the last partial row tile is accumulated twice",
            "sum",
            _rows(lambda n: (n, n % 4 or min(n, 4)), extra=True),
        ),
        Mutant("prod_identity_zero", "prod starts its accumulator at 0 instead of 1", "prod", _prod_identity_zero),
        Mutant("keepdim_ignored", "mean drops the reduced dim even with keepdim=True", "mean", _keepdim_ignored),
        Mutant(
            "half_accumulation", "sum accumulates fp16/bf16 in the input dtype, not fp32", "sum", _half_accumulation
        ),
        Mutant(
            "bool_sum_returns_bool", "sum of a bool tensor returns bool instead of int64", "sum", _bool_sum_returns_bool
        ),
        Mutant(
            "out_not_written",
            "sum(out=) returns a fresh result and leaves the buffer unwritten",
            "sum",
            _out_not_written,
        ),
        Mutant(
            "softmax_without_max",
            "softmax skips the max subtraction and overflows on large inputs",
            "softmax",
            _softmax_without_max,
        ),
        Mutant(
            "negative_dim_off_by_one", "negative dims resolve one axis too far left", "mean", _negative_dim_off_by_one
        ),
        Mutant(
            "second_call_garbage",
            "a repeated identical call reads stale memory (nondeterminism)",
            "softmax",
            _second_call_garbage,
        ),
        Mutant("mean_wrong_count", "non-inner mean divides by N + 1", "mean", _mean_wrong_count),
        Mutant(
            "routes_inner_dims",
            "the workaround's routing also moves inner dims",
            "routing",
            _routes_inner_dims,
            args=("--fl-force-workaround",),
        ),
        Mutant("argmax_off_by_one", "argmax returns the index after the maximum", "argmax", _argmax_last_index),
        # the reduction checklist (dims, special values, layout, dtype, index, empty, generated)
        Mutant(
            "keepdim_wrong_axis",
            "keepdim puts the dim back one place off for dims below -1",
            "sum and dims",
            _keepdim_wrong_axis,
        ),
        Mutant("dim_list_first_only", "a dim list reduces its first dim only", "sum and dims", _dim_list_first_only),
        Mutant("dim_none_first_dim", "dim=None reduces dim 0 only", "sum and dims", _dim_none_first_dim),
        Mutant(
            "softmax_nan_dropped", "a non-inner softmax treats NaN as -inf", "softmax and special", _softmax_nan_dropped
        ),
        Mutant(
            "sum_inf_minus_inf_zero", "+inf and -inf cancel to 0 in a sum", "sum and special", _sum_inf_minus_inf_zero
        ),
        Mutant(
            "log_softmax_neginf_zero",
            "an all -inf slice gives 0 instead of NaN",
            "log_softmax and special",
            _log_softmax_neginf_slice_zero,
        ),
        Mutant("mean_skips_nan", "mean leaves NaN out of the slice", "mean and special", _mean_skips_nan),
        Mutant(
            "read_as_contiguous",
            "a non-contiguous input is read as if contiguous",
            "mean and layout",
            _read_as_contiguous,
        ),
        Mutant(
            "storage_offset_ignored",
            "a view is read from its storage's start",
            "sum and layout",
            _storage_offset_ignored,
        ),
        Mutant("out_not_resized", "a wrongly sized out= buffer is not resized", "sum and layout", _out_not_resized),
        Mutant("dtype_arg_ignored", "the dtype= argument is ignored", "sum and dtype", _dtype_arg_ignored),
        Mutant(
            "half_result_widened",
            "a half input's softmax comes back as float32",
            "softmax and dtype",
            _half_result_widened,
        ),
        Mutant(
            "argmax_last_of_ties", "argmax returns the last of tied maxima", "argmax and index", _argmax_last_of_ties
        ),
        Mutant("empty_sum_nan", "the sum of an empty slice is NaN", "sum and empty", _empty_sum_nan),
        Mutant("unit_dims_squeezed", "keepdim=False squeezes every size-1 dim", "mean and empty", _unit_dims_squeezed),
        Mutant(
            "column_grid_y",
            "a non-inner mean puts its columns on grid axis y (65535 at most)",
            "mean and grid",
            _column_grid_y,
        ),
        Mutant(
            "tail_tile_of_one_row",
            "a one-row tail past a 16-row tile is skipped (N % 16 == 1)",
            "sum and generated",
            _tail_tile_of_one_row,
        ),
        # the kernels' own paths (issue #34): parameters, paths, tiles, aliasing, threads, backward
        Mutant(
            "std_correction_zero_is_none",
            "std reads correction=0 as not given (falsy test): population std becomes sample std",
            "std and (param or accuracy)",
            _std_correction_zero_is_none,
        ),
        Mutant(
            "softmax_half_to_float_ignored",
            "softmax drops half_to_float: fp16 in, fp16 out where fp32 was asked",
            "softmax and param",
            _softmax_half_to_float_ignored,
        ),
        Mutant(
            "keepdim_dropped_dim_none",
            "argmax honours keepdim for a dim but not for dim=None (one form tested only)",
            "argmax and param",
            _keepdim_dropped_dim_none,
        ),
        Mutant(
            "softmax_online_no_rescale",
            "non-inner softmax does not rescale its running sum when a later tile raises the max",
            "softmax and (path or tile)",
            _kernel_edits("softmax_online_no_rescale"),
        ),
        Mutant(
            "sum_first_tile_only",
            "non-inner sum loops to TILE_N instead of N: only the first row tile counts",
            "sum and path",
            _kernel_edits("sum_first_tile_only"),
        ),
        Mutant(
            "argmax_cross_tile_ties_last",
            "argmax merges tiles with >=: a tie in a later tile beats the first maximum",
            "argmax and (tile or path)",
            _kernel_edits("argmax_cross_tile_ties_last"),
        ),
        Mutant(
            "argmin_cross_tile_ties_last",
            "argmin merges tiles with <=: a tie in a later tile beats the first minimum",
            "argmin and (tile or path)",
            _kernel_edits("argmin_cross_tile_ties_last"),
        ),
        Mutant(
            "argmin_k1_tile_offset_dropped",
            "argmin's K == 1 kernel forgets the tile's start: an index within the tile",
            "argmin and (path or tile)",
            _kernel_edits("argmin_k1_tile_offset_dropped"),
        ),
        Mutant(
            "prod_zero_tile_skipped",
            "a row tile whose product is exactly 0 is skipped as empty (0 used as a sentinel)",
            "prod and (tile or path)",
            _prod_zero_tile_skipped,
        ),
        Mutant(
            "reduce_size1_returns_view",
            "a size-1 reduced dim returns the input itself (values right, storage shared)",
            "sum and alias",
            _reduce_size1_returns_view,
        ),
        Mutant(
            "launch_skipped_off_main_thread",
            "a per-thread launch state is empty off the main thread: the launch does nothing",
            "sum and thread",
            _launch_skipped_off_main_thread,
        ),
        Mutant(
            "softmax_backward_non_inner_drops_scale",
            "softmax_backward over a non-inner dim drops the - sum(y * g) term",
            "softmax and backward",
            _kernel_edits("softmax_backward_non_inner_drops_scale"),
        ),
        Mutant(
            "log_softmax_backward_non_inner_drops_term",
            "log_softmax_backward over a non-inner dim returns grad_output as is",
            "log_softmax and backward",
            _log_softmax_backward_non_inner_drops_term,
        ),
        Mutant(
            "bound_to_first_scalar_n",
            "a launcher caches kernels per constexprs and keeps the first launch's N",
            "sum and (accuracy or path)",
            _bound_to_first_scalar_n,
        ),
        Mutant(
            "argmax_dim_none_block_offset_dropped",
            "argmax dim=None returns the index within its block, not the flat index",
            "argmax and path",
            _kernel_edits("argmax_dim_none_block_offset_dropped"),
        ),
        Mutant(
            "full_reduction_last_block_dropped",
            "a full reduction launches floor(M / BLOCK) programs: the last block is lost",
            "(sum or mean or prod) and path",
            _full_reduction_last_block_dropped,
        ),
        Mutant(
            "mean_vec_fp16_accumulation",
            "mean's wide-K vector kernel accumulates fp16/bf16 in the input dtype",
            "mean and path",
            _kernel_edits("mean_vec_fp16_accumulation"),
        ),
        Mutant(
            "inner_softmax_mask_dropped",
            "last-dim softmax loads its one tile without the mask: rows read the next row",
            "softmax and (path or accuracy)",
            _kernel_edits("inner_softmax_mask_dropped"),
        ),
        Mutant(
            "softmax_inner_tail_other_zero",
            "last-dim multi-tile softmax pads its last tile with 0 instead of -inf",
            "softmax and path",
            _kernel_edits("softmax_inner_tail_other_zero"),
        ),
        # min/max (issue 29): written from the kernels before their contracts were run
        Mutant(
            "amax_tail_other_zero",
            "amax pads the masked columns of its tile with 0, not the dtype's minimum: an all-negative slice gives 0",
            "amax and (accuracy or path)",
            _kernel_edits("amax_tail_other_zero"),
        ),
        Mutant(
            "amax_first_column_tile_only",
            "amax loops to BLOCK_N instead of N: columns past the first 1024 are never read",
            "amax and (tile or path)",
            _kernel_edits("amax_first_column_tile_only"),
        ),
        Mutant(
            "max_dim_cross_tile_ties_last",
            "max.dim merges column tiles with >=: a tie in a later tile takes the index",
            "max_dim and (tile or path)",
            _kernel_edits("max_dim_cross_tile_ties_last"),
        ),
        Mutant(
            "min_dim_tile_offset_dropped",
            "min.dim forgets the tile's start: an index within its 1024-wide tile",
            "min_dim and (tile or path)",
            _kernel_edits("min_dim_tile_offset_dropped"),
        ),
        Mutant(
            "max_dim_values_of_last_tile",
            "max.dim keeps the last tile's maximum as the value (its index stays right)",
            "max_dim and (tile or path)",
            _kernel_edits("max_dim_values_of_last_tile"),
        ),
        Mutant(
            "aminmax_min_without_its_mask",
            "aminmax's one load fills masked lanes with the dtype's minimum for both "
            "reductions, and the min drops its tl.where: a partial tile's min is -inf",
            "aminmax and (accuracy or path)",
            _kernel_edits("aminmax_min_without_its_mask"),
        ),
        Mutant(
            "var_masked_lanes_counted",
            "var's Welford counts every lane of a column tile, masked or not: a partial tile's zeros enter the mean",
            "var and (accuracy or path)",
            _kernel_edits("var_masked_lanes_counted"),
        ),
        Mutant(
            "var_correction_ignored",
            "var divides by N - 1 whatever correction= says",
            "var and param",
            _kernel_edits("var_correction_ignored"),
        ),
        Mutant(
            "vector_norm_sign_kept",
            "vector_norm raises each value to ord without its absolute value: an odd ord of negatives",
            "vector_norm and (param or path)",
            _kernel_edits("vector_norm_sign_kept"),
        ),
        Mutant(
            "min_norm_tail_other_zero",
            "vector_norm's ord=-inf pads masked lanes with 0, not inf: a partial tile's norm is 0",
            "vector_norm and (param or path)",
            _kernel_edits("min_norm_tail_other_zero"),
        ),
        Mutant(
            "cumsum_first_block_carry_only",
            "cumsum's carry pass adds the first block's total to every later block, not the running one",
            "cumsum and (path or tile)",
            _kernel_edits("cumsum_first_block_carry_only"),
        ),
        Mutant(
            "cumsum_row_prefix_of_its_own_block",
            "cumsum's row block scan starts from its own block's prefix, not the previous one's",
            "cumsum and (path or tile)",
            _kernel_edits("cumsum_row_prefix_of_its_own_block"),
        ),
        Mutant(
            "cummax_loop_ties_keep_the_carry",
            "cummax's block loop keeps the carried index on a tie (torch takes the later one)",
            "cummax and (tile or path)",
            _kernel_edits("cummax_loop_ties_keep_the_carry"),
        ),
        Mutant(
            "cummin_carry_of_the_block_only",
            "cummin's block loop carries its block's own minimum, not the running one",
            "cummin and (tile or path)",
            _kernel_edits("cummin_carry_of_the_block_only"),
        ),
        Mutant(
            "all_tail_other_zero",
            "all pads the masked columns of its tile with 0: a partial tile is never all true",
            "all and (accuracy or path)",
            _kernel_edits("all_tail_other_zero"),
        ),
        Mutant(
            "any_first_column_tile_only",
            "any loops to BLOCK_N instead of N: columns past the first 1024 are never read",
            "any and (tile or path)",
            _kernel_edits("any_first_column_tile_only"),
        ),
        Mutant(
            "count_nonzero_counts_masked_lanes",
            "count_nonzero pads masked lanes with 1: every lane of the last block counts",
            "count_nonzero and (accuracy or path)",
            _kernel_edits("count_nonzero_counts_masked_lanes"),
        ),
        Mutant(
            "layer_norm_variance_over_padding",
            "layer_norm's multi-row forward sums the squared deviation of its "
            "padded columns (-mean each) into the variance",
            "layer_norm and (forward or path)",
            _kernel_edits("layer_norm_variance_over_padding"),
            suite="layers",
        ),
        Mutant(
            "layer_norm_weight_grad_first_row_tile",
            "layer_norm's weight and bias gradients fold only the first tile of rows",
            "layer_norm and (backward or path)",
            _kernel_edits("layer_norm_weight_grad_first_row_tile"),
            suite="layers",
        ),
        Mutant(
            "rms_norm_mean_square_over_the_block",
            "rms_norm divides the sum of squares by the power-of-two block, not by N",
            "rms_norm and (forward or path)",
            _kernel_edits("rms_norm_mean_square_over_the_block"),
            suite="layers",
        ),
        Mutant(
            "group_norm_centred_without_its_mask",
            "group_norm centres its padded lanes too: each adds mean**2 to the variance",
            "group_norm and (forward or path)",
            _kernel_edits("group_norm_centred_without_its_mask"),
            suite="layers",
        ),
        Mutant(
            "batch_norm_input_grad_without_the_bias_term",
            "batch_norm's input gradient forgets the sum of the output gradient (its bias term)",
            "batch_norm and (backward or path)",
            _kernel_edits("batch_norm_input_grad_without_the_bias_term"),
            suite="layers",
        ),
        # matmul tails and index ops (issue 29): written from the kernels and FlagGems' vendor issues
        Mutant(
            "mm_tail_drops_last_k",
            "mm's peeled K tail masks rk < K - 1: the last k is never summed",
            "mm and (accuracy or path)",
            _kernel_edits("mm_tail_drops_last_k"),
            suite="tensorops",
        ),
        Mutant(
            "addmm_beta_ignored",
            "addmm adds the bias unscaled (beta taken for 1)",
            "addmm and accuracy",
            _kernel_edits("addmm_beta_ignored"),
            suite="tensorops",
        ),
        Mutant(
            "bmm_k_offsets_not_advanced",
            "bmm advances its pointers but not its K offsets: the last K tile's mask holds for every lane",
            "bmm and (accuracy or path)",
            _kernel_edits("bmm_k_offsets_not_advanced"),
            suite="tensorops",
        ),
        Mutant(
            "index_select_last_index_dropped",
            "index_select loads its indices under cols < index_len - 1: the last column selects element 0",
            "index_select and accuracy",
            _kernel_edits("index_select_last_index_dropped"),
            suite="tensorops",
        ),
        Mutant(
            "gather_index_read_as_contiguous",
            "gather reads a non-contiguous index as if it were contiguous (FlagGems #5746's class)",
            "gather and layout",
            _gather_index_read_as_contiguous,
            suite="tensorops",
        ),
        Mutant(
            "scatter_add_stride0_index_first_slice",
            "scatter_add_ applies only the first slice of a stride-0 index (FlagGems #6448's class)",
            "scatter_add_ and layout",
            _scatter_add_stride0_index_first_slice,
            suite="tensorops",
        ),
        Mutant(
            "index_add_alpha_dropped",
            "index_add ignores alpha",
            "index_add and accuracy",
            _index_add_alpha_dropped,
            suite="tensorops",
        ),
        Mutant(
            "masked_load_no_other_garbage",
            "a compiler leaves the masked lanes of a load without other= undefined (NaN)",
            "softmax and backward",
            _masked_load_no_other_garbage,
        ),
        Mutant(
            "autotune_picks_last_config",
            "the autotuner picks the last config: argmin's split-K grid assumes BLOCK_M = 8",
            "argmin and path",
            _autotune_picks_last_config,
        ),
        Mutant(
            "sum_out_returns_fresh",
            "sum(out=) writes the buffer but returns a copy (ret is out fails)",
            "sum and alias",
            _sum_out_returns_fresh,
        ),
        Mutant(
            "mean_multi_dim_wrong_count",
            "a multi-dim mean divides by the last reduced dim's size only",
            "mean and (path or dims)",
            _mean_multi_dim_wrong_count,
        ),
        Mutant(
            "cold_compile_wrong_once",
            "a kernel's first launch after a cold compile loses its last program (the emulator's cold_first_launch)",
            "sum and fresh",
            args=("--fl-inject", "cold_first_launch"),
        ),
        Mutant(
            "specialised_on_first_n",
            "a kernel keeps its first launch's runtime scalars (the emulator's scalar_bound_at_first_launch)",
            "sum and interleaved",
            args=("--fl-inject", "scalar_bound_at_first_launch"),
        ),
        Mutant(
            "other_undefined",
            "masked lanes of a load hold the heap, not other= (the emulator's masked_load_other)",
            "sum and path and one-tile",
            args=("--fl-inject", "masked_load_other"),
        ),
        Mutant(
            "assume_drops_later_store",
            "a compiler drops the stores after a branch holding tl.assume, taken or "
            "not (FlagTree #1227; the emulator's equivalent_kernels_differ): equivalent kernels disagree",
            "test_equivalent and (seed_masked_load or first_launch)",
            args=("--fl-inject", "equivalent_kernels_differ"),
            suite="probes",
        ),
        Mutant(
            "store_bound_one_past",
            "a compiler stores one lane past a masked store's bound (offs <= N for "
            "offs < N; the emulator's store_past_tensor): the byte after an output changes, nothing faults",
            "test_guard and softmax",
            args=("--fl-inject", "store_past_tensor"),
        ),
        # outside review (paths only some sizes take)
        Mutant(
            "prod_loop_every_other_chunk",
            "prod's 1024-wide chunk loop steps 2 * BLOCK_N (an unroll by two that "
            "lost its second half): every other chunk is never multiplied",
            "prod and (path or tile)",
            _kernel_edits("prod_loop_every_other_chunk"),
        ),
        Mutant(
            "cumsum_cta_tiles_one_prefix",
            "cumsum's K == 1 block scan never advances its prefix across the "
            "tiles of one CTA (tiles_per_cta > 1: N past 4096 * 4 * SMs)",
            "cumsum and (path or tile)",
            _kernel_edits("cumsum_cta_tiles_one_prefix"),
        ),
        Mutant(
            "mm_last_group_taken_full",
            "mm's GROUP_M swizzle takes the last, partial row group as full: some "
            "output tiles never computed (grid_m > 8, grid_m % 8 != 0)",
            "mm and path",
            _kernel_edits("mm_last_group_taken_full"),
            suite="tensorops",
        ),
        Mutant(
            "mm_syrk_mirror_skipped",
            "mm's a @ a.T kernel never mirrors its lower-triangle tiles: the upper "
            "off-diagonal tiles stay unwritten (M past one 32-row tile)",
            "mm and path",
            _kernel_edits("mm_syrk_mirror_skipped"),
            suite="tensorops",
        ),
        Mutant(
            "rms_norm_loop_floor_prev_multiple",
            "rms_norm's loop kernel takes prev_multiple as floor(N / TILE_N) "
            "* TILE_N: equal unless N % TILE_N == 0 (TILE_N 8192 on the CPU lane), where the first column tile is never "
            "written",
            "rms_norm and path",
            _kernel_edits("rms_norm_loop_floor_prev_multiple"),
            suite="layers",
        ),
        Mutant(
            "amax_full_mid_other_zero",
            "amax(dim=None)'s second stage pads its partials with 0, not the "
            "dtype's minimum: an all-negative input gives 0",
            "amax and (path or tile)",
            _kernel_edits("amax_full_mid_other_zero"),
        ),
        Mutant(
            "argmax_dim_none_ties_last_block",
            "argmax(dim=None)'s second stage breaks ties between blocks to "
            "the right: the last block holding the maximum wins",
            "argmax and (path or tile)",
            _kernel_edits("argmax_dim_none_ties_last_block"),
        ),
        # a second outside review (FlagGems 5.0.2's kernels as installed)
        Mutant(
            "outside_mm_even_k_last_tile_twice",
            "mm's K loop runs to floor(K / BLOCK_K) tiles while the peeled "
            "tail still starts at cdiv(K, BLOCK_K) * BLOCK_K - BLOCK_K: K % BLOCK_K == 0 adds the last K tile twice",
            "mm and (accuracy or path)",
            _kernel_edits("outside_mm_even_k_last_tile_twice"),
            suite="tensorops",
        ),
        Mutant(
            "outside_addmm_bias_row_stride_dropped",
            "addmm reads its bias as a row vector (stride_im dropped): a "
            "full (M, N) or (M, 1) bias adds row 0 to every row",
            "addmm and (accuracy or path)",
            _kernel_edits("outside_addmm_bias_row_stride_dropped"),
            suite="tensorops",
        ),
        Mutant(
            "outside_layer_norm_multiline_rows_step_tile_n",
            "layer_norm's multi-row forward steps programs by "
            "TILE_N rows, not TILE_M: past one program (M > 1024 / TILE_N) rows are skipped",
            "layer_norm and (forward or path)",
            _kernel_edits("outside_layer_norm_multiline_rows_step_tile_n"),
            suite="layers",
        ),
        Mutant(
            "outside_cumsum_row_int32_accumulator",
            "cumsum's row scan (N <= 16384) accumulates integers in "
            "int32, as scan_part_sum_abc_kernel does, and stores into the int64 result: wraps past 2**31",
            "cumsum and (path or tile or integer_results)",
            _kernel_edits("outside_cumsum_row_int32_accumulator"),
        ),
        Mutant(
            "outside_var_mean_full_between_blocks_dropped",
            "var_mean(dim=None)'s second stage sums its blocks' M2 without the between-block term (numel > 1024)",
            "var_mean and (accuracy or path)",
            _kernel_edits("outside_var_mean_full_between_blocks_dropped"),
        ),
        Mutant(
            "outside_rms_norm_fp16_computed_in_fp16",
            "rms_norm's one-row kernel promotes bfloat16 only: float16 sums its squares in float16",
            "rms_norm and (forward or path)",
            _kernel_edits("outside_rms_norm_fp16_computed_in_fp16"),
            suite="layers",
        ),
        Mutant(
            "outside_gather_programs_past_first",
            "gather's generated kernel with its program id folded to 0: index elements past the first 512 never stored",
            "gather and (accuracy or layout or path)",
            _outside_gather_programs_past_first,
            suite="tensorops",
        ),
        # a third outside review (FlagGems 5.0.2's kernels as installed)
        Mutant(
            "outside2_cummax_carry_ties_keep_the_carry",
            "cummax's carry pass (one slice past 4096, or M * K <= 16 "
            "past 4096) keeps the carried index when a later block's value ties it (torch takes the later index)",
            "cummax and (tile or path)",
            _kernel_edits("outside2_cummax_carry_ties_keep_the_carry"),
        ),
        Mutant(
            "outside2_softmax_non_inner_write_pass_row_offset_dropped",
            "non-inner softmax's loop kernel (N past "
            "one tile) writes its second pass at row 0 whatever pid_m: rows past the first unwritten",
            "softmax and (path or tile)",
            _kernel_edits("outside2_softmax_non_inner_write_pass_row_offset_dropped"),
        ),
        Mutant(
            "outside2_index_select_indices_masked_by_n",
            "index_select masks its index load by N (the input "
            "dim, which its BLOCK_N heuristic reads) not index_len: past N indices select element 0",
            "index_select and accuracy",
            _kernel_edits("outside2_index_select_indices_masked_by_n"),
            suite="tensorops",
        ),
        Mutant(
            "outside2_batch_norm_welford_step_of_the_row_tile",
            "batch_norm's Welford counts its step within a "
            "row tile only (batch > 2048: BLOCK_M tiles of the batch): the running mean is divided wrongly",
            "batch_norm and (forward or path)",
            _kernel_edits("outside2_batch_norm_welford_step_of_the_row_tile"),
            suite="layers",
        ),
        Mutant(
            "outside2_bmm_b_batch_stride_assumed_contiguous",
            "bmm steps B's batch by K * N, not its stride: a "
            "broadcast (stride 0) or non-contiguous batch of B is read wrongly",
            "bmm and (accuracy or path or layout)",
            _kernel_edits("outside2_bmm_b_batch_stride_assumed_contiguous"),
            suite="tensorops",
        ),
        Mutant(
            "outside2_argmin_split_k_cross_tile_ties_last",
            "argmin's split-K kernel merges row tiles with <=: a tie in a later tile takes the index",
            "argmin and (tile or path)",
            _kernel_edits("outside2_argmin_split_k_cross_tile_ties_last"),
        ),
        Mutant(
            "outside2_group_norm_backward_sums_first_hw_tile",
            "group_norm's dx kernel (BLOCK_HW_SIZE 128 by "
            "default) sums dx_hat and dx_hat * x_hat over its first HW tile only: HW > 128 off",
            "group_norm and (backward or path)",
            _kernel_edits("outside2_group_norm_backward_sums_first_hw_tile"),
            suite="layers",
        ),
        Mutant(
            "outside2_std_full_bessel_hard_coded",
            "std(dim=None)'s reduce pass divides by N - 1 whatever correction= says (the dim kernels honour it)",
            "std and (param or path)",
            _kernel_edits("outside2_std_full_bessel_hard_coded"),
        ),
        Mutant(
            "outside2_count_nonzero_combine_counts_blocks",
            "count_nonzero's combine pass (N > 2048) counts its "
            "nonzero partial counts (a copy of the first pass) instead of summing them",
            "count_nonzero and (accuracy or path)",
            _kernel_edits("outside2_count_nonzero_combine_counts_blocks"),
        ),
        Mutant(
            "outside2_index_add_duplicates_last_wins",
            "index_add's atomic_add lowered to load + add + store: of a "
            "repeated index only the last source slice is added",
            "index_add and accuracy",
            _outside2_index_add_duplicates_last_wins,
            suite="tensorops",
        ),
        # the workaround's own fast path, each with the workaround installed
        _fast_path_mutant(
            "fastpath_row_tail_exact_block_dropped",
            "the fast path's row tail skips a block that ends exactly "
            "at N: rows lost whenever N % BLOCK_R has a set bit the walk reaches last",
            "(sum or mean) and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_split_rows_unclamped",
            "a split's rows are not clamped to N: the last split of each column "
            "reads the next m's rows (the Iluvatar defect, in our own kernel)",
            "(sum or mean or softmax) and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_flat_columns_m_stride",
            "flat column blocks step N, not N * K, from one m to the next",
            "(sum or mean or softmax) and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_wide_fold_unscaled",
            "softmax tiles of 32 columns or more fold their per-element "
            "sums of exp without rescaling each to the column max",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_split_merge_unscaled",
            "a split softmax merges the splits' sums of exp without rescaling each to the merged max",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "slab_step_not_whole_rows",
            "a tiny-K slab steps BLOCK elements, not a whole number of rows: lane j "
            "stops holding k = j % K unless K divides BLOCK",
            "(sum or mean) and fast_path",
        ),
        _fast_path_mutant(
            "slab_tail_last_element_dropped",
            "a slab's last, partial step drops the run's last element",
            "(sum or mean) and fast_path",
        ),
        _fast_path_mutant(
            "slab_softmax_fold_unscaled",
            "a slab softmax folds its lanes' sums of exp per k without rescaling them to the k's max",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "slab_softmax_split_merge_unscaled",
            "a split slab softmax merges the splits' sums of exp without rescaling each to the merged max",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_max_starts_at_zero",
            "softmax tiles start their running max at 0, not -inf: a "
            "column of values below 0 sums exp underflowed to zero",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "slab_softmax_fold_max_identity_zero",
            "a slab softmax folds its lanes' maxima per k from 0, not -inf",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_merge_skips_last_split",
            "a split softmax's merged max leaves out the last split: "
            "exp overflows where the column's maximum lies there",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_mean_narrowed_before_scale",
            "a one-launch mean rounds its fp32 sum to the output dtype "
            "before the 1/N scale: half precision overflows past 65504",
            "mean and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_split_partials_narrowed",
            "a split sum stores its fp32 partials in the input's dtype",
            "(sum or mean) and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_fold_neginf_guard_dropped",
            "softmax tiles' per-step fold loses its -inf guard "
            "(a fast-math lowering): a step of only -inf rows gives exp(-inf - -inf) = NaN",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "slab_softmax_stats_neginf_guard_dropped",
            "a slab softmax's per-lane running max loses its -inf guard",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_softmax_store_in_input_dtype",
            "softmax tiles store in the input's dtype, not the "
            "output's: half_to_float's float32 result holds fp16 values",
            "softmax and fast_path",
        ),
        _fast_path_mutant(
            "fastpath_whole_blocks_column_mask_dropped",
            "a sum's whole row blocks load without their column "
            "mask (a compiler that finds it redundant): padded columns read past the input, never stored",
            "(sum or mean) and fast_path",
        ),
        Mutant(
            "fastpath_k_div_not_a_divisor",
            "the fast path's row walks take K_DIV = 8 whatever K is: the compiler "
            "believes rows start aligned where they do not",
            "(sum or mean or softmax) and fast_path",
            _k_div_any,
            args=FORCED,
        ),
        Mutant(
            "fastpath_plan_key_without_dim",
            "the fast path memoises plans without the dim: the same shape "
            "reduced over another dim reuses the first dim's plan",
            "(sum or mean or softmax) and (dim or fast_path)",
            _plan_key_drops(4),
            args=FORCED,
        ),
        Mutant(
            "fastpath_plan_key_without_keepdim",
            "the fast path memoises plans without keepdim: the second form returns the first form's shape",
            "(sum or mean or softmax) and (dim or keepdim or fast_path)",
            _plan_key_drops(5),
            args=FORCED,
        ),
    )
}


def get(name: str) -> Mutant:
    if name not in MUTANTS:
        raise FlContractError(f"unknown mutant {name!r}; known: {', '.join(MUTANTS)}")
    return MUTANTS[name]


# a third outside review's mutants (outside3.py writes its kernel edits into mutation.KERNEL_EDITS)
from . import outside3 as _outside3  # noqa: E402

MUTANTS.update((m.name, m) for m in _outside3.MUTANTS)
