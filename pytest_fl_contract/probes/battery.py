"""The probe battery: tiny Triton kernels, each exercising one compiler feature FlagGems'
reduction kernels rely on, with its exact answer computed on the host from the same input.

Geometry follows the seed (the PR review in which the Iluvatar defect was found: 28 for 6): a tile of ``TILE_N = 8`` rows over a buffer that
really has 8 rows, of which only ``N = 4`` are valid, so rows past N hold known nonzero
values inside the same allocation and a dropped condition changes the answer (the seed's
column sum: 6, or 28 when the row condition is lost).  Column-masked probes use ``K``
valid columns out of a wider buffer the same way.  Inputs are small integers, so every
expected value is exact in fp32 whatever the order of a reduction: a probe compares for
equality, never within a tolerance.

Each probe also carries a *mutant*: its kernel with the probed feature broken in the
source, the way a miscompile would break it.  The project's tests run every mutant to
show that the probe's sizes and data really catch that fault.

Importing this module imports triton: under the CPU emulator, bring it up first.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import triton
import triton.language as tl

from pytest_fl_contract.registry.schema import GRID_LIMITS

N, TILE_N = 4, 8  # the seed's rows: 4 valid rows in an 8-row tile over an 8-row buffer
K, TILE_K = 3, 4  # the column twin: 3 valid columns in a 4-column tile over a 4-column buffer
INT64_SPAN = 2**30 + 3  # program 2 reads at 2 * span > 2**31


class ProbeSkip(Exception):
    """The probe cannot run here (hardware only, too little memory); the message says why."""


@dataclass(frozen=True)
class Outcome:
    result: np.ndarray | None
    expected: np.ndarray | None
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        if self.skipped is not None or self.result is None or self.expected is None:
            return False
        return self.result.shape == self.expected.shape and bool(np.array_equal(self.result, self.expected))


Launch = Callable[..., "tuple[Any, Any]"]  # (device, kernel, **sizes) -> (result tensor, expected array)


@dataclass(frozen=True)
class Probe:
    id: str
    variant: str  # the table's first column: what the kernel does, as in a bug report
    defect: str  # the compiler defect a failure is evidence for (an id of the defect catalogue)
    launch: Launch
    kernel: Any
    mutant: Any  # the kernel with the feature broken in source: shows the probe can fail
    shown: Callable[[np.ndarray], np.ndarray] | None = None  # what the table shows of a large result
    needs: tuple[str, ...] = ()  # registry capabilities (bf16, int64)
    hardware_only: bool = False

    def run(self, device: str, kernel: Any = None, **sizes: Any) -> Outcome:
        if self.hardware_only and interpreted():
            return Outcome(None, None, "hardware only: the interpreter would copy the whole buffer per launch")
        try:
            result, expected = self.launch(device, kernel if kernel is not None else self.kernel, **sizes)
        except ProbeSkip as skip:
            return Outcome(None, None, str(skip))
        return Outcome(result.detach().cpu().numpy(), np.asarray(expected))


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def _on(device: str, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(device) for t in tensors]


# -- the seed's five variants: N = 4 rows holding 0..3 in an 8-row buffer, column sum --------


@triton.jit
def colsum_masked(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * K + k, mask=(n < N) & (k < K), other=0.0)
    kk = tl.arange(0, TILE_K)
    tl.store(out_ptr + kk, tl.sum(v, axis=0), mask=kk < K)


@triton.jit
def colsum_masked_no_row(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * K + k, mask=(n >= 0) & (k < K), other=0.0)  # the row half lost
    kk = tl.arange(0, TILE_K)
    tl.store(out_ptr + kk, tl.sum(v, axis=0), mask=kk < K)


@triton.jit
def colsum_masked_half_tree(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * K + k, mask=(n < N) & (k < K), other=0.0)
    v = tl.where(n < TILE_N // 2, v, 0.0)  # a reduction tree that lost its last level
    kk = tl.arange(0, TILE_K)
    tl.store(out_ptr + kk, tl.sum(v, axis=0), mask=kk < K)


@triton.jit
def colsum_where(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * K + k)
    v = tl.where(n < N, v, 0.0)
    kk = tl.arange(0, TILE_K)
    tl.store(out_ptr + kk, tl.sum(v, axis=0), mask=kk < K)


@triton.jit
def colsum_where_dropped(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * K + k)  # the where's condition lost
    kk = tl.arange(0, TILE_K)
    tl.store(out_ptr + kk, tl.sum(v, axis=0), mask=kk < K)


@triton.jit
def colsum_rows(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    k = tl.arange(0, TILE_K)
    acc = tl.zeros([TILE_K], dtype=tl.float32)
    for n in range(0, N):
        acc += tl.load(x_ptr + n * K + k, mask=k < K, other=0.0)
    tl.store(out_ptr + k, acc, mask=k < K)


@triton.jit
def colsum_rows_short(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    k = tl.arange(0, TILE_K)
    acc = tl.zeros([TILE_K], dtype=tl.float32)
    for n in range(0, N - 1):  # one trip short
        acc += tl.load(x_ptr + n * K + k, mask=k < K, other=0.0)
    tl.store(out_ptr + k, acc, mask=k < K)


@triton.jit
def sum_1d(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + n * K, mask=n < N, other=0.0), axis=0))


@triton.jit
def sum_1d_unmasked(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + n * K, mask=n < TILE_N, other=0.0), axis=0))


def _seed(device: str, kernel: Any, tile_n: int = TILE_N) -> tuple[torch.Tensor, np.ndarray]:
    x = torch.arange(float(TILE_N)).reshape(TILE_N, 1)  # rows 0..7; N = 4 of them are the tensor
    expected = x.numpy()[:N].sum(axis=0)  # 6; every row of the buffer: 28
    x_dev, out = _on(device, x, torch.zeros(1))
    kernel[(1,)](x_dev, out, N, 1, TILE_N=tile_n, TILE_K=1)
    return out, expected


# -- 2-D masked loads: an 8x4 buffer holding 1..32, N = 4 valid rows, K = 3 valid columns ----


def _grid_input() -> torch.Tensor:
    return torch.arange(1.0, TILE_N * TILE_K + 1).reshape(TILE_N, TILE_K)


@triton.jit
def load_row_mask(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=n < N, other=0.0)  # row mask, broadcast over columns
    tl.store(out_ptr + tl.arange(0, TILE_K), tl.sum(v, axis=0))


@triton.jit
def load_row_mask_dropped(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=n < TILE_N, other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_K), tl.sum(v, axis=0))


def _row_mask(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input()
    expected = x.numpy()[:N].sum(axis=0)
    x_dev, out = _on(device, x, torch.zeros(TILE_K))
    kernel[(1,)](x_dev, out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


@triton.jit
def load_col_mask(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=k < K, other=0.0)  # column mask, broadcast over rows
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


@triton.jit
def load_col_mask_dropped(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=k < TILE_K, other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


def _col_mask(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input()
    expected = x.numpy()[:, :K].sum(axis=1)
    x_dev, out = _on(device, x, torch.zeros(TILE_N))
    kernel[(1,)](x_dev, out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


@triton.jit
def load_both_other(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < N) & (k < K), other=-1.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


@triton.jit
def load_both_other_no_row(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n >= 0) & (k < K), other=-1.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


def _both_other(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input().numpy()
    n, k = np.arange(TILE_N)[:, None], np.arange(TILE_K)[None, :]
    expected = np.where((n < N) & (k < K), x, -1.0).sum(axis=1)
    x_dev, out = _on(device, torch.from_numpy(x), torch.zeros(TILE_N))
    kernel[(1,)](x_dev, out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


@triton.jit
def load_col_other(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < TILE_N) & (k < K), other=-1.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


@triton.jit
def load_col_other_ignored(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < TILE_N) & (k < K), other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


def _col_other(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input()
    expected = x.numpy()[:, :K].sum(axis=1) - (TILE_K - K)
    x_dev, out = _on(device, x, torch.zeros(TILE_N))
    kernel[(1,)](x_dev, out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


FLAT = 13  # a flattened-index bound: rows 0..2 whole, row 3 one lane - not rows x columns


@triton.jit
def load_flat_mask(x_ptr, out_ptr, L, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=n * TILE_K + k < L, other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


@triton.jit
def load_flat_mask_rows(x_ptr, out_ptr, L, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < L // TILE_K) & (k >= 0), other=0.0)  # made separable
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(v, axis=1))


def _flat_mask(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input()
    expected = np.where(np.arange(TILE_N * TILE_K) < FLAT, x.numpy().ravel(), 0.0).reshape(TILE_N, TILE_K).sum(axis=1)
    x_dev, out = _on(device, x, torch.zeros(TILE_N))
    kernel[(1,)](x_dev, out, FLAT, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


# -- the mask itself: each row's lanes as bits (lane k is 1 << k), stored without any load --


def _bits(mask: np.ndarray) -> np.ndarray:
    return (mask.astype(np.int32) << np.arange(TILE_K, dtype=np.int32)[None, :]).sum(axis=1).astype(np.int32)


def _mask_probe(reference: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Launch:
    def launch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
        n, k = np.arange(TILE_N)[:, None], np.arange(TILE_K)[None, :]
        expected = _bits(np.broadcast_to(reference(n, k), (TILE_N, TILE_K)))
        out = torch.zeros(TILE_N, dtype=torch.int32, device=device)
        kernel[(1,)](out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
        return out, expected

    return launch


@triton.jit
def _store_bits(out_ptr, m, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    k = tl.arange(0, TILE_K)[None, :]
    m = tl.broadcast_to(m, (TILE_N, TILE_K))
    tl.store(out_ptr + tl.arange(0, TILE_N), tl.sum(m.to(tl.int32) << k, axis=1))


@triton.jit
def mask_amp(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    _store_bits(out_ptr, (n < N) & (k < K), TILE_N, TILE_K)


@triton.jit
def mask_amp_no_row(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    _store_bits(out_ptr, (n >= 0) & (k < K), TILE_N, TILE_K)


@triton.jit
def mask_pipe(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    _store_bits(out_ptr, (n >= N) | (k >= K), TILE_N, TILE_K)


@triton.jit
def mask_pipe_no_col(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    _store_bits(out_ptr, (n >= N) | (k < 0), TILE_N, TILE_K)


@triton.jit
def mask_and(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    row_mask = n < N
    col_mask = k < K
    mask = row_mask and col_mask  # as flag_gems' sum_dim_kernel, mean_dim_kernel, log_softmax
    _store_bits(out_ptr, mask, TILE_N, TILE_K)


@triton.jit
def mask_and_col_only(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    k = tl.arange(0, TILE_K)[None, :]
    _store_bits(out_ptr, k < K, TILE_N, TILE_K)  # what Python's `and` returns: the second operand


@triton.jit
def mask_and_cols_first(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    mask = k < K and n < N  # as flag_gems' argmax_kernel_non_inner
    _store_bits(out_ptr, mask, TILE_N, TILE_K)


@triton.jit
def mask_and_row_only(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    _store_bits(out_ptr, n < N, TILE_N, TILE_K)


@triton.jit
def mask_or(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    mask = n >= N or k >= K
    _store_bits(out_ptr, mask, TILE_N, TILE_K)


@triton.jit
def mask_or_first_only(out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    _store_bits(out_ptr, n >= N, TILE_N, TILE_K)  # what Python's `or` returns: the first operand


# -- masked stores and partial tiles ---------------------------------------------------------


@triton.jit
def store_masked(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k)  # the whole buffer: no mask on the load
    tl.store(out_ptr + n * TILE_K + k, v, mask=(n < N) & (k < K))


@triton.jit
def store_unmasked(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k)
    tl.store(out_ptr + n * TILE_K + k, v, mask=(n >= 0) & (k < K))  # the row half lost


def _store(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = _grid_input()
    n, k = np.arange(TILE_N)[:, None], np.arange(TILE_K)[None, :]
    expected = np.where((n < N) & (k < K), x.numpy(), 0.0)
    x_dev, out = _on(device, x, torch.zeros(TILE_N, TILE_K))
    kernel[(1,)](x_dev, out, N, K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


PARTIAL = (6, 5, 8)  # a (6, 5) tensor with row stride 8 inside an 8x8 buffer, copied by 4x4 tiles


@triton.jit
def copy_tiles(x_ptr, out_ptr, M, N, STRIDE, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    m = tl.program_id(0) * TILE_M + tl.arange(0, TILE_M)[:, None]
    n = tl.program_id(1) * TILE_N + tl.arange(0, TILE_N)[None, :]
    mask = (m < M) & (n < N)
    v = tl.load(x_ptr + m * STRIDE + n, mask=mask, other=0.0)
    tl.store(out_ptr + m * STRIDE + n, v, mask=mask)


@triton.jit
def copy_tiles_store_cols(x_ptr, out_ptr, M, N, STRIDE, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    m = tl.program_id(0) * TILE_M + tl.arange(0, TILE_M)[:, None]
    n = tl.program_id(1) * TILE_N + tl.arange(0, TILE_N)[None, :]
    mask = (m < M) & (n < N)
    v = tl.load(x_ptr + m * STRIDE + n, mask=mask, other=0.0)
    tl.store(out_ptr + m * STRIDE + n, v, mask=(m >= 0) & (n < N))  # edge rows stored anyway


def _partial_tiles(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    rows, cols, stride = PARTIAL
    x = torch.arange(1.0, stride * stride + 1).reshape(stride, stride)
    expected = np.full((stride, stride), -1.0, dtype=np.float32)  # lanes outside the tensor keep -1
    expected[:rows, :cols] = x.numpy()[:rows, :cols]
    x_dev, out = _on(device, x, torch.full((stride, stride), -1.0))
    kernel[(2, 2)](x_dev, out, rows, cols, stride, TILE_M=4, TILE_N=4)
    return out, expected


# -- loops -----------------------------------------------------------------------------------

CHUNKED = (10, 4, 16)  # 10 valid of a 16-element buffer, in chunks of 4: the last one partial


@triton.jit
def chunked_sum(x_ptr, out_ptr, L, TILE: tl.constexpr):
    acc = tl.zeros([TILE], dtype=tl.float32)
    for start in range(0, L, TILE):
        offsets = start + tl.arange(0, TILE)
        acc += tl.load(x_ptr + offsets, mask=offsets < L, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def chunked_sum_tail_unmasked(x_ptr, out_ptr, L, TILE: tl.constexpr):
    acc = tl.zeros([TILE], dtype=tl.float32)
    for start in range(0, L, TILE):
        offsets = start + tl.arange(0, TILE)
        acc += tl.load(x_ptr + offsets)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def _chunked(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    valid, tile, size = CHUNKED
    x = torch.arange(1.0, size + 1)
    expected = x.numpy()[:valid].sum(keepdims=True)
    x_dev, out = _on(device, x, torch.zeros(1))
    kernel[(1,)](x_dev, out, valid, TILE=tile)
    return out, expected


# -- reductions over a partial tile: 4 rows x 8 columns, the last columns masked off ---------

RED_M, RED_TILE, RED_K = 4, 8, 5  # 4 full rows, 5 valid columns of an 8-column tile


def _reduce_input() -> np.ndarray:
    """Valid lanes small and negative, rising along the row (the maximum in the last valid
    lane, past the tile's first half), masked lanes large: a lost mask, a lost ``other=-inf``
    (masked lanes as 0) and a lost half of the tree each change the answer."""
    c = np.arange(RED_TILE)[None, :]
    r = np.arange(RED_M)[:, None]
    return np.where(c < RED_K, c - 10.0 - r, 100.0 + c).astype(np.float32)


@triton.jit
def row_sum(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.sum(v, axis=1))


@triton.jit
def row_sum_half_tree(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=0.0)
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.sum(tl.where(k < TILE_K // 2, v, 0.0), axis=1))


@triton.jit
def row_max(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.max(v, axis=1))


@triton.jit
def row_max_half_tree(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.max(tl.where(k < TILE_K // 2, v, -float("inf")), axis=1))


def _row_reduce(reference: Callable[[np.ndarray], np.ndarray]) -> Launch:
    def launch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
        x = _reduce_input()
        expected = reference(x[:, :RED_K]).astype(np.float32)
        x_dev, out = _on(device, torch.from_numpy(x), torch.zeros(RED_M))
        kernel[(1,)](x_dev, out, RED_M, RED_K, TILE_M=RED_M, TILE_K=RED_TILE)
        return out, expected

    return launch


TIES = np.array(
    [
        [1, 5, 2, 5, 0, 3, 9, 9],  # the maximum twice: the first one (1) wins, as in torch
        [7, 1, 7, 0, 0, 0, 9, 9],
        [0, 0, 0, 4, 4, 4, 9, 9],
        [2, 2, 2, 2, 2, 2, 9, 9],
    ],  # all tied: lane 0
    dtype=np.float32,
)
TIES_K = 6


@triton.jit
def row_argmax(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.argmax(v, axis=1).to(tl.int32))


@triton.jit
def row_argmax_last(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_M), tl.argmax(v, axis=1, tie_break_left=False).to(tl.int32))


@triton.jit
def row_max_index(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    _, index = tl.max(v, 1, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + tl.arange(0, TILE_M), index.to(tl.int32))


@triton.jit
def row_max_index_last(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=-float("inf"))
    _, index = tl.max(v, 1, return_indices=True, return_indices_tie_break_left=False)
    tl.store(out_ptr + tl.arange(0, TILE_M), index.to(tl.int32))


@triton.jit
def row_min_index(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=float("inf"))
    _, index = tl.min(v, 1, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + tl.arange(0, TILE_M), index.to(tl.int32))


@triton.jit
def row_min_index_last(x_ptr, out_ptr, M, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * TILE_K + k, mask=(m < M) & (k < K), other=float("inf"))
    _, index = tl.min(v, 1, return_indices=True, return_indices_tie_break_left=False)
    tl.store(out_ptr + tl.arange(0, TILE_M), index.to(tl.int32))


def _min_ties(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    """The ties negated: min.dim's and argmin's first minimum (FlagGems' min_kernel)."""
    values = -TIES
    expected = values[:, :TIES_K].argmin(axis=1).astype(np.int32)
    x_dev, out = _on(device, torch.from_numpy(values), torch.zeros(RED_M, dtype=torch.int32))
    kernel[(1,)](x_dev, out, RED_M, TIES_K, TILE_M=RED_M, TILE_K=RED_TILE)
    return out, expected


def _ties(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    expected = TIES[:, :TIES_K].argmax(axis=1).astype(np.int32)  # numpy, like torch: the first maximum
    x_dev, out = _on(device, torch.from_numpy(TIES), torch.zeros(RED_M, dtype=torch.int32))
    kernel[(1,)](x_dev, out, RED_M, TIES_K, TILE_M=RED_M, TILE_K=RED_TILE)
    return out, expected


# -- the non-inner reductions' shape: along the rows of a partial row tile (the seed's defect) --

COL_TIES = np.array(
    [
        [1, 3, 0, 2],
        [4, 3, 2, 2],  # column 0's maximum in row 1, column 1's tied in rows 0 and 1
        [4, 1, 2, 1],  # column 0 tied again in row 2, column 2 tied in rows 1..3
        [0, 3, 2, 2],
        [9, 9, 9, 9],  # rows past N = 4: larger than anything valid
        [9, 9, 9, 9],
        [9, 9, 9, 9],
        [9, 9, 9, 9],
    ],
    dtype=np.float32,
)


@triton.jit
def col_max(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < N) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_K), tl.max(v, axis=0))


@triton.jit
def col_max_no_row(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n >= 0) & (k < K), other=-float("inf"))
    tl.store(out_ptr + tl.arange(0, TILE_K), tl.max(v, axis=0))


@triton.jit
def col_argmax(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < N) & (k < K), other=-float("inf"))
    _, index = tl.max(v, 0, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + tl.arange(0, TILE_K), index.to(tl.int32))


@triton.jit
def col_argmax_no_row(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n >= 0) & (k < K), other=-float("inf"))
    _, index = tl.max(v, 0, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + tl.arange(0, TILE_K), index.to(tl.int32))


def _col_reduce(reference: Callable[[np.ndarray], np.ndarray], dtype: torch.dtype) -> Launch:
    def launch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
        expected = reference(COL_TIES[:N])
        x_dev, out = _on(device, torch.from_numpy(COL_TIES), torch.zeros(TILE_K, dtype=dtype))
        kernel[(1,)](x_dev, out, N, TILE_K, TILE_N=TILE_N, TILE_K=TILE_K)
        return out, expected

    return launch


# -- the op families beyond the reductions (issue 29): scans and matmul tails ---------------------

SCAN_N, SCAN_K = 5, 3  # valid rows and columns of an 8x4 tile; the buffer's rows past SCAN_N hold 100


@triton.jit
def scan_rows_carry(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n < N) & (k < K), other=0.0)
    tl.store(out_ptr + n * TILE_K + k, tl.cumsum(v, axis=0), mask=(n < N) & (k < K))
    tl.store(out_ptr + TILE_N * TILE_K + tl.arange(0, TILE_K), tl.sum(v, axis=0))  # the carry into the next tile


@triton.jit
def scan_rows_carry_no_row(x_ptr, out_ptr, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    n = tl.arange(0, TILE_N)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + n * TILE_K + k, mask=(n >= 0) & (k < K), other=0.0)
    tl.store(out_ptr + n * TILE_K + k, tl.cumsum(v, axis=0), mask=(n < N) & (k < K))
    tl.store(out_ptr + TILE_N * TILE_K + tl.arange(0, TILE_K), tl.sum(v, axis=0))


def _scan(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    """The shape of cumsum and logcumsumexp over a middle axis: a running sum down the valid rows
    of a row tile, and the tile's total carried to the next one - where rows past the end
    (here 100s) enter the carry, every later tile is off."""
    x = np.arange(TILE_N * TILE_K, dtype=np.float32).reshape(TILE_N, TILE_K) % 7
    x[SCAN_N:] = 100.0
    inside = (np.arange(TILE_N)[:, None] < SCAN_N) & (np.arange(TILE_K)[None, :] < SCAN_K)
    valid = np.where(inside, x, 0.0)
    expected = np.concatenate([np.cumsum(valid, axis=0) * inside, valid.sum(axis=0, keepdims=True)]).astype(np.float32)
    x_dev, out = _on(device, torch.from_numpy(x), torch.zeros(TILE_N + 1, TILE_K))
    kernel[(1,)](x_dev, out, SCAN_N, SCAN_K, TILE_N=TILE_N, TILE_K=TILE_K)
    return out, expected


# -- a Welford tl.reduce over a multi-row tile (var, var_mean) ----------------------------------
# Rows r hold (r + 1) * [0, 1, ..., 7] in the first WELFORD_K of 16 columns: every mean, count
# and sum of squares is a dyadic rational, exact in fp32 in any merge order.
WELFORD_M, WELFORD_TILE, WELFORD_K = 4, 16, 8


@triton.jit
def _welford_merge(mean_x, count_x, m2_x, mean_y, count_y, m2_y):
    count = count_x + count_y
    delta = mean_y - mean_x
    frac = tl.where(count > 0, count_y / tl.maximum(count, 1.0), 0.0)
    return mean_x + delta * frac, count, m2_x + m2_y + delta * delta * count_x * frac


@triton.jit
def _welford_merge_no_count(mean_x, count_x, m2_x, mean_y, count_y, m2_y):
    return (mean_x + mean_y) / 2, count_x + count_y, m2_x + m2_y  # the counts ignored: a mean of means


@triton.jit
def welford_rows(x_ptr, out_ptr, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    mask = (m >= 0) & (k < K)
    x = tl.load(x_ptr + m * TILE_K + k, mask=mask, other=0.0)
    count = mask.to(tl.float32)
    mean, n, m2 = tl.reduce((x, count, tl.zeros_like(x)), 1, _welford_merge)
    tl.store(out_ptr + tl.arange(0, TILE_M), m2 / n)


@triton.jit
def welford_rows_no_count(x_ptr, out_ptr, K, TILE_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.arange(0, TILE_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    mask = (m >= 0) & (k < K)
    x = tl.load(x_ptr + m * TILE_K + k, mask=mask, other=0.0)
    count = mask.to(tl.float32)
    mean, n, m2 = tl.reduce((x, count, tl.zeros_like(x)), 1, _welford_merge_no_count)
    tl.store(out_ptr + tl.arange(0, TILE_M), m2 / n)


def _welford(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = np.zeros((WELFORD_M, WELFORD_TILE), dtype=np.float32)
    x[:, :WELFORD_K] = (np.arange(WELFORD_M, dtype=np.float32)[:, None] + 1) * np.arange(WELFORD_K, dtype=np.float32)
    expected = x[:, :WELFORD_K].astype(np.float64).var(axis=1).astype(np.float32)  # (r + 1)**2 * 5.25
    x_dev, out = _on(device, torch.from_numpy(x), torch.zeros(WELFORD_M))
    kernel[(1,)](x_dev, out, WELFORD_K, TILE_M=WELFORD_M, TILE_K=WELFORD_TILE)
    return out, expected


# -- a (value, index) associative scan over a partial tile (cummax, cummin) ---------------------
SCAN_TIES = np.array([3, 1, 3, 5, 2, 5, 0, 7, 7, 1, 4], dtype=np.float32)  # ties a running max meets
SCAN_TILE = 16


@triton.jit
def _max_last_index(a, ai, b, bi):
    take_a = (a > b) | ((a == b) & (ai > bi))  # FlagGems' tie break: the later index (torch's cummax)
    return tl.where(take_a, a, b), tl.where(take_a, ai, bi)


@triton.jit
def _max_first_index_scan(a, ai, b, bi):
    take_a = (a > b) | ((a == b) & (ai < bi))
    return tl.where(take_a, a, b), tl.where(take_a, ai, bi)


@triton.jit
def scan_tuple_ties(x_ptr, out_ptr, N, TILE: tl.constexpr):
    n = tl.arange(0, TILE)
    x = tl.load(x_ptr + n, mask=n < N, other=-float("inf"))
    values, index = tl.associative_scan((x, n), 0, _max_last_index)
    tl.store(out_ptr + n, values, mask=n < N)
    tl.store(out_ptr + TILE + n, index.to(tl.float32), mask=n < N)


@triton.jit
def scan_tuple_ties_first(x_ptr, out_ptr, N, TILE: tl.constexpr):
    n = tl.arange(0, TILE)
    x = tl.load(x_ptr + n, mask=n < N, other=-float("inf"))
    values, index = tl.associative_scan((x, n), 0, _max_first_index_scan)
    tl.store(out_ptr + n, values, mask=n < N)
    tl.store(out_ptr + TILE + n, index.to(tl.float32), mask=n < N)


def _scan_ties(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    n = SCAN_TIES.size
    ref = torch.cummax(torch.from_numpy(SCAN_TIES), 0)  # ties: torch keeps the last index
    expected = np.zeros(2 * SCAN_TILE, dtype=np.float32)
    expected[:n], expected[SCAN_TILE : SCAN_TILE + n] = ref.values.numpy(), ref.indices.numpy()
    x_dev, out = _on(device, torch.from_numpy(SCAN_TIES), torch.zeros(2 * SCAN_TILE))
    kernel[(1,)](x_dev, out, n, TILE=SCAN_TILE)
    return out, expected


DOT, DOT_K = 16, 10  # 16x16 tiles (tl.dot's smallest), K = 10 valid: B's rows past K hold inf


@triton.jit
def dot_k_tail(a_ptr, b_ptr, out_ptr, K, TILE: tl.constexpr):
    i = tl.arange(0, TILE)
    a = tl.load(a_ptr + i[:, None] * TILE + i[None, :], mask=i[None, :] < K, other=0.0)
    b = tl.load(b_ptr + i[:, None] * TILE + i[None, :], mask=(i[:, None] < K) & (i[None, :] < TILE), other=0.0)
    tl.store(out_ptr + i[:, None] * TILE + i[None, :], tl.dot(a, b))


@triton.jit
def dot_k_tail_no_row(a_ptr, b_ptr, out_ptr, K, TILE: tl.constexpr):
    i = tl.arange(0, TILE)
    a = tl.load(a_ptr + i[:, None] * TILE + i[None, :], mask=i[None, :] < K, other=0.0)
    b = tl.load(b_ptr + i[:, None] * TILE + i[None, :], mask=(i[:, None] >= 0) & (i[None, :] < TILE), other=0.0)
    tl.store(out_ptr + i[:, None] * TILE + i[None, :], tl.dot(a, b))


def _dot(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    """mm's K tail (``b`` loaded under ``rk[:, None] < K``, FlagGems' mm and bmm): A's masked
    columns are 0, so B's rows past K only show where they hold inf or NaN (0 * inf) - a
    compiler that drops B's row condition gives NaN there.  Small integers: exact in tf32."""
    a = np.arange(DOT * DOT, dtype=np.float32).reshape(DOT, DOT) % 5
    b = np.arange(DOT * DOT, dtype=np.float32).reshape(DOT, DOT) % 3
    b[DOT_K:] = np.inf
    expected = (a[:, :DOT_K].astype(np.float64) @ b[:DOT_K].astype(np.float64)).astype(np.float32)
    a_dev, b_dev, out = _on(device, torch.from_numpy(a), torch.from_numpy(b), torch.zeros(DOT, DOT))
    kernel[(1,)](a_dev, b_dev, out, DOT_K, TILE=DOT)
    return out, expected


# -- half-precision loads, fp32 accumulation ---------------------------------------------------

HALF = {  # dtype -> (big, valid, masked fill): big + (valid - 1) ones is odd and above the
    # dtype's exact-integer range, so no sum kept in that dtype can equal it
    "float16": (2048.0, 8, 1000.0),  # 2055: fp16 holds 2054 and 2056, not 2055
    "bfloat16": (256.0, 8, 100.0),  # 263: bf16 holds 262 and 264, not 263
}


@triton.jit
def half_sum(x_ptr, out_ptr, L, TILE: tl.constexpr):
    offsets = tl.arange(0, TILE)
    v = tl.load(x_ptr + offsets, mask=offsets < L, other=0.0).to(tl.float32)
    tl.store(out_ptr, tl.sum(v, axis=0))


@triton.jit
def half_sum_in_half(x_ptr, out_ptr, L, TILE: tl.constexpr):
    offsets = tl.arange(0, TILE)
    v = tl.load(x_ptr + offsets, mask=offsets < L, other=0.0)
    tl.store(out_ptr, tl.sum(v, axis=0).to(tl.float32))  # accumulated in the input's precision


def _half(dtype_name: str) -> Launch:
    def launch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
        big, valid, fill = HALF[dtype_name]
        x = torch.full((16,), fill, dtype=getattr(torch, dtype_name))
        x[0], x[1:valid] = big, 1.0
        expected = x.double().numpy()[:valid].sum(keepdims=True).astype(np.float32)
        x_dev, out = _on(device, x, torch.zeros(1))
        kernel[(1,)](x_dev, out, valid, TILE=16)
        return out, expected

    return launch


# -- tl.reduce with a custom combine (flag_gems' prod) -----------------------------------------

PROD = np.array([1, 2, 1, 3, 1, 2, 1, 1, 2, 1, 3, 5, 7, 5, 7, 5], dtype=np.float32)
PROD_VALID = 11  # valid lanes past the tile's first half, masked lanes not 1


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def reduce_prod(x_ptr, out_ptr, L, TILE: tl.constexpr):
    offsets = tl.arange(0, TILE)
    v = tl.load(x_ptr + offsets, mask=offsets < L, other=1.0)
    tl.store(out_ptr, tl.reduce(v, 0, _multiply))


@triton.jit
def reduce_prod_half_tree(x_ptr, out_ptr, L, TILE: tl.constexpr):
    offsets = tl.arange(0, TILE)
    v = tl.load(x_ptr + offsets, mask=offsets < L, other=1.0)
    tl.store(out_ptr, tl.reduce(tl.where(offsets < TILE // 2, v, 1.0), 0, _multiply))


def _prod(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    expected = PROD[:PROD_VALID].astype(np.float64).prod(keepdims=True).astype(np.float32)
    x_dev, out = _on(device, torch.from_numpy(PROD), torch.zeros(1))
    kernel[(1,)](x_dev, out, PROD_VALID, TILE=PROD.size)
    return out, expected


# -- int64 offsets past 2**31 (hardware only) --------------------------------------------------

INT64_TILE = 16


@triton.jit
def int64_offsets(x_ptr, out_ptr, SPAN, WRAP: tl.constexpr, TILE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * SPAN + tl.arange(0, TILE)
    tl.store(out_ptr + pid * TILE + tl.arange(0, TILE), tl.load(x_ptr + offsets))


@triton.jit
def int64_offsets_wrapped(x_ptr, out_ptr, SPAN, WRAP: tl.constexpr, TILE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = (pid * SPAN) % WRAP + tl.arange(0, TILE)  # the high bits lost: wraps into the low range
    tl.store(out_ptr + pid * TILE + tl.arange(0, TILE), tl.load(x_ptr + offsets))


def _free_bytes(device: str) -> int | None:
    module = getattr(torch, torch.device(device).type, None)
    try:
        return int(module.mem_get_info()[0])  # type: ignore[union-attr]
    except Exception:
        return None


def _int64(device: str, kernel: Any, span: int = INT64_SPAN) -> tuple[torch.Tensor, np.ndarray]:
    """Three programs read a tile at ``pid * span``: with the default span the last one
    lies past 2**31 elements of an int8 buffer (2 GiB)."""
    size = 2 * span + INT64_TILE
    if span == INT64_SPAN:
        free = _free_bytes(device)
        if free is None:
            raise ProbeSkip(f"cannot ask {device} for its free memory; the probe needs {size / 2**30:.1f} GiB")
        if free < size + 2**29:
            raise ProbeSkip(f"{device} has {free / 2**30:.1f} GiB free; the probe needs {size / 2**30 + 0.5:.1f} GiB")
    x = torch.zeros(size, dtype=torch.int8, device=device)
    expected = np.zeros((3, INT64_TILE), dtype=np.int8)
    for pid in range(3):
        marker = torch.arange(1, INT64_TILE + 1, dtype=torch.int8) + 20 * pid  # distinct per program
        x[pid * span : pid * span + INT64_TILE] = marker.to(device)
        expected[pid] = marker.numpy()
    out = torch.zeros(3, INT64_TILE, dtype=torch.int8, device=device)
    kernel[(3,)](x, out, span, WRAP=2 * span if span != INT64_SPAN else 2**31, TILE=INT64_TILE)
    del x
    return out, expected


# -- grid axes y and z at CUDA's 65535 ------------------------------------------------------------

GRID_Y, GRID_Z = GRID_LIMITS[1], 2
GRID_Y_INTERPRETED = 4096  # 45 us a program there; the emulator's own limit is tested on its own


@triton.jit
def grid_yz(out_ptr, NZ):
    y, z = tl.program_id(1), tl.program_id(2)
    tl.atomic_add(out_ptr + z, 1)  # programs that ran, per z
    tl.atomic_max(out_ptr + NZ + z, y)  # the largest y seen, per z


@triton.jit
def grid_yz_folded(out_ptr, NZ):
    y, z = tl.program_id(0), tl.program_id(2)  # a backend that folds y into x: every program says 0
    tl.atomic_add(out_ptr + z, 1)
    tl.atomic_max(out_ptr + NZ + z, y)


def _grid_yz(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    """(1, 65535, 2) programs count themselves and their largest y per z: FlagGems'
    non-inner kernels put column tiles on y, up to the 65535 its mean heuristic caps them at.
    (Atomics, not a store per program: the interpreter runs each program's ops one by one.)"""
    ny = GRID_Y_INTERPRETED if interpreted() else GRID_Y
    (out,) = _on(device, torch.zeros(2 * GRID_Z, dtype=torch.int32))
    kernel[(1, ny, GRID_Z)](out, GRID_Z)
    return out, np.array([ny] * GRID_Z + [ny - 1] * GRID_Z, dtype=np.int32)


# -- the battery ---------------------------------------------------------------------------------

_SEED = f"(N={N}, TILE_N={TILE_N}) "
_GRID = f"(8x4 tile, N={N}, K={K}) "
_GRID4 = f"(8x4 tile, N={N}) "
_RED = f"(4x8 tile, K={RED_K}) "


def _row_sums(values: np.ndarray) -> np.ndarray:
    return values.sum(axis=1)


# -- beyond masks: launches that must each take their own arguments, and a first launch -------

SCALAR_NS = (3, 5, 7)  # one kernel, one BLOCK (one specialisation), three runtime N


@triton.jit
def sum_first_n(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < N, other=0.0), axis=0))


@triton.jit
def sum_first_n_bound(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < 3, other=0.0), axis=0))  # N as first launched


def _scalar_args(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    x = torch.arange(1.0, 9.0)
    x_dev, out = _on(device, x, torch.zeros(len(SCALAR_NS)))
    for i, n in enumerate(SCALAR_NS):
        kernel[(1,)](x_dev, out[i:], n, BLOCK=8)
    return out, np.array([x[:n].sum().item() for n in SCALAR_NS], dtype=np.float32)


@triton.jit
def program_ids(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + 1)


@triton.jit
def program_ids_first_only(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + 1, mask=pid < 1)


def _first_launch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    out = torch.zeros(4, dtype=torch.int32, device=device)
    kernel[(4,)](out)  # this kernel's first launch in the process: a cold compile
    return out, np.arange(1, 5, dtype=np.int32)


ASSUME_PROGRAMS, ASSUME_N = 3, 8  # FlagTree #1227's count, small: 3 programs adding 8 each


@triton.jit
def atomic_after_assume(out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid < 0:  # never taken: the assumption holds nowhere it is reached
        tl.assume(N < 0)
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.where(offs < N, 1, 0), axis=0))


@triton.jit
def atomic_after_assume_dropped(out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid < 0:
        tl.assume(N < 0)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.where(offs < 0, 1, 0), axis=0), mask=pid < 0)  # the atomic_add gone


def _assume_branch(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    (out,) = _on(device, torch.zeros(1, dtype=torch.int32))
    kernel[(ASSUME_PROGRAMS,)](out, ASSUME_N, BLOCK=ASSUME_N)
    return out, np.array([ASSUME_PROGRAMS * ASSUME_N], dtype=np.int32)


STORE_N, STORE_TILE = 5, 8  # 5 valid lanes of an 8-lane tile, stored into 5 of an 8-element buffer


@triton.jit
def store_tail(out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs < N)


@triton.jit
def store_tail_one_past(out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs <= N)  # the bound off by one


def _store_tail(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    (buffer,) = _on(device, torch.full((STORE_TILE,), -1.0))  # the tensor is buffer[:N]; the rest its neighbour
    kernel[(1,)](buffer[:STORE_N], STORE_N, BLOCK=STORE_TILE)
    expected = np.full(STORE_TILE, -1.0, dtype=np.float32)
    expected[:STORE_N] = np.arange(STORE_N)
    return buffer, expected


# -- every config of a tuning space alike: row sums of a 5 x 3 tensor, tiles of BLOCK_M rows ---

TUNED_M, TUNED_K, TUNED_CONFIGS = 5, 3, (1, 2, 4)


@triton.jit
def rowsum_tiled(x_ptr, out_ptr, M, K, BLOCK_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * K + k, mask=(m < M) & (k < K), other=0.0)
    tl.store(out_ptr + m, tl.sum(v, axis=1)[:, None], mask=m < M)


@triton.jit
def rowsum_tiled_no_col(x_ptr, out_ptr, M, K, BLOCK_M: tl.constexpr, TILE_K: tl.constexpr):
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    k = tl.arange(0, TILE_K)[None, :]
    v = tl.load(x_ptr + m * K + k, mask=m < M, other=0.0)  # the column condition lost
    tl.store(out_ptr + m, tl.sum(v, axis=1)[:, None], mask=m < M)


def _untimed(kernel_call: Callable[[], Any], quantiles: Any = None, **kw: Any) -> list[float]:
    kernel_call()
    return [0.0, 0.0, 0.0]


def _tuned(device: str, kernel: Any) -> tuple[torch.Tensor, np.ndarray]:
    """The kernel under ``triton.autotune`` over BLOCK_M 1, 2, 4, each config run in turn (the
    tuner's pruning leaves config i): one row of results per config, every row the same sums.
    A rewrite of the kernel (the equivalent-kernel variants, their recorder) is launched with
    each config directly: those compare the kernel's body, not its tuning."""
    x = torch.arange(1.0, TUNED_M * TUNED_K + 1).reshape(TUNED_M, TUNED_K)
    expected = np.tile(x.numpy().sum(axis=1), (len(TUNED_CONFIGS), 1))
    configs = [triton.Config({"BLOCK_M": b}) for b in TUNED_CONFIGS]
    (x_dev,) = _on(device, x)
    rows = []
    for i in range(len(configs)):
        if kernel not in (rowsum_tiled, rowsum_tiled_no_col):  # the variants' recorder and rewrites: config i as is
            out = torch.zeros(TUNED_M, device=device)
            grid = (triton.cdiv(TUNED_M, TUNED_CONFIGS[i]),)
            kernel[grid](x_dev, out, TUNED_M, TUNED_K, BLOCK_M=TUNED_CONFIGS[i], TILE_K=4)
            rows.append(out)
            continue
        tuned = triton.autotune(
            configs=configs,
            key=["M"],
            prune_configs_by={"early_config_prune": lambda cs, nargs, i=i, **kw: [cs[i]]},
            do_bench=_untimed,  # one config left: nothing to time (the plain interpreter has no driver)
        )(kernel)
        out = torch.zeros(TUNED_M, device=device)
        tuned[lambda meta: (triton.cdiv(TUNED_M, meta["BLOCK_M"]),)](x_dev, out, TUNED_M, TUNED_K, TILE_K=4)
        rows.append(out)
    return torch.stack(rows), expected


PROBES: tuple[Probe, ...] = (
    # the seed's table, row for row
    Probe(
        "seed_masked_load",
        _SEED + "tl.load(mask=(n<N)&(k<K), other=0.0)",
        "masked_2d_row_load",
        _seed,
        colsum_masked,
        colsum_masked_no_row,
    ),
    Probe(
        "seed_where_row",
        _SEED + "load + tl.where(n < N, v, 0)",
        "masked_2d_row_load",
        _seed,
        colsum_where,
        colsum_where_dropped,
    ),
    Probe(
        "seed_tile_eq_n",
        f"(N={N}, TILE_N={N}) TILE_N == N (no masked row)",
        "tile_2d_reduce",
        functools.partial(_seed, tile_n=N),
        colsum_masked,
        colsum_masked_half_tree,
    ),
    Probe("seed_row_loop", _SEED + "per-row loop", "runtime_loop", _seed, colsum_rows, colsum_rows_short),
    Probe(
        "tuned_configs_alike",
        f"(M={TUNED_M}, K={TUNED_K}) row sums under autotune, each of BLOCK_M {TUNED_CONFIGS} in turn",
        "tuned_config_miscompiled",
        _tuned,
        rowsum_tiled,
        rowsum_tiled_no_col,
    ),
    Probe("seed_1d_mask", _SEED + "1-D mask / inner-axis mask only", "masked_1d_load", _seed, sum_1d, sum_1d_unmasked),
    # 2-D masked loads
    Probe(
        "load_row_mask",
        _GRID + "tl.load(mask=n<N) row mask only, column sums",
        "masked_2d_row_load",
        _row_mask,
        load_row_mask,
        load_row_mask_dropped,
    ),
    Probe(
        "load_col_mask",
        _GRID + "tl.load(mask=k<K) column mask only, row sums",
        "masked_2d_col_load",
        _col_mask,
        load_col_mask,
        load_col_mask_dropped,
    ),
    Probe(
        "load_mask_other",
        _GRID + "tl.load(mask=(n<N)&(k<K), other=-1), row sums",
        "masked_2d_row_load",
        _both_other,
        load_both_other,
        load_both_other_no_row,
    ),
    Probe(
        "load_other_value",
        f"(8x4 tile, all rows, K={K}) tl.load(mask=(n<8)&(k<K), other=-1), row sums",
        "masked_load_other",
        _col_other,
        load_col_other,
        load_col_other_ignored,
    ),
    Probe(
        "load_flat_mask",
        f"(8x4 tile) tl.load(mask=n*4+k < {FLAT}) not separable, row sums",
        "masked_2d_nonseparable_load",
        _flat_mask,
        load_flat_mask,
        load_flat_mask_rows,
    ),
    # the mask values themselves (row bits), no load involved
    Probe(
        "mask_amp",
        _GRID + "(n<N) & (k<K) as row bits",
        "mask_2d_logic",
        _mask_probe(lambda n, k: (n < N) & (k < K)),
        mask_amp,
        mask_amp_no_row,
    ),
    Probe(
        "mask_pipe",
        _GRID + "(n>=N) | (k>=K) as row bits",
        "mask_2d_logic",
        _mask_probe(lambda n, k: (n >= N) | (k >= K)),
        mask_pipe,
        mask_pipe_no_col,
    ),
    Probe(
        "python_and",
        _GRID + "mask = row_mask and col_mask, as row bits",
        "python_and_or_masks",
        _mask_probe(lambda n, k: (n < N) & (k < K)),
        mask_and,
        mask_and_col_only,
    ),
    Probe(
        "python_and_cols_first",
        _GRID + "mask = k < K and n < N, as row bits",
        "python_and_or_masks",
        _mask_probe(lambda n, k: (n < N) & (k < K)),
        mask_and_cols_first,
        mask_and_row_only,
    ),
    Probe(
        "python_or",
        _GRID + "mask = n >= N or k >= K, as row bits",
        "python_and_or_masks",
        _mask_probe(lambda n, k: (n >= N) | (k >= K)),
        mask_or,
        mask_or_first_only,
    ),
    # stores and partial tiles
    Probe(
        "store_2d_mask",
        _GRID + "tl.store(mask=(n<N)&(k<K)), row sums of the output",
        "masked_2d_store",
        _store,
        store_masked,
        store_unmasked,
        shown=_row_sums,
    ),
    Probe(
        "partial_tiles",
        "(6x5 in 8x8, 4x4 tiles, 2x2 grid) masked copy, row sums of the output",
        "partial_2d_tiles",
        _partial_tiles,
        copy_tiles,
        copy_tiles_store_cols,
        shown=_row_sums,
    ),
    Probe(
        "loop_partial_chunk",
        "(L=10, chunks of 4) loop with a masked last chunk, sum",
        "masked_loop_tail",
        _chunked,
        chunked_sum,
        chunked_sum_tail_unmasked,
    ),
    # reductions over a partial tile
    Probe(
        "sum_partial_row",
        _RED + "tl.sum(axis=1) over masked lanes, other=0",
        "reduce_partial_tile",
        _row_reduce(lambda v: v.sum(axis=1)),
        row_sum,
        row_sum_half_tree,
    ),
    Probe(
        "max_partial_row",
        _RED + "tl.max(axis=1) over masked lanes, other=-inf",
        "reduce_partial_tile",
        _row_reduce(lambda v: v.max(axis=1)),
        row_max,
        row_max_half_tree,
    ),
    Probe(
        "argmax_ties",
        f"(4x8 tile, K={TIES_K}) tl.argmax(axis=1) with ties",
        "argmax_tie_break",
        _ties,
        row_argmax,
        row_argmax_last,
    ),
    Probe(
        "max_index_ties",
        f"(4x8 tile, K={TIES_K}) tl.max(axis=1, return_indices=True) with ties",
        "argmax_tie_break",
        _ties,
        row_max_index,
        row_max_index_last,
    ),
    Probe(
        "min_index_ties",
        f"(4x8 tile, K={TIES_K}) tl.min(axis=1, return_indices=True) with ties, other=+inf",
        "argmax_tie_break",
        _min_ties,
        row_min_index,
        row_min_index_last,
    ),
    Probe(
        "max_partial_rows",
        _GRID4 + "tl.max(axis=0), mask=(n<N)&(k<K), other=-inf",
        "masked_2d_row_load",
        _col_reduce(lambda v: v.max(axis=0), torch.float32),
        col_max,
        col_max_no_row,
    ),
    Probe(
        "argmax_partial_rows",
        _GRID4 + "tl.max(axis=0, return_indices=True) with ties, rows past N larger",
        "masked_2d_row_load",
        _col_reduce(lambda v: v.argmax(axis=0).astype(np.int32), torch.int32),
        col_argmax,
        col_argmax_no_row,
    ),
    # the op families beyond the reductions: a scan's carry, a matmul's K tail
    Probe(
        "scan_rows_carry",
        f"(8x4 tile, N={SCAN_N}, K={SCAN_K}) tl.cumsum(axis=0) over masked rows and the carry "
        "tl.sum(axis=0), rows past N hold 100",
        "masked_2d_row_load",
        _scan,
        scan_rows_carry,
        scan_rows_carry_no_row,
        shown=lambda r: r[-1],
    ),
    Probe(
        "dot_k_tail",
        f"({DOT}x{DOT} tiles, K={DOT_K}) tl.dot, B loaded under (k<K)&(n<N), B's rows past K hold inf",
        "masked_2d_row_load",
        _dot,
        dot_k_tail,
        dot_k_tail_no_row,
        shown=lambda r: r.sum(axis=1)[:4],
    ),
    Probe(
        "welford_rows",
        f"({WELFORD_M}x{WELFORD_TILE} tile, K={WELFORD_K}) tl.reduce((mean, count, M2), axis=1, "
        "Welford merge): each row's variance",
        "tuple_reduce_rows",
        _welford,
        welford_rows,
        welford_rows_no_count,
    ),
    Probe(
        "scan_tuple_ties",
        f"({SCAN_TILE} lanes, {SCAN_TIES.size} valid) tl.associative_scan((v, i), 0, max with "
        "ties to the later index), other=-inf",
        "scan_tuple_combine",
        _scan_ties,
        scan_tuple_ties,
        scan_tuple_ties_first,
        shown=lambda r: r[SCAN_TILE : SCAN_TILE + 8],
    ),
    # precision, custom combine, offsets
    Probe(
        "fp16_sum_fp32",
        "(16 lanes, 8 valid) fp16 load .to(fp32), tl.sum",
        "half_accumulation",
        _half("float16"),
        half_sum,
        half_sum_in_half,
    ),
    Probe(
        "bf16_sum_fp32",
        "(16 lanes, 8 valid) bf16 load .to(fp32), tl.sum",
        "half_accumulation",
        _half("bfloat16"),
        half_sum,
        half_sum_in_half,
        needs=("bf16",),
    ),
    Probe(
        "reduce_custom_combine",
        f"(16 lanes, {PROD_VALID} valid) tl.reduce(v, 0, a*b), other=1",
        "custom_reduce_combine",
        _prod,
        reduce_prod,
        reduce_prod_half_tree,
    ),
    Probe(
        "grid_axes_yz",
        f"(1, {GRID_Y}, {GRID_Z}) grid ({GRID_Y_INTERPRETED} on the interpreter): programs, max y per z",
        "grid_axes",
        _grid_yz,
        grid_yz,
        grid_yz_folded,
    ),
    Probe(
        "scalar_args_each_launch",
        f"(one BLOCK, N = {', '.join(map(str, SCALAR_NS))} in turn) masked sum of the first N",
        "scalar_bound_at_first_launch",
        _scalar_args,
        sum_first_n,
        sum_first_n_bound,
    ),
    Probe(
        "first_launch",
        "(4 programs, a kernel's first launch) each program stores pid + 1",
        "cold_first_launch",
        _first_launch,
        program_ids,
        program_ids_first_only,
    ),
    Probe(
        "atomic_after_assume",
        f"({ASSUME_PROGRAMS} programs) tl.assume in a never-taken if, then tl.atomic_add of "
        f"{ASSUME_N} each (FlagTree #1227: 3072 -> 0)",
        "equivalent_kernels_differ",
        _assume_branch,
        atomic_after_assume,
        atomic_after_assume_dropped,
    ),
    Probe(
        "store_past_tensor",
        f"({STORE_N} valid of {STORE_TILE} lanes) tl.store(mask=offs < N) into the first "
        f"{STORE_N} elements of an {STORE_TILE}-element buffer: the rest untouched",
        "store_past_tensor",
        _store_tail,
        store_tail,
        store_tail_one_past,
    ),
    Probe(
        "int64_offsets",
        "(int8, 3 programs) offsets pid * (2**30+3) past 2**31",
        "int64_offset_arith",
        _int64,
        int64_offsets,
        int64_offsets_wrapped,
        needs=("int64",),
        hardware_only=True,
    ),
)

BY_ID: dict[str, Probe] = {p.id: p for p in PROBES}
