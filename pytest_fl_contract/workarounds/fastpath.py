"""Non-inner reductions that never combine a row and a column condition in one mask.

The seed's table shows what Iluvatar's compiler gets right: 1-D masks and the per-row
loop.  These kernels walk the reduced axis in blocks of BLOCK_R *whole* rows (their 2-D
mask is the column condition broadcast over rows that all exist) and finish the last
``N % BLOCK_R`` rows in smaller whole blocks.  No row condition exists to be dropped, and
no transpose is paid.  A program's columns are a block of one m (contiguous: vector loads)
or, where K is small, BLOCK_K consecutive (m, k) pairs of the flattened (M, K) output, so a
program takes several m at once (each m's rows are one contiguous run): a (10**7, 12, 2)
sum is ten thousand programs reading long runs, not ten million reading 8 bytes each.
Columns go on grid axis x, splits of the rows on z (``_columns``).  Where K is tiny
(``tilemodel.pick``: at most 16, and long runs per m) a slab kernel reads each m's rows as one
contiguous run under 1-D masks alone and reduces per k in registers (below).

Covered: sum and mean over a single non-inner dim of fp32/fp16/bf16 input with the
default dtype, and softmax over a non-inner dim.  Everything else takes the moved-axis
path.  ``FL_CONTRACT_FASTPATH=0`` (read when the fast path is first used) turns it off.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import os
import re
from collections.abc import Iterator
from typing import Any

import torch
import triton
import triton.language as tl

from ..util import mnk
from .tilemodel import Device, Plan, SlabPlan, device_info, pick, programs, second_plan, slab_rows, split_rows

FLOATS = ("torch.float32", "torch.float16", "torch.bfloat16")
# A dim form the entry point does not accept (the registry's ``dim_forms``) must keep
# failing exactly as the original fails, so it never takes the fast path.
_FORM_TYPES: dict[str, tuple[type, ...]] = {"list": (list, tuple), "int": (int,)}

_off: contextvars.ContextVar[bool] = contextvars.ContextVar("fl_fastpath_off", default=False)


_ON = os.environ.get("FL_CONTRACT_FASTPATH", "1") != "0"  # read once: on every call it cost a microsecond


def enabled() -> bool:
    return _ON and not _off.get()


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
def _sum_rows(
    in_ptr,
    n_start,
    n_end,
    col,
    kmask,
    K,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    STAGES: tl.constexpr,
    UNROLL: tl.constexpr,
):
    """fp32 column sums of rows [n_start, n_end) (``col``: each column's offset of row 0,
    from ``_columns``): whole BLOCK_R blocks under the column mask alone, then the rest in whole blocks of BLOCK_R/2, /4, ... 1 rows (its binary
    digits: at most LOG_R more steps, never a row mask)."""
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    acc = tl.zeros([BLOCK_R, BLOCK_K], dtype=tl.float32)
    for n0 in tl.range(n_start, n_full, BLOCK_R, num_stages=STAGES, loop_unroll_factor=UNROLL):
        ptrs = in_ptr + (n0 + rows)[:, None].to(tl.int64) * K + col[None, :]
        acc += tl.load(ptrs, mask=kmask[None, :], other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            ptrs = in_ptr + (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + col[None, :]
            total += tl.sum(tl.load(ptrs, mask=kmask[None, :], other=0.0).to(tl.float32), axis=0)
            n += BLOCK_R >> level
    return total


@triton.jit
def _fold_rows(x, m, s):
    """A block of rows folded into the column max ``m`` and sum of exp ``s``."""
    m_new = tl.maximum(m, tl.max(x, axis=0))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    return m_new, s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[None, :]), axis=0)


@triton.jit
def _softmax_stats_rows(
    in_ptr,
    n_start,
    n_end,
    col,
    kmask,
    K,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    STAGES: tl.constexpr,
    UNROLL: tl.constexpr,
):
    """Column max and sum of exp over rows [n_start, n_end), online, same row walk.  Tiles
    of 32 columns or more keep a max and a sum per element and fold the rows once, at the
    end: folding across rows at every step (across threads, often across warps) made
    half-precision tiles 3 - 7x slower than their bytes on an H200.  Narrower tiles (many
    rows, few columns) fold at every step, which ran 2.5x faster there.  The tail's few
    smaller blocks fold as they come."""
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    m = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_K], dtype=tl.float32)
    if BLOCK_K >= 32:
        mt = tl.full([BLOCK_R, BLOCK_K], float("-inf"), dtype=tl.float32)
        st = tl.zeros([BLOCK_R, BLOCK_K], dtype=tl.float32)
        for n0 in tl.range(n_start, n_full, BLOCK_R, num_stages=STAGES, loop_unroll_factor=UNROLL):
            offs = (n0 + rows)[:, None].to(tl.int64) * K + col[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(mt, x)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            st = st * tl.exp(mt - m_safe) + tl.exp(x - m_safe)
            mt = m_new
        m = tl.max(mt, axis=0)
        m_safe = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(st * tl.exp(mt - m_safe[None, :]), axis=0)
    else:
        for n0 in tl.range(n_start, n_full, BLOCK_R, num_stages=STAGES, loop_unroll_factor=UNROLL):
            offs = (n0 + rows)[:, None].to(tl.int64) * K + col[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=float("-inf")).to(tl.float32)
            m, s = _fold_rows(x, m, s)
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            offs = (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + col[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=float("-inf")).to(tl.float32)
            m, s = _fold_rows(x, m, s)
            n += BLOCK_R >> level
    return m, s


@triton.jit
def _softmax_write_rows(
    out_ptr,
    in_ptr,
    n_start,
    n_end,
    col,
    kmask,
    K,
    m,
    inv,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    STAGES: tl.constexpr,
    UNROLL: tl.constexpr,
):
    rows = tl.arange(0, BLOCK_R)
    n_full = n_start + ((n_end - n_start) // BLOCK_R) * BLOCK_R
    for n0 in tl.range(n_start, n_full, BLOCK_R, num_stages=STAGES, loop_unroll_factor=UNROLL):
        offs = (n0 + rows)[:, None].to(tl.int64) * K + col[None, :]
        x = tl.load(in_ptr + offs, mask=kmask[None, :], other=0.0).to(tl.float32)
        y = tl.exp(x - m[None, :]) * inv[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=kmask[None, :])
    n = n_full
    for level in tl.static_range(1, LOG_R + 1):
        if n + (BLOCK_R >> level) <= n_end:
            offs = (n + tl.arange(0, BLOCK_R >> level))[:, None].to(tl.int64) * K + col[None, :]
            x = tl.load(in_ptr + offs, mask=kmask[None, :], other=0.0).to(tl.float32)
            y = tl.exp(x - m[None, :]) * inv[None, :]
            tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=kmask[None, :])
            n += BLOCK_R >> level


@triton.jit
def _aligned(K, K_DIV: tl.constexpr):
    """K, rebuilt from the plan's divisor of it (``VECTOR``): Triton proves a row's start
    aligned by arithmetic, and loads the row as vectors."""
    if K_DIV > 1:
        K = (K // K_DIV) * K_DIV
    return K


@triton.jit
def _columns(MK, N, K, BLOCK_K: tl.constexpr, FLAT: tl.constexpr):
    """This program's output columns c = m * K + k (int64), where each column's row 0 lies
    in the input (m * N * K + k), and the column mask: one condition on columns, broadcast
    over rows, never combined with a row condition.  FLAT: BLOCK_K consecutive columns of
    the flattened (M, K) output, which may span several m (K < BLOCK_K: each m's rows are
    one contiguous run); else cdiv(K, BLOCK_K) programs per m, whose columns Triton can
    prove contiguous and load as vectors (measured: softmax ran 3x slower without)."""
    pid = tl.program_id(0).to(tl.int64)
    if FLAT:
        c = pid * BLOCK_K + tl.arange(0, BLOCK_K)
        return c, (c // K) * N * K + c % K, c < MK
    blocks = tl.cdiv(K, BLOCK_K)
    m = pid // blocks
    k = (pid - m * blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
    return m * K + k, m * N * K + k, k < K


@triton.jit
def _split_rows(N, rows_per_split):
    """This program's split of the reduced axis: (split index, first row, end row)."""
    pid_s = tl.program_id(2).to(tl.int64)  # pid_s * M * K indexes the partials: past 2**31 on large inputs
    n_start = pid_s * rows_per_split
    return pid_s, n_start, tl.minimum(N, n_start + rows_per_split)


@triton.jit
def fl_reduce_rows_kernel(
    out_ptr,
    in_ptr,
    MK,
    N,
    K,
    scale,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    FLAT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
    K_DIV: tl.constexpr = 1,
):
    K = _aligned(K, K_DIV)
    c, col, cmask = _columns(MK, N, K, BLOCK_K, FLAT)
    total = _sum_rows(in_ptr, 0, N, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL) * scale
    tl.store(out_ptr + c, total.to(out_ptr.dtype.element_ty), mask=cmask)


@triton.jit
def fl_reduce_rows_split_kernel(
    part_ptr,
    in_ptr,
    MK,
    N,
    K,
    rows_per_split,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    FLAT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
    K_DIV: tl.constexpr = 1,
):
    """Partial sums of ``rows_per_split`` rows each, into part[(split, m, k)] (fp32):
    when cdiv(M * K, BLOCK_K) programs alone cannot fill the GPU (few, long columns)."""
    K = _aligned(K, K_DIV)
    c, col, cmask = _columns(MK, N, K, BLOCK_K, FLAT)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    part = _sum_rows(in_ptr, n_start, n_end, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL)
    tl.store(part_ptr + pid_s * MK + c, part, mask=cmask)


@triton.jit
def fl_softmax_rows_kernel(
    out_ptr,
    in_ptr,
    MK,
    N,
    K,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    FLAT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
    K_DIV: tl.constexpr = 1,
):
    K = _aligned(K, K_DIV)
    c, col, cmask = _columns(MK, N, K, BLOCK_K, FLAT)
    m, s = _softmax_stats_rows(in_ptr, 0, N, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL)
    _softmax_write_rows(out_ptr, in_ptr, 0, N, col, cmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL)


@triton.jit
def fl_softmax_stats_split_kernel(
    m_ptr,
    s_ptr,
    in_ptr,
    MK,
    N,
    K,
    rows_per_split,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    FLAT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
    K_DIV: tl.constexpr = 1,
):
    """Per split of rows: the column max and sum of exp, into (split, m, k)."""
    K = _aligned(K, K_DIV)
    c, col, cmask = _columns(MK, N, K, BLOCK_K, FLAT)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    m, s = _softmax_stats_rows(in_ptr, n_start, n_end, col, cmask, K, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL)
    tl.store(m_ptr + pid_s * MK + c, m, mask=cmask)
    tl.store(s_ptr + pid_s * MK + c, s, mask=cmask)


@triton.jit
def fl_softmax_norm_split_kernel(
    out_ptr,
    in_ptr,
    m_ptr,
    s_ptr,
    MK,
    N,
    K,
    rows_per_split,
    splits,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOG_R: tl.constexpr,
    FLAT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
    K_DIV: tl.constexpr = 1,
):
    """Merge the splits' statistics (in split order: deterministic), normalise own rows."""
    K = _aligned(K, K_DIV)
    c, col, cmask = _columns(MK, N, K, BLOCK_K, FLAT)
    pid_s, n_start, n_end = _split_rows(N, rows_per_split)
    m = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)
    stat = c  # int64: split i's statistics of column c at i * MK + c
    for _ in range(0, splits):
        m = tl.maximum(m, tl.load(m_ptr + stat, mask=cmask, other=float("-inf")))
        stat += MK
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    s = tl.zeros([BLOCK_K], dtype=tl.float32)
    stat = c
    for _ in range(0, splits):
        mi = tl.load(m_ptr + stat, mask=cmask, other=float("-inf"))
        s += tl.load(s_ptr + stat, mask=cmask, other=0.0) * tl.exp(mi - m_safe)
        stat += MK
    _softmax_write_rows(
        out_ptr, in_ptr, n_start, n_end, col, cmask, K, m, 1.0 / s, BLOCK_R, BLOCK_K, LOG_R, STAGES, UNROLL
    )


# Tiny K (``tilemodel.slabs``): a program reads its m's rows [n_start, n_end) as
# one contiguous run of (n_end - n_start) * K elements, BLOCK at a time, under a 1-D mask
# (lanes, and the run's end): no row condition exists, no lane idles on a padded k, and the
# loads are contiguous whatever K is.  Lane j of a step always holds k = j % K (a step is a
# whole number of rows, STEP = (BLOCK // K) * K elements); its sums (or max and sum of exp)
# stay per lane and fold per k once, at the end.  K is a constexpr: at most SLAB_K_MAX.


@triton.jit
def _slab(N, K_C: tl.constexpr, rows_per_split, SPLIT: tl.constexpr):
    """This program's run: (split index, first element, end element), int64."""
    pid_m = tl.program_id(0).to(tl.int64)
    if SPLIT:
        pid_s = tl.program_id(2).to(tl.int64)
        n_start = pid_s * rows_per_split
        n_end = tl.minimum(N, n_start + rows_per_split)
    else:
        pid_s = pid_m * 0
        n_start = pid_m * 0
        n_end = N + pid_m * 0
    base = pid_m * N * K_C
    return pid_s, base + n_start * K_C, base + n_end * K_C


@triton.jit
def _slab_sums(in_ptr, start, end, K_C: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr, UNROLL: tl.constexpr):
    """Per-lane fp32 sums over the run [start, end): lane j holds k = j % K_C."""
    STEP: tl.constexpr = (BLOCK // K_C) * K_C
    j = tl.arange(0, BLOCK)
    lanes = j < STEP
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    steps = (end - start) // STEP
    full = start + steps * STEP
    for i in tl.range(
        0, steps, num_stages=STAGES, loop_unroll_factor=UNROLL
    ):  # a step count, not addresses: the interpreter's range yields Python ints
        acc += tl.load(in_ptr + (start + i * STEP) + j, mask=lanes, other=0.0).to(tl.float32)
    acc += tl.load(in_ptr + full + j, mask=lanes & (full + j < end), other=0.0).to(tl.float32)
    return acc


@triton.jit
def fl_slab_sum_kernel(
    out_ptr,
    in_ptr,
    N,
    MK,
    rows_per_split,
    scale,
    K_C: tl.constexpr,
    BLOCK: tl.constexpr,
    SPLIT: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
):
    """Sums (times ``scale``) of one m's rows per k into out[m, k]; SPLIT: fp32 partials of
    ``rows_per_split`` rows into part[(split, m, k)], reduced by ``fl_reduce_rows_kernel``."""
    pid_s, start, end = _slab(N, K_C, rows_per_split, SPLIT)
    acc = _slab_sums(in_ptr, start, end, K_C, BLOCK, STAGES, UNROLL)
    kj = tl.arange(0, BLOCK) % K_C
    first = pid_s * MK + tl.program_id(0).to(tl.int64) * K_C
    for kk in tl.static_range(K_C):
        total = tl.sum(tl.where(kj == kk, acc, 0.0), axis=0)
        if SPLIT:
            tl.store(out_ptr + first + kk, total)
        else:
            tl.store(out_ptr + first + kk, (total * scale).to(out_ptr.dtype.element_ty))


@triton.jit
def _slab_stats(in_ptr, start, end, K_C: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr, UNROLL: tl.constexpr):
    """Per-lane running max and sum of exp over the run (an element at a time: no fold
    across threads in the loop)."""
    STEP: tl.constexpr = (BLOCK // K_C) * K_C
    j = tl.arange(0, BLOCK)
    lanes = j < STEP
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.range(0, (end - start) // STEP + 1, num_stages=STAGES, loop_unroll_factor=UNROLL):
        p = start + i * STEP
        x = tl.load(in_ptr + p + j, mask=lanes & (p + j < end), other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    return m, s


@triton.jit
def _slab_fold(m, s, K_C: tl.constexpr, BLOCK: tl.constexpr):
    """The lanes' statistics folded per k and handed back to every lane of that k."""
    kj = tl.arange(0, BLOCK) % K_C
    lane_m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    lane_s = tl.zeros([BLOCK], dtype=tl.float32)
    for kk in tl.static_range(K_C):
        mine = kj == kk
        mk = tl.max(tl.where(mine, m, float("-inf")), axis=0)
        mk_safe = tl.where(mk == float("-inf"), 0.0, mk)
        sk = tl.sum(tl.where(mine, s * tl.exp(m - mk_safe), 0.0), axis=0)
        lane_m = tl.where(mine, mk, lane_m)
        lane_s = tl.where(mine, sk, lane_s)
    return lane_m, lane_s


@triton.jit
def _slab_write(
    out_ptr,
    in_ptr,
    start,
    end,
    lane_m,
    inv,
    K_C: tl.constexpr,
    BLOCK: tl.constexpr,
    STAGES: tl.constexpr,
    UNROLL: tl.constexpr,
):
    STEP: tl.constexpr = (BLOCK // K_C) * K_C
    j = tl.arange(0, BLOCK)
    lanes = j < STEP
    for i in tl.range(0, (end - start) // STEP + 1, num_stages=STAGES, loop_unroll_factor=UNROLL):
        p = start + i * STEP
        keep = lanes & (p + j < end)
        x = tl.load(in_ptr + p + j, mask=keep, other=0.0).to(tl.float32)
        tl.store(out_ptr + p + j, (tl.exp(x - lane_m) * inv).to(out_ptr.dtype.element_ty), mask=keep)


@triton.jit
def fl_slab_softmax_kernel(
    out_ptr, in_ptr, N, K_C: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr = None, UNROLL: tl.constexpr = None
):
    _, start, end = _slab(N, K_C, N, False)
    m, s = _slab_stats(in_ptr, start, end, K_C, BLOCK, STAGES, UNROLL)
    lane_m, lane_s = _slab_fold(m, s, K_C, BLOCK)
    _slab_write(out_ptr, in_ptr, start, end, lane_m, 1.0 / lane_s, K_C, BLOCK, STAGES, UNROLL)


@triton.jit
def fl_slab_softmax_stats_kernel(
    m_ptr,
    s_ptr,
    in_ptr,
    N,
    MK,
    rows_per_split,
    K_C: tl.constexpr,
    BLOCK: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
):
    """Per split of rows: each k's max and sum of exp, into (split, m, k)."""
    pid_s, start, end = _slab(N, K_C, rows_per_split, True)
    m, s = _slab_stats(in_ptr, start, end, K_C, BLOCK, STAGES, UNROLL)
    lane_m, lane_s = _slab_fold(m, s, K_C, BLOCK)
    j = tl.arange(0, BLOCK)
    first = pid_s * MK + tl.program_id(0).to(tl.int64) * K_C
    tl.store(m_ptr + first + j, lane_m, mask=j < K_C)  # lanes 0 .. K-1 hold k = 0 .. K-1
    tl.store(s_ptr + first + j, lane_s, mask=j < K_C)


@triton.jit
def fl_slab_softmax_norm_kernel(
    out_ptr,
    in_ptr,
    m_ptr,
    s_ptr,
    N,
    MK,
    rows_per_split,
    splits,
    K_C: tl.constexpr,
    BLOCK: tl.constexpr,
    STAGES: tl.constexpr = None,
    UNROLL: tl.constexpr = None,
):
    """Merge the splits' statistics (in split order: deterministic), normalise own rows."""
    _, start, end = _slab(N, K_C, rows_per_split, True)
    j = tl.arange(0, BLOCK)
    stat = tl.program_id(0).to(tl.int64) * K_C + j % K_C  # lane j: split i's statistics of its k at i * MK + stat
    lane_m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for _ in range(0, splits):
        lane_m = tl.maximum(lane_m, tl.load(m_ptr + stat))
        stat += MK
    m_safe = tl.where(lane_m == float("-inf"), 0.0, lane_m)
    lane_s = tl.zeros([BLOCK], dtype=tl.float32)
    stat = tl.program_id(0).to(tl.int64) * K_C + j % K_C
    for _ in range(0, splits):
        lane_s += tl.load(s_ptr + stat) * tl.exp(tl.load(m_ptr + stat) - m_safe)
        stat += MK
    _slab_write(out_ptr, in_ptr, start, end, lane_m, 1.0 / lane_s, K_C, BLOCK, STAGES, UNROLL)


def _log2(block_r: int) -> int:
    return block_r.bit_length() - 1


_LAUNCHERS: dict[int, Any] = {}


def _launch(kernel: Any) -> Any:
    """FlagGems' own launch cache (``libentry``) around our kernel where FlagGems has it:
    Triton's generic launcher spends tens of microseconds of Python on each call (measured
    on an H200: 35 us against FlagGems' 4 us), more than a small reduction takes."""
    launcher = _LAUNCHERS.get(id(kernel))
    if launcher is not None:
        return launcher
    if not isinstance(kernel, triton.runtime.JITFunction):
        return kernel  # the interpreter's functions, or a test's launch spy: launched as they are
    try:
        from flag_gems.utils import libentry

        launcher = libentry()(kernel)
    except Exception:
        launcher = kernel
    _LAUNCHERS[id(kernel)] = launcher
    return launcher


DIRECT = True  # launch compiled kernels directly (``_Site``); benchmarks turn it off to compare
_KERNELS = globals()  # kernels are looked up by name at each launch: a test's spy or a mutant replaces them
_TRITON = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2])


class _Site:
    """One launch of a planned call: kernel (by name), grid and constexprs fixed at plan time.

    After its first launch through the launch cache (``_launch``) a site launches Triton's
    compiled kernel itself, one per alignment of its tensors' addresses (what Triton
    specialises a pointer on; the plan fixes every other argument).  FlagGems' launch cache
    walks every argument in Python on every call, which was most of a small call's host time
    (results README, "The fast path's own launches").  Only where the
    compiled kernel takes every parameter, constexprs included, in the kernel's order (Triton
    3.3 on, checked against its signature); otherwise, or after any failure, the launch cache.
    A kernel that is no ``JITFunction`` (the interpreter's, a test's launch spy) is launched as
    it is, and teaches the site nothing."""

    __slots__ = ("name", "grid", "meta", "tensors", "runners")

    def __init__(self, name: str, grid: tuple[int, ...], meta: dict[str, Any]) -> None:
        self.name, self.grid, self.meta = name, grid, meta
        self.tensors: tuple[int, ...] = ()
        self.runners: dict[tuple[bool, ...], tuple[Any, Any, tuple[Any, ...]]] | None = {}

    def __call__(self, *args: Any) -> None:
        kernel = _KERNELS[self.name]
        runners = self.runners
        if runners is None or not DIRECT:
            _launch(kernel)[self.grid](*args, **self.meta)
            return
        if not self.tensors:
            self.tensors = tuple(i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor))
        key = tuple([args[i].data_ptr() % 16 == 0 for i in self.tensors])
        known = runners.get(key)
        if known is not None and known[0] is kernel:
            try:
                known[1](*args, *known[2])
                return
            except Exception:  # the launcher refused the arguments: the launch cache from now on
                self.runners = runners = None
        _launch(kernel)[self.grid](*args, **self.meta)
        if runners is None or not isinstance(kernel, triton.runtime.JITFunction):
            return  # nothing to learn from the interpreter's functions or a test's launch spy
        try:
            runner = _runner(kernel, self.grid, self.meta, args)
        except Exception:
            runner = None
        if runner is None:
            self.runners = None
        else:
            runners[key] = (kernel, *runner)


def _runner(
    kernel: Any, grid: tuple[int, ...], meta: dict[str, Any], args: tuple[Any, ...]
) -> tuple[Any, tuple[Any, ...]] | None:
    """(launch, constexprs after ``args``) of the compiled kernel ``args`` just launched, or
    None where this Triton's compiled kernels may not take the parameters that way."""
    if _TRITON < (3, 3):
        return None  # an older launcher convention
    params = kernel.params
    rest = params[len(args) :]
    if any(not p.is_constexpr for p in rest):
        return None
    tail = tuple(meta[p.name] if p.name in meta else p.default for p in rest)
    if any(value is inspect.Parameter.empty for value in tail):
        return None
    compiled = kernel.warmup(*args, grid=grid, **meta)  # Triton's own cache: what the launch just compiled
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    if not isinstance(signature, dict) or list(signature) != [p.name for p in params]:
        return None
    if any((signature[p.name] == "constexpr") != bool(p.is_constexpr) for p in params):
        return None
    return compiled[(tuple(grid) + (1, 1))[:3]], tail


# Triton's loop unrolling (``loop_unroll_factor``) of one-launch softmax tiles of 32 columns or
# more per m: on an H200 the row walks ran 1.04 - 1.13x faster unrolled twice (5 of 5 such
# cases); split plans, flat tiles and sums ran even or slower (results README, "Loop options").
SOFTMAX_UNROLL = 2


# Elements of the narrowest dtype a 16-byte load holds.  Triton loads a row as vectors only
# where it can prove the row's start aligned, and it specialises an integer argument on
# 16 | K alone: for every other K (most shapes) each thread loaded its elements one by one,
# 2 bytes at a time in half precision.  The plan passes K's largest power-of-two divisor up
# to this (``K_DIV``) and the kernel rebuilds K from it, so the alignment follows by
# arithmetic (results README, "Vector loads of rows").
VECTOR = 8


def _meta(plan: Plan, K: int) -> dict[str, int]:
    """The constexprs of a row-walk launch over rows of ``K`` elements."""
    return {
        "BLOCK_R": plan.block_r,
        "BLOCK_K": plan.block_k,
        "LOG_R": _log2(plan.block_r),
        "FLAT": plan.flat,
        "K_DIV": math.gcd(K, VECTOR),
        "num_warps": plan.warps,
    }


class _Planned:
    """A call planned once for one shape, dtype and device: everything but the buffers is
    decided, so a repeated call pays its allocations and launches, no more Python than
    FlagGems' own entry point (small reductions are host-bound: the host's time is the
    call's time).  Launches go to the input's device, as FlagGems' own do (its entry points
    switch devices around theirs): Triton launches on the current one."""

    def __init__(self, where: Any) -> None:
        module = getattr(torch, where.type, None)
        self.index = where.index
        self.current = getattr(module, "current_device", None) if where.index is not None else None
        self.switch = getattr(module, "device", None)

    def __call__(self, x: Any) -> Any:
        if self.current is None or self.switch is None or self.current() == self.index:
            return self.run(x)
        with self.switch(self.index):
            return self.run(x)

    first: _Site  # the launch every plan makes (its grid and constexprs: ``grid``, ``meta``)

    @property
    def grid(self) -> tuple[int, ...]:
        return self.first.grid

    @property
    def meta(self) -> dict[str, Any]:
        return self.first.meta

    def run(self, x: Any) -> Any:
        raise NotImplementedError


class Reduce(_Planned):
    """A planned sum/mean over dim ``d``."""

    def __init__(
        self, shape: tuple[int, ...], d: int, keepdim: bool, mean: bool, plan: Plan, device: Device, where: Any
    ) -> None:
        super().__init__(where)
        M, N, K = mnk(shape, d)
        out_shape = list(shape)
        out_shape[d] = 1
        if not keepdim:
            del out_shape[d]
        self.out_shape = tuple(out_shape)  # the kernel writes (M, K) contiguously: any view of it
        self.sizes, self.scale = (M * K, N, K), 1.0 / N if mean else 1.0
        meta = _meta(plan, K)
        rows_per_split, splits = split_rows(N, plan.splits, plan.block_r)
        if splits == 1:  # one launch also where the rows, aligned, make one split (paths.path_of)
            self.first = _Site("fl_reduce_rows_kernel", (programs(M, K, plan),), meta)
            self.split: tuple[Any, ...] | None = None
            return
        second = second_plan(splits, M * K, device)  # partials are fp32: (1, splits, M * K), one launch
        self.first = _Site("fl_reduce_rows_split_kernel", (programs(M, K, plan), 1, splits), meta)
        self.second = _Site("fl_reduce_rows_kernel", (programs(1, M * K, second),), _meta(second, M * K))
        self.split = ((splits, M, K), (M * K, N, K, rows_per_split), (M * K, splits, M * K))

    def run(self, x: Any) -> Any:
        out = x.new_empty(self.out_shape)
        if self.split is None:
            self.first(out, x, *self.sizes, self.scale)
            return out
        part_shape, sizes, sizes2 = self.split
        part = x.new_empty(part_shape, dtype=torch.float32)
        self.first(part, x, *sizes)
        self.second(out, part, *sizes2, self.scale)
        return out


class Softmax(_Planned):
    """A planned softmax over dim ``d``."""

    def __init__(self, shape: tuple[int, ...], d: int, out_dtype: Any, plan: Plan, where: Any) -> None:
        super().__init__(where)
        M, N, K = mnk(shape, d)
        self.shape, self.out_dtype, self.sizes = tuple(shape), out_dtype, (M * K, N, K)
        meta = _meta(plan, K)
        rows_per_split, splits = split_rows(N, plan.splits, plan.block_r)
        if splits == 1:
            if not plan.flat and plan.block_k >= 32:
                meta["UNROLL"] = SOFTMAX_UNROLL
            self.first = _Site("fl_softmax_rows_kernel", (programs(M, K, plan),), meta)
            self.split: tuple[Any, ...] | None = None
            return
        grid = (programs(M, K, plan), 1, splits)
        self.first = _Site("fl_softmax_stats_split_kernel", grid, meta)
        self.second = _Site("fl_softmax_norm_split_kernel", grid, meta)
        self.split = ((splits, M, K), (M * K, N, K, rows_per_split), splits)

    def run(self, x: Any) -> Any:
        out = x.new_empty(self.shape, dtype=self.out_dtype or x.dtype)
        if self.split is None:
            self.first(out, x, *self.sizes)
            return out
        stats_shape, sizes, splits = self.split
        stats_m = x.new_empty(stats_shape, dtype=torch.float32)
        stats_s = x.new_empty(stats_shape, dtype=torch.float32)
        self.first(stats_m, stats_s, x, *sizes)
        self.second(out, x, stats_m, stats_s, *sizes, splits)
        return out


class SlabReduce(_Planned):
    """A sum/mean over dim ``d`` of a tiny-K problem, a slab per m (and split)."""

    def __init__(
        self, shape: tuple[int, ...], d: int, keepdim: bool, mean: bool, plan: SlabPlan, device: Device, where: Any
    ) -> None:
        super().__init__(where)
        M, N, K = mnk(shape, d)
        out_shape = list(shape)
        out_shape[d] = 1
        if not keepdim:
            del out_shape[d]
        self.out_shape, self.scale = tuple(out_shape), 1.0 / N if mean else 1.0
        meta = {"K_C": K, "BLOCK": plan.block, "num_warps": plan.warps}
        rows, splits = slab_rows(N, plan.splits)
        self.sizes = (N, M * K, rows)
        self.split: tuple[Any, ...] | None = None
        self.first = _Site("fl_slab_sum_kernel", (M, 1, splits), {"SPLIT": splits > 1, **meta})
        if splits > 1:
            second = second_plan(splits, M * K, device)
            self.second = _Site("fl_reduce_rows_kernel", (programs(1, M * K, second),), _meta(second, M * K))
            self.split = ((splits, M, K), (M * K, splits, M * K))

    def run(self, x: Any) -> Any:
        out = x.new_empty(self.out_shape)
        if self.split is None:
            self.first(out, x, *self.sizes, self.scale)
            return out
        part_shape, sizes2 = self.split
        part = x.new_empty(part_shape, dtype=torch.float32)
        self.first(part, x, *self.sizes, 1.0)
        self.second(out, part, *sizes2, self.scale)
        return out


class SlabSoftmax(_Planned):
    """A softmax over dim ``d`` of a tiny-K problem, a slab per m (and split)."""

    def __init__(self, shape: tuple[int, ...], d: int, out_dtype: Any, plan: SlabPlan, where: Any) -> None:
        super().__init__(where)
        M, N, K = mnk(shape, d)
        self.shape, self.out_dtype = tuple(shape), out_dtype
        meta = {"K_C": K, "BLOCK": plan.block, "num_warps": plan.warps}
        rows, splits = slab_rows(N, plan.splits)
        self.sizes, self.splits = (N, M * K, rows), splits
        self.stats = (splits, M, K)
        if splits == 1:
            self.first = _Site("fl_slab_softmax_kernel", (M, 1, 1), meta)
        else:
            self.first = _Site("fl_slab_softmax_stats_kernel", (M, 1, splits), meta)
            self.second = _Site("fl_slab_softmax_norm_kernel", (M, 1, splits), meta)

    def run(self, x: Any) -> Any:
        out = x.new_empty(self.shape, dtype=self.out_dtype or x.dtype)
        if self.splits == 1:
            self.first(out, x, self.sizes[0])
            return out
        stats_m = x.new_empty(self.stats, dtype=torch.float32)
        stats_s = x.new_empty(self.stats, dtype=torch.float32)
        self.first(stats_m, stats_s, x, *self.sizes)
        self.second(out, x, stats_m, stats_s, *self.sizes, self.splits)
        return out


def _device(x: Any) -> Device:
    return device_info(x.device.type, x.device.index or 0)


def prepare(op: Any, x: Any, arguments: dict[str, Any], route: Any) -> _Planned | None:
    """This call's plan, or None where the fast path does not take it: a dim form the entry
    point refuses, a dtype or dim ``route`` does not send off the non-inner kernel, a grid
    no device launches (``tilemodel.launchable``: the moved axis takes those)."""
    dim = arguments.get("dim")
    if op.fastpath is None or not accepts(op, dim) or x.dtype not in _floats():
        return None
    d = route(tuple(x.shape), dim)
    if d is None:
        return None
    M, N, K = mnk(tuple(x.shape), d)
    device = _device(x)
    if op.fastpath in ("sum", "mean"):
        if arguments.get("dtype") not in (None, x.dtype):
            return None
        plan = pick(M, N, K, device, x.element_size())
        keepdim, mean = bool(arguments.get("keepdim", False)), op.fastpath == "mean"
        if isinstance(plan, SlabPlan):
            return SlabReduce(tuple(x.shape), d, keepdim, mean, plan, device, x.device)
        return None if plan is None else Reduce(tuple(x.shape), d, keepdim, mean, plan, device, x.device)
    if op.fastpath == "softmax":
        plan = pick(M, N, K, device, x.element_size(), op.fastpath)
        out_dtype = torch.float32 if arguments.get("half_to_float") else None
        if isinstance(plan, SlabPlan):
            return SlabSoftmax(tuple(x.shape), d, out_dtype, plan, x.device)
        return None if plan is None else Softmax(tuple(x.shape), d, out_dtype, plan, x.device)
    return None


@functools.cache
def _floats() -> frozenset[Any]:
    return frozenset(getattr(torch, name.split(".")[1]) for name in FLOATS)


_PLANS: dict[tuple[Any, ...], _Planned | None] = {}
_PLANS_MAX = 4096  # distinct calls remembered (a model makes a few dozen)


def _key(op: Any, x: Any, arguments: dict[str, Any]) -> tuple[Any, ...] | None:
    """What decides a call's plan, hashable; None for a dim that is not one int (never the
    fast path's; and a tensor in a key would be kept alive)."""
    dim: Any = arguments.get("dim")
    if type(dim) is not int:
        if (
            not isinstance(dim, (list, tuple))
            or type(dim) not in (list, tuple)
            or len(dim) != 1
            or type(dim[0]) is not int
        ):
            return None  # more than one dim, or none: never the fast path's
        dim = (type(dim), dim[0])
    return (
        op.name,
        x.shape,
        x.dtype,
        x.device,
        dim,
        bool(arguments.get("keepdim", False)),
        arguments.get("dtype"),
        bool(arguments.get("half_to_float", False)),
    )


def try_fast(op: Any, x: Any, arguments: dict[str, Any], route: Any) -> Any:
    """The fast path's result for this call of ``op``'s entry point, or NotImplemented.

    ``route`` is the workaround's (the normalised non-inner dim, or None).  Plans are
    memoised by what decides them (``_key``), so a call seen before costs a dict lookup."""
    if not enabled() or not isinstance(x, torch.Tensor):
        return NotImplemented
    key = _key(op, x, arguments)
    if key is None:
        return NotImplemented
    try:
        known = key in _PLANS
    except TypeError:  # an unhashable dtype= or keepdim=: the entry point says what is wrong with it
        return NotImplemented
    if known:
        plan = _PLANS[key]
    else:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[key] = prepare(op, x, arguments, route)
    return NotImplemented if plan is None else plan(x.contiguous())
