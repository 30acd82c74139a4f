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

from .tilemodel import Device, cdiv, device_info, tiles

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
def _sum_rows(in_ptr, base, n_start, n_end, k, kmask, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
              LOG_R: tl.constexpr):  # fmt: skip
    """fp32 column sums of rows [n_start, n_end): whole BLOCK_R blocks under the column
    mask alone, then the rest in whole blocks of BLOCK_R/2, /4, ... 1 rows (its binary
    digits: at most LOG_R more steps, never a row mask)."""
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    acc = tl.zeros([BLOCK_R, BLOCK_K], dtype=tl.float32)
    for n0 in range(n_start, n_full, BLOCK_R):
        ptrs = in_ptr + base + (n0 + rows)[:, None].to(tl.int64) * K + k[None, :]
        acc += tl.load(ptrs, mask=kmask[None, :], other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            ptrs = in_ptr + base + (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + k[None, :]
            total += tl.sum(tl.load(ptrs, mask=kmask[None, :], other=0.0).to(tl.float32), axis=0)
            n += BLOCK_R >> level
    return total


@triton.jit
def _softmax_stats_rows(in_ptr, base, n_start, n_end, k, kmask, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
                        LOG_R: tl.constexpr):  # fmt: skip
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
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            offs = base + (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + k[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[None, :]), axis=0)
            m = m_new
            n += BLOCK_R >> level
    return m, s


@triton.jit
def _softmax_write_rows(out_ptr, in_ptr, base, n_start, n_end, k, kmask, K, m, inv,
                        BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, LOG_R: tl.constexpr):  # fmt: skip
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    for n0 in range(n_start, n_full, BLOCK_R):
        offs = base + (n0 + rows)[:, None].to(tl.int64) * K + k[None, :]
        x = tl.load(in_ptr + offs, mask=kmask[None, :], other=0.0).to(tl.float32)
        y = tl.exp(x - m[None, :]) * inv[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=kmask[None, :])
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            offs = base + (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + k[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=0.0).to(tl.float32)
            y = tl.exp(x - m[None, :]) * inv[None, :]
            tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=kmask[None, :])
            n += BLOCK_R >> level


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
def fl_reduce_rows_kernel(out_ptr, in_ptr, N, K, scale, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
                          LOG_R: tl.constexpr):  # fmt: skip
    pid_m, k, kmask = _columns(K, BLOCK_K)
    total = _sum_rows(in_ptr, pid_m * N * K, 0, N, k, kmask, K, BLOCK_R, BLOCK_K, LOG_R) * scale
    tl.store(out_ptr + pid_m * K + k, total.to(out_ptr.dtype.element_ty), mask=kmask)


@triton.jit
def fl_reduce_rows_split_kernel(
    part_ptr, in_ptr, M, N, K, rows_per_split, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, LOG_R: tl.constexpr
):
    """Partial sums of ``rows_per_split`` rows each, into part[(split, m, k)] (fp32):
    when M * cdiv(K, BLOCK_K) alone cannot fill the GPU (one wide row, dim 0)."""
    pid_m, k, kmask = _columns(K, BLOCK_K)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    part = _sum_rows(in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, BLOCK_R, BLOCK_K, LOG_R)
    tl.store(part_ptr + (pid_s * M + pid_m) * K + k, part, mask=kmask)


@triton.jit
def fl_softmax_rows_kernel(out_ptr, in_ptr, N, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, LOG_R: tl.constexpr):
    pid_m, k, kmask = _columns(K, BLOCK_K)
    base = pid_m * N * K
    m, s = _softmax_stats_rows(in_ptr, base, 0, N, k, kmask, K, BLOCK_R, BLOCK_K, LOG_R)
    _softmax_write_rows(out_ptr, in_ptr, base, 0, N, k, kmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K, LOG_R)


@triton.jit
def fl_softmax_stats_split_kernel(
    m_ptr, s_ptr, in_ptr, M, N, K, rows_per_split, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, LOG_R: tl.constexpr
):
    """Per split of rows: the column max and sum of exp, into (split, m, k)."""
    pid_m, k, kmask = _columns(K, BLOCK_K)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    m, s = _softmax_stats_rows(in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, BLOCK_R, BLOCK_K, LOG_R)
    out = (pid_s * M + pid_m) * K + k
    tl.store(m_ptr + out, m, mask=kmask)
    tl.store(s_ptr + out, s, mask=kmask)


@triton.jit
def fl_softmax_norm_split_kernel(out_ptr, in_ptr, m_ptr, s_ptr, M, N, K, rows_per_split, splits,
                                 BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, LOG_R: tl.constexpr):  # fmt: skip
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
    _softmax_write_rows(out_ptr, in_ptr, pid_m * N * K, n_start, n_end, k, kmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K, LOG_R)


def _device(x: Any) -> Device:
    return device_info(x.device.type, x.device.index or 0)


def _log2(block_r: int) -> int:
    return block_r.bit_length() - 1


_LAUNCHERS: dict[int, Any] = {}


def _launch(kernel: Any) -> Any:
    """FlagGems' own launch cache (``libentry``) around our kernel where FlagGems has it:
    Triton's generic launcher spends tens of microseconds of Python on each call (measured
    on an H200: 35 us against FlagGems' 4 us), more than a small reduction takes."""
    if not isinstance(kernel, triton.runtime.JITFunction):
        return kernel  # the interpreter's functions, or a test's launch spy: launched as they are
    if id(kernel) not in _LAUNCHERS:
        try:
            from flag_gems.utils import libentry

            _LAUNCHERS[id(kernel)] = libentry()(kernel)
        except Exception:
            _LAUNCHERS[id(kernel)] = kernel
    return _LAUNCHERS[id(kernel)]


def _chunk(N: int, splits: int, block_r: int) -> int:
    """Rows per split: whole BLOCK_R blocks, and a multiple of 64 so Triton specialises the
    argument as 16-divisible (measured: 244-row chunks ran 3.7x slower than 256 on bf16)."""
    align = max(block_r, 64)
    return cdiv(cdiv(N, splits), align) * align


def _mnk(shape: tuple[int, ...], d: int) -> tuple[int, int, int]:
    return math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])


def reduce_dim(x: Any, d: int, keepdim: bool, mean: bool) -> Any:
    """sum/mean of a float tensor over non-inner dim ``d``, FlagGems' dtype rule; NotImplemented
    where no plan's grid is launchable (``tilemodel.launchable``)."""
    import torch

    M, N, K = _mnk(tuple(x.shape), d)
    device = _device(x)
    plan = tiles(M, N, K, device, x.element_size())
    if plan is None:  # no grid the device launches: the moved axis
        return NotImplemented
    x = x.contiguous()
    shape = list(x.shape)
    shape[d] = 1
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    block_r, block_k, warps, splits = plan.block_r, plan.block_k, plan.warps, plan.splits
    scale = 1.0 / N if mean else 1.0
    if splits == 1:
        grid = (M, cdiv(K, block_k))
        _launch(fl_reduce_rows_kernel)[grid](out, x, N, K, scale, BLOCK_R=block_r, BLOCK_K=block_k,
                                             LOG_R=_log2(block_r), num_warps=warps)  # fmt: skip
    else:
        rows_per_split = _chunk(N, splits, block_r)
        splits = cdiv(N, rows_per_split)
        part = torch.empty((splits, M, K), dtype=torch.float32, device=x.device)
        grid = (M, cdiv(K, block_k), splits)
        _launch(fl_reduce_rows_split_kernel)[grid](
            part, x, M, N, K, rows_per_split, BLOCK_R=block_r, BLOCK_K=block_k, LOG_R=_log2(block_r), num_warps=warps
        )
        second = tiles(1, splits, M * K, device)  # partials are fp32
        _launch(fl_reduce_rows_kernel)[(1, cdiv(M * K, second.block_k))](
            out, part, splits, M * K, scale, BLOCK_R=second.block_r, BLOCK_K=second.block_k,
            LOG_R=_log2(second.block_r), num_warps=second.warps,
        )
    return out if keepdim else out.squeeze(d)


def softmax_dim(x: Any, d: int, out_dtype: Any = None) -> Any:
    import torch

    M, N, K = _mnk(tuple(x.shape), d)
    plan = tiles(M, N, K, _device(x), x.element_size(), "softmax")
    if plan is None:  # no grid the device launches: the moved axis
        return NotImplemented
    x = x.contiguous()
    out = torch.empty_like(x, dtype=out_dtype or x.dtype)
    block_r, block_k, warps, splits = plan.block_r, plan.block_k, plan.warps, plan.splits
    if splits == 1:
        grid = (M, cdiv(K, block_k))
        _launch(fl_softmax_rows_kernel)[grid](out, x, N, K, BLOCK_R=block_r, BLOCK_K=block_k, LOG_R=_log2(block_r),
                                              num_warps=warps)  # fmt: skip
        return out
    rows_per_split = _chunk(N, splits, block_r)
    splits = cdiv(N, rows_per_split)
    stats_m = torch.empty((splits, M, K), dtype=torch.float32, device=x.device)
    stats_s = torch.empty_like(stats_m)
    grid = (M, cdiv(K, block_k), splits)
    _launch(fl_softmax_stats_split_kernel)[grid](stats_m, stats_s, x, M, N, K, rows_per_split,
                                        BLOCK_R=block_r, BLOCK_K=block_k, LOG_R=_log2(block_r), num_warps=warps)  # fmt: skip
    _launch(fl_softmax_norm_split_kernel)[grid](out, x, stats_m, stats_s, M, N, K, rows_per_split, splits,
                                       BLOCK_R=block_r, BLOCK_K=block_k, LOG_R=_log2(block_r), num_warps=warps)  # fmt: skip
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
