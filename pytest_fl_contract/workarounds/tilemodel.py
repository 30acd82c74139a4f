"""The fast path's tiles, from the problem's size and the device: a time model in plain
Python (no Triton), so the report header and tests can ask it without a compiler."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..ops import GRID_LIMITS


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
    """Rows a step, columns a program, warps, and splits of the rows (a second launch)."""

    block_r: int
    block_k: int
    warps: int
    splits: int


# The time model's constants, each a property of the hardware class, not of a shape:
TILES = (1024, 2048, 4096)  # elements a program's tile may hold (fp32 accumulators: 8 - 32 a thread at 4 warps)
SLOTS = 8 * 1024  # tile elements an SM keeps in flight: 8 programs of 1024, 2 of 4096
STEP = 0.4e-6  # seconds a step of the row loop costs a program: loads pipelined, about half a latency
LATENCY = 1.0e-6  # seconds from issuing a load to its data (a tail step: a branch waits for its load)
LAUNCH = 25.0e-6  # host seconds of one launch through FlagGems' launch cache (measured 5-40 us by host CPU)
SECTOR = 32  # bytes of the smallest memory transaction: a narrower row segment wastes the rest


def cdiv(a: int, b: int) -> int:
    """Host ceil-division (``triton.cdiv`` goes through a JIT wrapper: microseconds a call)."""
    return -(-a // b)


def _pow2_at_most(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def cost(M: int, N: int, K: int, plan: Plan, device: Device, elem: int = 4, kind: str = "reduce") -> tuple[float, float]:
    """(time, GPU time) of a plan in seconds, as the model sees it.

    Time is the larger of the host's launches and the GPU's work; the GPU's work is the
    larger of latency (waves of programs, each a chain of pipelined row steps and one
    unpipelined step per tail branch) and bandwidth (bytes over the device's bandwidth,
    less what row segments narrower than a sector waste).  Softmax walks its rows twice
    (statistics, then values) and writes as much as it reads."""
    passes, traffic = (2, 3) if kind == "softmax" else (1, 1)
    programs = M * cdiv(K, plan.block_k) * plan.splits
    per_sm = max(1, SLOTS // (plan.block_r * plan.block_k))
    waves = cdiv(programs, per_sm * device.sms)
    rows_each = cdiv(N, plan.splits)
    steps, tail = rows_each // plan.block_r, bin(rows_each % plan.block_r).count("1")
    sector = 1.0 if plan.block_k >= K else min(1.0, plan.block_k * elem / SECTOR)
    floor = traffic * M * N * K * elem / (device.bandwidth * sector)
    gpu = max(waves * passes * (steps * STEP + (tail + 1) * LATENCY), floor)
    launches = 1 if plan.splits == 1 else 2
    gpu += (launches - 1) * LATENCY
    return max(launches * LAUNCH, gpu), gpu


def _widest(K: int, kind: str, elem: int) -> int:
    cap = 1024 if kind == "reduce" else 2048 // elem
    return min(cap, 1 << (max(K, 1) - 1).bit_length())


def launchable(M: int, K: int, plan: Plan, kind: str = "reduce") -> bool:
    """The plan's grids fit the device's launch limits: (M, column blocks, splits) and, for
    a reduction split over rows, the second launch's (1, column blocks of M * K fp32 partials)."""
    x, y, z = GRID_LIMITS
    if M > x or cdiv(K, plan.block_k) > y or plan.splits > z:
        return False
    return kind != "reduce" or plan.splits == 1 or cdiv(M * K, _widest(M * K, kind, 4)) <= y


@functools.lru_cache(maxsize=4096)
def tiles(M: int, N: int, K: int, device: Device, elem: int = 4, kind: str = "reduce") -> Plan | None:
    """The tiles of a non-inner reduction: the plan of least modelled time (``cost``).

    Memory-bound work whose programs each walk the rows of a column block.  Searched:
    - Columns: powers of two up to what K needs (at most 1024 elements, 2 KB a row for
      softmax, whose per-column statistics live in registers).  Narrow blocks give more
      programs (a small problem's only parallelism) and pay in sectors half read.
    - Tile size (TILES): small tiles keep many programs in flight on each SM, which is how
      a GPU hides load latency; large ones take fewer steps.  Rows per step are what the
      tile leaves, at most N (no partial row block to mask).
    - Splits of the rows (a second launch combines them in a fixed order).  A launch costs
      host time whatever the kernel does, so a small problem keeps one launch.  One launch
      is also never dearer than the moved-axis path (a copy, then its kernel), so no shape
      goes there for speed.
    Ties go to less GPU time, then wider columns, then fewer splits.  Plans whose grids the
    device cannot launch (``launchable``) are not candidates; None when no plan is (more than
    65535 column blocks of the widest tile): the caller takes the moved axis, whose inner
    kernel puts every row on grid axis x."""
    widest = _widest(K, kind, elem)
    best: tuple[tuple[float, float, int, int], Plan] | None = None
    for block_k in (1 << i for i in range(widest.bit_length())):
        for tile in TILES:
            block_r = _pow2_at_most(min(max(1, tile // block_k), max(N, 1)))
            for splits in (1 << i for i in range(13)):
                if splits > 1 and splits * block_r > N:
                    break
                plan = Plan(block_r, block_k, 4 if block_r * block_k <= 2048 else 8, splits)
                if not launchable(M, K, plan, kind):
                    continue
                total, gpu = cost(M, N, K, plan, device, elem, kind)
                key = (total, gpu, -block_k, splits)
                if best is None or key < best[0]:
                    best = (key, plan)
    return best[1] if best is not None else None
