"""A third outside review's mutants, written from FlagGems 5.0.2's kernels and launchers (the
families added last: normalization layers, matmul, index ops, scans, min/max, variance and
norms) without reading the contracts.  Each is a defect a vendor backend or a FlagGems
regression could plausibly ship; they are grouped by the class of input that exposes them:

1. an argument a default call never exercises (eps, eval / running stats, output_mask
   subsets, integer scalars, reduce=, dtype=, the correction keyword);
2. values past 32 bits in int64;
3. shapes torch allows that a builder rarely draws (index narrower than the input, src larger
   than the index, the same-shape fast path);
4. state across calls (buffers reused, scalars baked at a first launch);
5. multi-row / multi-program paths the small cases reach with one row or one program only;
6. half-precision matmul accumulation;
7. signed zeros and special values.

Its kernel edits join ``mutation.KERNEL_EDITS``; ``zoo`` merges its ``MUTANTS`` into its own."""

from __future__ import annotations

import math
import sys
from typing import Any

from ..registry import ROWS
from .mutation import KERNEL_EDITS as _ALL_EDITS
from .mutation import Mutant
from .mutation import kernel_edits as _kernel_edits
from .mutation import replace as _replace
from .mutation import wrap as _wrap
from .mutation import wrap_tensor_op as _wrap_tensor_op

_INT64_AS_INT32 = "(tl.int32 if dtype == tl.int64 else dtype)"

# mutant name -> its kernel edits: (module, kernel, old expression, new expression, count; -1 all)
KERNEL_EDITS: dict[str, tuple[tuple[str, str, str, str, int], ...]] = {
    # 1. arguments a default call never exercises
    "outside3_rms_norm_eps_baked_default": (
        (
            "flag_gems.ops.rms_norm",
            "rms_norm_kernel",
            "rrms = 1 / tl.sqrt(var + eps)",
            "rrms = 1 / tl.sqrt(var + 1e-5)",
            1,
        ),
        (
            "flag_gems.ops.rms_norm",
            "rms_norm_loop_kernel",
            "rrms = 1 / tl.sqrt(var + eps)",
            "rrms = 1 / tl.sqrt(var + 1e-5)",
            1,
        ),
    ),
    "outside3_batch_norm_running_var_stored_biased": (
        (
            "flag_gems.ops.batch_norm",
            "batch_norm_forward_kernel",
            "(1 - momentum) * running_var + momentum * var * n / (n - 1)",
            "(1 - momentum) * running_var + momentum * var",
            1,
        ),
    ),
    "outside3_batch_norm_eval_takes_training_branch": (
        ("flag_gems.ops.batch_norm", "batch_norm_forward_kernel", "if is_train:", "if True:", 1),
    ),
    # 2. values past 32 bits in int64
    "outside3_max_dim_int64_compared_as_int32": (
        (
            "flag_gems.ops.max",
            "max_kernel",
            "min_value = get_dtype_min(dtype)",
            f"min_value = get_dtype_min({_INT64_AS_INT32})",
            1,
        ),
        (
            "flag_gems.ops.max",
            "max_kernel",
            "inp_vals = tl.load(inp_ptrs, mask=mask, other=min_value)",
            f"inp_vals = tl.load(inp_ptrs, mask=mask, other=min_value).to({_INT64_AS_INT32})",
            1,
        ),
    ),
    "outside3_argmax_int64_compared_as_int32": (
        (
            "flag_gems.ops.argmax",
            "argmax_kernel_inner",
            "min_value = get_dtype_min(dtype)",
            f"min_value = get_dtype_min({_INT64_AS_INT32})",
            1,
        ),
        (
            "flag_gems.ops.argmax",
            "argmax_kernel_inner",
            "inp_vals = tl.load(inp_ptrs, mask=mask, other=min_value)",
            f"inp_vals = tl.load(inp_ptrs, mask=mask, other=min_value).to({_INT64_AS_INT32})",
            -1,
        ),
        (
            "flag_gems.ops.argmax",
            "argmax_kernel_inner",
            "inp_vals = tl.load(inp_ptrs)\n",
            f"inp_vals = tl.load(inp_ptrs).to({_INT64_AS_INT32})\n",
            1,
        ),
    ),
    # 3. shapes torch allows that a builder rarely draws
    "outside3_scatter_add__same_shape_duplicates_last_wins": (
        (
            "flag_gems.ops.scatter_add_",
            "scatter_add_kernel_1",
            'tl.atomic_add(out_ptr + out_offsets, src_tensor, mask=mask, sem="relaxed")',
            "tl.store(out_ptr + out_offsets, tl.load(out_ptr + out_offsets, mask=mask, other=0) + src_tensor, mask=mask)",
            1,
        ),
    ),
    # 5. multi-row / multi-program paths
    "outside3_cumsum_block_sums_of_row_zero": (
        (
            "flag_gems.ops.cumsum",
            "reduce_then_scan_block_sum_kernel_row",
            "x = tl.load(in_ptr + pid_m * N + offsets, mask=offsets < N).to(acc_dtype)",
            "x = tl.load(in_ptr + offsets, mask=offsets < N).to(acc_dtype)",
            1,
        ),
    ),
    "outside3_rms_norm_weight_grad_column_tile_offset_dropped": (
        (
            "flag_gems.ops.rms_norm",
            "rms_norm_grad_dw_kernel",
            "DW + row_pid * N + col_start + cols,",
            "DW + row_pid * N + cols,",
            1,
        ),
    ),
    "outside3_mean_vec_half_program_base_without_vec": (
        (
            "flag_gems.ops.mean",
            "mean_dim_kernel_non_inner_vec",
            "k_base = pid_k * BLOCK_SIZE_K * VEC_SIZE",
            "k_base = pid_k * BLOCK_SIZE_K",
            1,
        ),
    ),
    # 6. half-precision matmul accumulation
    "outside3_mm_accumulator_rounded_between_k_tiles": (
        (
            "flag_gems.ops.mm",
            "mm_kernel_general",
            "acc += tl.dot(a, b, out_dtype=tl.float32, allow_tf32=False)",
            "acc = (acc + tl.dot(a, b, out_dtype=tl.float32, allow_tf32=False)).to(C.dtype.element_ty).to(tl.float32)",
            1,
        ),
    ),
    "outside3_bmm_tile_dot_out_dtype_half": (
        (
            "flag_gems.ops.bmm",
            "bmm_kernel",
            "o += tl.dot(a, b, allow_tf32=False)",
            "o += tl.dot(a, b, allow_tf32=False, out_dtype=tl.float16 if a.dtype == tl.float16 else tl.float32)",
            1,
        ),
    ),
    # 7. signed zeros and special values
    "outside3_count_nonzero_negative_zero_counted": tuple(
        (
            "flag_gems.ops.count_nonzero",
            kernel,
            "is_nonzero = (x != 0).to(tl.int64)",
            "is_nonzero = ((x.to(tl.int32, bitcast=True) != 0) if x.dtype == tl.float32 else "
            "(x.to(tl.int16, bitcast=True) != 0) if x.dtype == tl.float16 or x.dtype == tl.bfloat16 else "
            "(x != 0)).to(tl.int64)",
            1,
        )
        for kernel in ("count_nonzero_kernel_1", "count_nonzero_kernel", "count_nonzero_combin_kernel")
    ),
    "outside3_cummax_loop_nan_clause_dropped": (
        (
            "flag_gems.ops.cummax",
            "scan_part_max_abc_loop_kernel",
            "use_result = result_is_nan | (~prev_nan_mask & (result >= prev_max_val_b))",
            "use_result = result >= prev_max_val_b",
            1,
        ),
    ),
}
_ALL_EDITS.update(KERNEL_EDITS)


def _contiguous_strides(shape: Any) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


# -- 1. arguments a default call never exercises ------------------------------------------


def _layer_norm_backward_bias_grad_needs_weight_grad() -> None:
    """layer_norm_backward returns early on ``not output_mask[1]`` (FlagGems tests
    ``output_mask[1] is False and output_mask[2] is False``): a trainable bias beside a frozen
    weight gets no gradient."""

    def make(orig):
        def layer_norm_backward(
            grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None, output_mask=None
        ):
            if output_mask is not None and not output_mask[1] and output_mask[2]:
                in_grad, _, _ = orig(
                    grad_out, input, normalized_shape, mean, rstd, weight, bias, [output_mask[0], False, False]
                )
                return in_grad, None, None
            return orig(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)

        return layer_norm_backward

    _wrap("layer_norm", "layer_norm_backward", make)


def _addmm_int_scalars_read_as_float_bits() -> None:
    """addmm's launcher hands an integer beta / alpha (a Python int: the default 1 that
    torch.addmm and F.linear send) to the kernel's float parameter by its bits, as a binding
    that reads the Scalar's payload as a float does: 1 becomes 1.4e-45."""
    import struct

    def bits(value: Any) -> Any:
        if type(value) is int and -(2**31) <= value < 2**31:
            return struct.unpack("<f", struct.pack("<i", value))[0]
        return value

    def make(orig):
        def addmm(bias, mat1, mat2, *, beta=1, alpha=1):
            return orig(bias, mat1, mat2, beta=bits(beta), alpha=bits(alpha))

        return addmm

    def make_out(orig):
        def addmm_out(bias, mat1, mat2, *, beta=1, alpha=1, out=None):
            return orig(bias, mat1, mat2, beta=bits(beta), alpha=bits(alpha), out=out)

        return addmm_out

    _wrap_tensor_op("addmm", make)
    _replace(sys.modules[ROWS.get("addmm").module], "addmm_out", make_out)


def _scatter_entries(make_for: Any) -> None:
    """``make_for(orig)`` wraps scatter (out of place) and scatter_ (in place) alike."""
    mod = sys.modules[ROWS.get("scatter").module]
    _replace(mod, "scatter", make_for)
    _replace(mod, "scatter_", make_for)


def _scatter_multiply_not_recognised() -> None:
    """scatter's generated wrapper tests ``reduce == "prod"`` (scatter_reduce's spelling) for
    its IS_MUL path: torch's reduce="multiply" selects neither IS_ADD nor IS_MUL and falls
    through to the plain store."""

    def make(orig):
        def scatter(inp, dim, index, src, reduce=None):
            return orig(inp, dim, index, src, None if reduce == "multiply" else reduce)

        return scatter

    _scatter_entries(make)


def _var_correction_keyword_ignored() -> None:
    """var.correction (the overload torch.var(..., correction=) dispatches to) forwards its
    dim and keepdim but not its correction: it divides by N - 1 whatever correction says
    (var.dim, the unbiased= form, stays right)."""

    def make(orig):
        def var_correction(x, dim=None, *, correction=None, keepdim=False):
            return orig(x, dim, correction=None, keepdim=keepdim)

        return var_correction

    _wrap("var", "var_correction", make)


def _vector_norm_dtype_ignored() -> None:
    """vector_norm drops dtype=: the result (and the dim=None partials) come in the input's
    dtype, not the one asked for."""

    def make(orig):
        def vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
            return orig(x, ord, dim, keepdim, dtype=None)

        return vector_norm

    _wrap("vector_norm", None, make)


# -- 3. shapes torch allows that a builder rarely draws -----------------------------------


def _gather_input_strides_from_index_shape() -> None:
    """gather's launcher walks the input with the strides of a contiguous tensor shaped like
    the index outside ``dim`` (``restride_dim`` replaced by strides derived from the index's
    extents): right while the index spans the input outside dim (or is narrower in the leading
    dim only), wrong rows once it is narrower in a later dim."""
    import torch

    def make(orig):
        def gather(inp, dim, index, out=None, sparse_grad=False):
            if inp.ndim == index.ndim and inp.ndim > 1 and index.numel():
                d = dim % inp.ndim
                shape = [inp.shape[i] if i == d else index.shape[i] for i in range(inp.ndim)]
                if shape != list(inp.shape) and all(shape[i] <= inp.shape[i] for i in range(inp.ndim)):
                    inp = torch.as_strided(inp.contiguous(), shape, _contiguous_strides(shape))
            return orig(inp, dim, index, out=out, sparse_grad=sparse_grad)

        return gather

    _wrap_tensor_op("gather", make)


def _scatter_src_read_with_index_strides() -> None:
    """scatter reads src with the index's (contiguous) strides instead of its own
    (``src.as_strided(index.shape, src.stride())`` written with ``index.stride()``): right
    while src and index have one shape, wrong once src is larger than the index."""
    import torch

    def make(orig):
        def scatter(inp, dim, index, src, reduce=None):
            if (
                torch.is_tensor(src)
                and src.ndim == index.ndim
                and tuple(src.shape) != tuple(index.shape)
                and index.numel()
                and all(i <= s for i, s in zip(index.shape, src.shape))
            ):
                src = torch.as_strided(src.contiguous(), index.shape, _contiguous_strides(index.shape))
            return orig(inp, dim, index, src, reduce)

        return scatter

    _scatter_entries(make)


# -- 4. state across calls ----------------------------------------------------------------


def _index_select_output_buffer_reused() -> None:
    """index_select keeps one output buffer per (shape, dtype) and writes every call of that
    shape into it (a workspace cache): the tensor an earlier call returned holds the latest
    call's values."""
    buffers: dict[Any, Any] = {}

    def make(orig):
        def index_select(inp, dim, index):
            out = orig(inp, dim, index)
            key = (tuple(out.shape), out.dtype, str(out.device))
            buf = buffers.setdefault(key, out)
            if buf is not out:
                buf.data.copy_(out)
            return buf

        return index_select

    _wrap_tensor_op("index_select", make)


def _addmm_scalars_baked_per_tuning_bucket() -> None:
    """addmm's compiled kernel is cached per libtuner key (M, N, K each aligned up to 32) and
    bakes in the alpha and beta of its first launch (the scalars specialised, the cache key
    without them): a later call in the same bucket computes with the first call's scalars."""
    first: dict[Any, tuple[Any, Any]] = {}

    def key(mat1: Any, mat2: Any) -> Any:
        align = lambda v: math.ceil(v / 32) * 32  # noqa: E731 - libtuner's align32
        return align(mat1.shape[0]), align(mat2.shape[1]), align(mat1.shape[1]), mat1.dtype

    def make(orig):
        def addmm(bias, mat1, mat2, *, beta=1, alpha=1):
            beta, alpha = first.setdefault(key(mat1, mat2), (beta, alpha))
            return orig(bias, mat1, mat2, beta=beta, alpha=alpha)

        return addmm

    def make_out(orig):
        def addmm_out(bias, mat1, mat2, *, beta=1, alpha=1, out=None):
            beta, alpha = first.setdefault(key(mat1, mat2), (beta, alpha))
            return orig(bias, mat1, mat2, beta=beta, alpha=alpha, out=out)

        return addmm_out

    _wrap_tensor_op("addmm", make)
    _replace(sys.modules[ROWS.get("addmm").module], "addmm_out", make_out)


def _rms_norm_inv_rms_workspace_shared() -> None:
    """rms_norm's forward writes its 1/rms into one workspace per row count (reused, not
    allocated per call) and saves that workspace for backward: a second forward of as many
    rows before the first one's backward hands the first backward the second input's 1/rms."""
    workspaces: dict[Any, Any] = {}

    def make(orig):
        def rms_norm_forward(x, normalized_shape, weight, eps=1e-5):
            y, inv_rms = orig(x, normalized_shape, weight, eps)
            buf = workspaces.setdefault((tuple(inv_rms.shape), str(inv_rms.device)), inv_rms)
            if buf is not inv_rms:
                buf.data.copy_(inv_rms)  # a raw workspace: no autograd version bump
            return y, buf

        return rms_norm_forward

    _wrap("rms_norm", "rms_norm_forward", make)


def _m(name: str, description: str, select: str, suite: str = "reductions", apply: Any = None) -> Mutant:
    return Mutant(name, description, select, apply or _kernel_edits(name), suite=suite)


MUTANTS: tuple[Mutant, ...] = (
    # 1. arguments a default call never exercises
    _m(
        "outside3_rms_norm_eps_baked_default",
        "rms_norm's kernels (one-block and loop) add the default 1e-5 to the "
        "mean square, not eps=: any other eps normalises with 1e-5",
        "rms_norm and params",
        "layers",
    ),
    _m(
        "outside3_batch_norm_running_var_stored_biased",
        "batch_norm's training forward folds the biased batch variance into running_var (the n / (n - 1) factor lost)",
        "batch_norm and (params or affine)",
        "layers",
    ),
    _m(
        "outside3_batch_norm_eval_takes_training_branch",
        "batch_norm's kernel takes its is_train branch whatever "
        "training= says: eval normalises with the batch's statistics and updates the running stats",
        "batch_norm and params",
        "layers",
    ),
    _m(
        "outside3_layer_norm_backward_bias_grad_needs_weight_grad",
        "layer_norm_backward returns early when "
        "output_mask[1] is False: a trainable bias beside a frozen weight gets no gradient",
        "layer_norm",
        "layers",
        _layer_norm_backward_bias_grad_needs_weight_grad,
    ),
    _m(
        "outside3_addmm_int_scalars_read_as_float_bits",
        "addmm hands an integer beta / alpha (the default 1 that "
        "torch.addmm and F.linear send) to the kernel's float parameter by its bits: 1 becomes 1.4e-45",
        "addmm",
        "tensorops",
        _addmm_int_scalars_read_as_float_bits,
    ),
    _m(
        "outside3_scatter_multiply_not_recognised",
        "scatter's generated wrapper tests reduce == 'prod' for IS_MUL: "
        "reduce='multiply' falls through to the plain store",
        "scatter and not scatter_add",
        "tensorops",
        _scatter_multiply_not_recognised,
    ),
    _m(
        "outside3_var_correction_keyword_ignored",
        "var.correction (torch.var(..., correction=)) drops its "
        "correction: N - 1 whatever it says (the unbiased= form stays right)",
        "var and not var_mean",
        apply=_var_correction_keyword_ignored,
    ),
    _m(
        "outside3_vector_norm_dtype_ignored",
        "vector_norm drops dtype=: the result comes in the input's dtype",
        "vector_norm",
        apply=_vector_norm_dtype_ignored,
    ),
    # 2. values past 32 bits in int64
    _m(
        "outside3_max_dim_int64_compared_as_int32",
        "max.dim's kernel loads int64 as int32 (and pads with int32's "
        "minimum): values past 32 bits compare, and come back, truncated",
        "max_dim and dtype_rules",
    ),
    _m(
        "outside3_argmax_int64_compared_as_int32",
        "argmax's inner kernel (K == 1) compares int64 values as int32: "
        "past 32 bits the truncated value decides the index",
        "argmax and dtype_rules",
    ),
    # 3. shapes torch allows that a builder rarely draws
    _m(
        "outside3_gather_input_strides_from_index_shape",
        "gather walks the input with strides derived from the "
        "index's extents outside dim: an index narrower than the input in a non-leading dim other than dim reads the "
        "wrong elements",
        "gather",
        "tensorops",
        _gather_input_strides_from_index_shape,
    ),
    _m(
        "outside3_scatter_src_read_with_index_strides",
        "scatter reads src with the index's contiguous strides, not "
        "src's own: a src larger than the index feeds the wrong elements",
        "scatter and not scatter_add",
        "tensorops",
        _scatter_src_read_with_index_strides,
    ),
    _m(
        "outside3_scatter_add__same_shape_duplicates_last_wins",
        "scatter_add_'s same-shape fast path "
        "(scatter_add_kernel_1: self, index and src of one shape, last dim) adds by load + add + store, not "
        "atomic_add: of indices repeated within a block only the last lands",
        "scatter_add and accuracy",
        "tensorops",
    ),
    # 4. state across calls
    _m(
        "outside3_index_select_output_buffer_reused",
        "index_select writes every call of one output shape into "
        "one cached buffer: an earlier result holds the latest call's values",
        "index_select",
        "tensorops",
        _index_select_output_buffer_reused,
    ),
    _m(
        "outside3_addmm_scalars_baked_per_tuning_bucket",
        "addmm's kernel is cached per libtuner key (M, N, K "
        "aligned to 32) with the first launch's alpha and beta baked in",
        "addmm",
        "tensorops",
        _addmm_scalars_baked_per_tuning_bucket,
    ),
    _m(
        "outside3_rms_norm_inv_rms_workspace_shared",
        "rms_norm saves for backward a 1/rms workspace shared by "
        "every forward of as many rows: a later forward overwrites an earlier one's saved statistics",
        "rms_norm",
        "layers",
        _rms_norm_inv_rms_workspace_shared,
    ),
    # 5. multi-row / multi-program paths
    _m(
        "outside3_cumsum_block_sums_of_row_zero",
        "cumsum's reduce-then-scan path (K == 1, N > 16384) computes "
        "every row's block sums from row 0 (the reduce pass's row base dropped): rows past the first carry row 0's "
        "prefixes",
        "cumsum and paths",
    ),
    _m(
        "outside3_rms_norm_weight_grad_column_tile_offset_dropped",
        "rms_norm's weight-gradient kernel stores each "
        "256-wide column tile's partial sums at the first tile's columns: columns past 256 sum unwritten memory",
        "rms_norm and paths",
        "layers",
    ),
    _m(
        "outside3_mean_vec_half_program_base_without_vec",
        "mean's vectorised non-inner kernel (K >= 1024) starts "
        "program pid_k at pid_k * BLOCK_SIZE_K, not * BLOCK_SIZE_K * VEC_SIZE: right for float32 (VEC_SIZE 1), "
        "half precision leaves columns past 1152 unwritten",
        "mean and paths and not var_mean",
    ),
    # 6. half-precision matmul accumulation
    _m(
        "outside3_mm_accumulator_rounded_between_k_tiles",
        "mm's K loop rounds its float32 accumulator to the "
        "output dtype after every full K tile: half precision with K past one tile loses the partial sums' low "
        "bits",
        "mm and accumulation and not bmm and not addmm",
        "tensorops",
    ),
    _m(
        "outside3_bmm_tile_dot_out_dtype_half",
        "bmm's tl.dot returns each K tile's product in float16 (out_dtype) before it joins the float32 accumulator",
        "bmm and accumulation",
        "tensorops",
    ),
    # 7. signed zeros and special values
    _m(
        "outside3_count_nonzero_negative_zero_counted",
        "count_nonzero tests floats for nonzero by their bits (an integer compare): -0.0 counts",
        "count_nonzero and (accuracy or special_values)",
    ),
    _m(
        "outside3_cummax_loop_nan_clause_dropped",
        "cummax's loop kernel (M * K > 16) merges a block with its carry "
        "by result >= carry alone, its NaN clause dropped: a NaN never enters, the carry (or -inf) is written",
        "cummax and special_values",
    ),
)
