"""Non-inner reductions that never combine a row and a column condition in one mask.

The seed's table shows what Iluvatar's compiler gets right: 1-D masks and the per-row
loop.  These kernels walk the reduced axis in blocks of BLOCK_R *whole* rows (their 2-D
mask is the column condition broadcast over rows that all exist) and finish the last
``N % BLOCK_R`` rows one by one with 1-D masks.  No row condition exists to be dropped,
and the grid is FlagGems' own (M, cdiv(K, BLOCK_K)), so no transpose is paid.

Covered: sum and mean over a single non-inner dim of fp32/fp16/bf16 input with the
default dtype, and softmax over a non-inner dim.  Everything else takes the moved-axis
path.  ``FL_CONTRACT_FASTPATH=0`` turns it off (benchmarks, and contracts of that path).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Iterator
from typing import Any

import triton
import triton.language as tl

FLOATS = ("torch.float32", "torch.float16", "torch.bfloat16")
# A dim form the entry point does not accept (the registry's ``dim_forms``) must keep
# failing exactly as the original fails, so it never takes the fast path.
_FORM_TYPES: dict[str, tuple[type, ...]] = {"list": (list, tuple), "int": (int,)}

_off: contextvars.ContextVar[bool] = contextvars.ContextVar("fl_fastpath_off", default=False)


def enabled() -> bool:
    return not _off.get() and os.environ.get("FL_CONTRACT_FASTPATH", "1") != "0"


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Route through the moved-axis path meanwhile (benchmarks compare the two)."""
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)


def accepts(op: Any, dim: Any) -> bool:
    """The fast path takes ``op`` with this dim form (what its entry point accepts)."""
    return op.fastpath is not None and any(isinstance(dim, _FORM_TYPES[f]) for f in op.dim_forms)


@triton.jit
def _sum_rows(in_ptr, base, n_start, n_end, k, kmask, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp32 column sums of rows [n_start, n_end): whole BLOCK_R blocks under the column
    mask alone, then the remaining rows one by one with 1-D masks."""
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    acc = tl.zeros([BLOCK_R, BLOCK_K], dtype=tl.float32)
    for n0 in range(n_start, n_full, BLOCK_R):
        ptrs = in_ptr + base + (n0 + rows)[:, None].to(tl.int64) * K + k[None, :]
        acc += tl.load(ptrs, mask=kmask[None, :], other=0.0).to(tl.float32)
    tail = tl.zeros([BLOCK_K], dtype=tl.float32)
    for n in range(n_full, n_end):
        tail += tl.load(in_ptr + base + n * K + k, mask=kmask, other=0.0).to(tl.float32)
    return tl.sum(acc, axis=0) + tail


@triton.jit
def _softmax_stats_rows(in_ptr, base, n_start, n_end, k, kmask, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """Column max and sum of exp over rows [n_start, n_end), online, same row walk."""
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    m = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_K], dtype=tl.float32)
    for n0 in range(n_start, n_full, BLOCK_R):
        offs = base + (n0 + rows)[:, None].to(tl.int64) * K + k[None, :]
        x = tl.load(in_ptr + offs, mask=kmask[None, :], other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[None, :]), axis=0)
        m = m_new
    for n in range(n_full, n_end):
        x = tl.load(in_ptr + base + n * K + k, mask=kmask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    return m, s


@triton.jit
def _softmax_write_rows(out_ptr, in_ptr, base, n_start, n_end, k, kmask, K, m, inv,
                        BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    for n0 in range(n_start, n_full, BLOCK_R):
        offs = base + (n0 + rows)[:, None].to(tl.int64) * K + k[None, :]
        x = tl.load(in_ptr + offs, mask=kmask[None, :], other=0.0).to(tl.float32)
        y = tl.exp(x - m[None, :]) * inv[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=kmask[None, :])
    for n in range(n_full, n_end):
        offs = base + n * K + k
        x = tl.load(in_ptr + offs, mask=kmask, other=0.0).to(tl.float32)
        tl.store(out_ptr + offs, (tl.exp(x - m) * inv).to(out_ptr.dtype.element_ty), mask=kmask)


@triton.jit
def _columns(K, BLOCK_K: tl.constexpr):
    """This program's (m, column offsets, column mask) on FlagGems' (M, cdiv(K, BLOCK_K)) grid."""
    k = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    return tl.program_id(0).to(tl.int64), k, k < K


@triton.jit
def _split_rows(N, rows_per_split):
    """This program's split of the reduced axis: (split index, first row, end row)."""
    pid_s = tl.program_id(2)
    n_start = pid_s * rows_per_split
    return pid_s, n_start, tl.minimum(N, n_start + rows_per_split)


@triton.jit
def fl_reduce_rows_kernel(out_ptr, in_ptr, N, K, scale, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, k, kmask = _columns(K, BLOCK_K)
    total = _sum_rows(in_ptr, pid_m * N * K, 0, N, k, kmask, K, BLOCK_R, BLOCK_K) * scale
    tl.store(out_ptr + pid_m * K + k, total.to(out_ptr.dtype.element_ty), mask=kmask)


@triton.jit
def fl_reduce_rows_split_kernel(
    part_ptr, in_ptr, M, N, K, rows_per_split, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr
):
    """Partial sums of ``rows_per_split`` rows each, into part[(split, m, k)] (fp32):
    when M * cdiv(K, BLOCK_K) alone cannot fill the GPU (one wide row, dim 0)."""
    pid_m, k, kmask = _columns(K, BLOCK_K)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    part = _sum_rows(in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, BLOCK_R, BLOCK_K)
    tl.store(part_ptr + (pid_s * M + pid_m) * K + k, part, mask=kmask)


@triton.jit
def fl_softmax_rows_kernel(out_ptr, in_ptr, N, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, k, kmask = _columns(K, BLOCK_K)
    base = pid_m * N * K
    m, s = _softmax_stats_rows(in_ptr, base, 0, N, k, kmask, K, BLOCK_R, BLOCK_K)
    _softmax_write_rows(out_ptr, in_ptr, base, 0, N, k, kmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K)


@triton.jit
def fl_softmax_stats_split_kernel(
    m_ptr, s_ptr, in_ptr, M, N, K, rows_per_split, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr
):
    """Per split of rows: the column max and sum of exp, into (split, m, k)."""
    pid_m, k, kmask = _columns(K, BLOCK_K)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    m, s = _softmax_stats_rows(in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, BLOCK_R, BLOCK_K)
    out = (pid_s * M + pid_m) * K + k
    tl.store(m_ptr + out, m, mask=kmask)
    tl.store(s_ptr + out, s, mask=kmask)


@triton.jit
def fl_softmax_norm_split_kernel(out_ptr, in_ptr, m_ptr, s_ptr, M, N, K, rows_per_split, splits,
                                 BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    """Merge the splits' statistics (in split order: deterministic), normalise own rows."""
    pid_m, k, kmask = _columns(K, BLOCK_K)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    m = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)
    for i in range(0, splits):
        m = tl.maximum(m, tl.load(m_ptr + (i * M + pid_m) * K + k, mask=kmask, other=float("-inf")))
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    s = tl.zeros([BLOCK_K], dtype=tl.float32)
    for i in range(0, splits):
        stat = (i * M + pid_m) * K + k
        mi = tl.load(m_ptr + stat, mask=kmask, other=float("-inf"))
        s += tl.load(s_ptr + stat, mask=kmask, other=0.0) * tl.exp(mi - m_safe)
    _softmax_write_rows(out_ptr, in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K)


def _sm_count(device: Any) -> int:
    import torch

    try:
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    except Exception:
        return 4


def tiles(M: int, N: int, K: int, sm_count: int, elem: int = 4, kind: str = "reduce") -> tuple[int, int, int, int]:
    """(BLOCK_R, BLOCK_K, num_warps, splits), fitted on an H200 (benchmarks/tune_fastpath.py).

    Sums take up to 1024 columns, narrowed while the grid has less than two waves; softmax
    a row chunk of 2 KB (512 fp32 / 1024 half columns), narrowed below one wave; when even 128 columns leave SMs idle (one wide row, dim 0)
    the rows are split into chunks whose partial results a second launch combines in a
    fixed order (deterministic, no atomics).  Tiles of whole rows: 4K elements for sums,
    8K (fp32) or 16K (half) for softmax."""
    block_k = min(1024, triton.next_power_of_2(K) if kind == "reduce" else 2048 // elem, triton.next_power_of_2(K))
    splits = 1
    if M * triton.cdiv(K, 128) < sm_count and N >= 256:
        if kind == "reduce":
            block_k, waves = 128, 8
        else:
            block_k, waves = min(block_k, 256 if elem >= 4 else 1024), (4 if elem >= 4 else 2)
        splits = max(1, min(triton.cdiv(waves * sm_count, M * triton.cdiv(K, block_k)), N // 64))
    else:
        while block_k > 128 and M * triton.cdiv(K, block_k) < (2 if kind == "reduce" else 1) * sm_count:
            block_k //= 2
    budget = 4096 if kind == "reduce" else (8192 if elem >= 4 else 16384)
    block_r = max(1, min(triton.next_power_of_2(max(N, 1)), budget // block_k, 64))
    if kind == "reduce" and splits > 1:
        block_r = min(block_r, 4)
    if block_r > N:  # never a partial row block: N < BLOCK_R rows go through the per-row loop
        block_r = 1 << (max(N, 1).bit_length() - 1)
    if kind == "reduce":
        warps = 8 if splits > 1 or (block_r * block_k >= 4096 and N >= 2 * block_r) else 4
    else:
        warps = 4
    return block_r, block_k, warps, splits


def _chunk(N: int, splits: int, block_r: int) -> int:
    """Rows per split: whole BLOCK_R blocks, and a multiple of 64 so Triton specialises the
    argument as 16-divisible (measured: 244-row chunks ran 3.7x slower than 256 on bf16)."""
    align = max(block_r, 64)
    return triton.cdiv(triton.cdiv(N, splits), align) * align


def _mnk(shape: tuple[int, ...], d: int) -> tuple[int, int, int]:
    return math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])


def reduce_dim(x: Any, d: int, keepdim: bool, mean: bool) -> Any:
    """sum/mean of a contiguous float tensor over non-inner dim ``d``, FlagGems' dtype rule."""
    import torch

    x = x.contiguous()
    M, N, K = _mnk(tuple(x.shape), d)
    shape = list(x.shape)
    shape[d] = 1
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    block_r, block_k, warps, splits = tiles(M, N, K, _sm_count(x.device), x.element_size())
    scale = 1.0 / N if mean else 1.0
    if splits == 1:
        grid = (M, triton.cdiv(K, block_k))
        fl_reduce_rows_kernel[grid](out, x, N, K, scale, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=warps)
    else:
        rows_per_split = _chunk(N, splits, block_r)
        splits = triton.cdiv(N, rows_per_split)
        part = torch.empty((splits, M, K), dtype=torch.float32, device=x.device)
        grid = (M, triton.cdiv(K, block_k), splits)
        fl_reduce_rows_split_kernel[grid](
            part, x, M, N, K, rows_per_split, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=warps
        )
        r2, k2, w2, _ = tiles(1, splits, M * K, _sm_count(x.device))  # partials are fp32
        fl_reduce_rows_kernel[(1, triton.cdiv(M * K, k2))](
            out, part, splits, M * K, scale, BLOCK_R=r2, BLOCK_K=k2, num_warps=w2
        )
    return out if keepdim else out.squeeze(d)


def softmax_dim(x: Any, d: int, out_dtype: Any = None) -> Any:
    import torch

    x = x.contiguous()
    M, N, K = _mnk(tuple(x.shape), d)
    out = torch.empty_like(x, dtype=out_dtype or x.dtype)
    block_r, block_k, warps, splits = tiles(M, N, K, _sm_count(x.device), x.element_size(), "softmax")
    if splits == 1:
        grid = (M, triton.cdiv(K, block_k))
        fl_softmax_rows_kernel[grid](out, x, N, K, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=warps)
        return out
    rows_per_split = _chunk(N, splits, block_r)
    splits = triton.cdiv(N, rows_per_split)
    stats_m = torch.empty((splits, M, K), dtype=torch.float32, device=x.device)
    stats_s = torch.empty_like(stats_m)
    grid = (M, triton.cdiv(K, block_k), splits)
    fl_softmax_stats_split_kernel[grid](stats_m, stats_s, x, M, N, K, rows_per_split,
                                        BLOCK_R=block_r, BLOCK_K=block_k, num_warps=warps)  # fmt: skip
    fl_softmax_norm_split_kernel[grid](out, x, stats_m, stats_s, M, N, K, rows_per_split, splits,
                                       BLOCK_R=block_r, BLOCK_K=block_k, num_warps=warps)  # fmt: skip
    return out


def try_fast(op: Any, x: Any, bound: dict[str, Any], d: int) -> Any:
    """The fast path's result for this call of ``op``'s entry point, or NotImplemented."""
    if not enabled() or not accepts(op, bound.get("dim")) or str(x.dtype) not in FLOATS:
        return NotImplemented
    if op.fastpath in ("sum", "mean"):
        if bound.get("dtype") not in (None, x.dtype):
            return NotImplemented
        return reduce_dim(x, d, bool(bound.get("keepdim", False)), mean=op.fastpath == "mean")
    if op.fastpath == "softmax":
        import torch

        return softmax_dim(x, d, torch.float32 if bound.get("half_to_float") else None)
    return NotImplemented
