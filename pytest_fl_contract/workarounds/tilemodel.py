"""The fast path's tiles, from the problem's size and the device: a time model in plain
Python (no Triton), so the report header and tests can ask it without a compiler."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """What the tile model needs of a device, and where each figure came from."""

    sms: int
    bandwidth: float  # bytes per second
    source: str


ASSUMED = Device(sms=32, bandwidth=1.0e12, source="assumed: 32 SMs, 1 TB/s (the device module reports neither)")


@functools.lru_cache(maxsize=16)
def device_info(device_type: str, index: int = 0) -> Device:
    """SM count and memory bandwidth of a device, read through torch.<device_type> (the
    platform's device module, not torch.cuda alone).  What could not be read is assumed and
    said so: ``source`` goes into the report header."""
    import torch

    module = getattr(torch, device_type, None)
    try:
        props = module.get_device_properties(index)  # type: ignore[union-attr]
        sms = int(props.multi_processor_count)
    except Exception:
        return ASSUMED
    clock = getattr(props, "memory_clock_rate", 0) or 0  # kHz
    bus = getattr(props, "memory_bus_width", 0) or 0  # bits
    name = getattr(props, "name", device_type)
    if clock and bus:
        bandwidth = 2 * clock * 1e3 * bus / 8  # double data rate
        return Device(sms, bandwidth, f"{name}: {sms} SMs, {bandwidth / 1e12:.2f} TB/s (read from torch.{device_type})")
    return Device(sms, ASSUMED.bandwidth * sms / ASSUMED.sms,
                  f"{name}: {sms} SMs (read from torch.{device_type}), bandwidth assumed "
                  f"{ASSUMED.bandwidth * sms / ASSUMED.sms / 1e12:.2f} TB/s (not reported)")  # fmt: skip


@dataclass(frozen=True)
class Plan:
    block_r: int
    block_k: int
    warps: int
    splits: int


# The time model's constants, each a property of the hardware class, not of a shape:
TILE_ELEMENTS = 1024  # a program's tile: 8 fp32 accumulators a thread at 4 warps, so 8 programs fit an SM
PROGRAMS_PER_SM = 8  # programs an SM runs at once with such tiles (32 of its 64 warps)
STEP = 0.4e-6  # seconds a step of the row loop costs a program: loads pipelined, about half a latency
LATENCY = 1.0e-6  # seconds from issuing a load to its data (a tail step: a branch waits for its load)
LAUNCH = 25.0e-6  # host seconds of one launch through FlagGems' launch cache (measured 5-40 us by host CPU)


def cdiv(a: int, b: int) -> int:
    """Host ceil-division (``triton.cdiv`` goes through a JIT wrapper: microseconds a call)."""
    return -(-a // b)


@functools.lru_cache(maxsize=4096)
def tiles(M: int, N: int, K: int, device: Device, elem: int = 4, kind: str = "reduce") -> Plan:
    """The tiles of a non-inner reduction, from the problem's size and the device.

    Memory-bound work whose programs each walk the rows of a column block.  Small tiles
    (TILE_ELEMENTS) keep many programs in flight on each SM, which is how a GPU hides
    load latency; the row loop's loads are software-pipelined, its binary tail is not (a
    branch per set bit of ``N % BLOCK_R``, each waiting for its load).
    - Columns: as wide as K allows up to 1024 elements (2 KB a row for softmax, whose
      per-column statistics live in registers), narrowed while the grid has fewer than two
      programs per SM, never under a 128-byte row segment (one coalesced transaction)
      unless K itself is shorter.
    - Rows per step: what is left of the tile, at most N (no partial row block to mask).
      Short rows (small K) so take up to a thousand rows a step.
    - Splits of the rows (a second launch combines them in a fixed order): the number
      that minimises the time, max(host launches, GPU waves x (steps x STEP + tail x
      LATENCY), the input over the bandwidth).  A launch costs host time whatever the
      kernel does, so a small problem keeps one launch.  One launch is also never dearer
      than the moved-axis path (a copy, then its kernel), so no shape goes there for speed."""
    cap = 1024 if kind == "reduce" else 2048 // elem
    block_k = min(cap, 1 << (max(K, 1) - 1).bit_length())
    floor_k = min(block_k, max(128 // elem, 1))
    while block_k > floor_k and M * cdiv(K, block_k) < 2 * device.sms:
        block_k //= 2
    programs = M * cdiv(K, block_k)
    rows = max(1, min(TILE_ELEMENTS // block_k, max(N, 1)))
    block_r = 1 << (rows.bit_length() - 1)
    floor = M * N * K * elem / device.bandwidth

    def cost(splits: int) -> float:
        waves = cdiv(programs * splits, PROGRAMS_PER_SM * device.sms)
        rows_each = cdiv(N, splits)
        steps, tail = rows_each // block_r, bin(rows_each % block_r).count("1")
        gpu = max(waves * (steps * STEP + (tail + 1) * LATENCY), floor)
        launches = 1 if splits == 1 else 2
        return max(launches * LAUNCH, gpu + (launches - 1) * LATENCY)

    candidates = [1 << i for i in range(0, 13) if (1 << i) * block_r <= max(N, 1)]
    splits = min(candidates, key=lambda s: (cost(s), s))
    return Plan(block_r, block_k, 4, splits)
