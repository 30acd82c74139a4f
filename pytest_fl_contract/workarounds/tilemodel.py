"""The fast path's tiles, from the problem's size and the device: a time model in plain
Python (no Triton), so the report header and tests can ask it without a compiler."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from ..registry.schema import GRID_LIMITS


@dataclass(frozen=True)
class Device:
    """What the tile model needs of a device, and where each figure came from."""

    sms: int
    bandwidth: float  # bytes per second
    source: str
    threads_per_sm: int = 2048  # what CUDA-class GPUs since sm_80 hold; read where reported
    regs_per_sm: int = 65536


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
    occupancy = {
        "threads_per_sm": int(getattr(props, "max_threads_per_multi_processor", 0) or 2048),
        "regs_per_sm": int(getattr(props, "regs_per_multiprocessor", 0) or 65536),
    }
    clock = getattr(props, "memory_clock_rate", 0) or 0  # kHz
    bus = getattr(props, "memory_bus_width", 0) or 0  # bits
    name = getattr(props, "name", device_type)
    if clock and bus:
        bandwidth = 2 * clock * 1e3 * bus / 8  # double data rate
        return Device(
            sms,
            bandwidth,
            f"{name}: {sms} SMs, {bandwidth / 1e12:.2f} TB/s (read from torch.{device_type})",
            **occupancy,
        )
    return Device(
        sms,
        ASSUMED.bandwidth * sms / ASSUMED.sms,
        f"{name}: {sms} SMs (read from torch.{device_type}), bandwidth assumed "
        f"{ASSUMED.bandwidth * sms / ASSUMED.sms / 1e12:.2f} TB/s (not reported)",
        **occupancy,
    )


@dataclass(frozen=True)
class Plan:
    """Rows a step, columns a program, warps, splits of the rows (a second launch), and how
    columns are blocked."""

    block_r: int
    block_k: int
    warps: int
    splits: int
    flat: bool = False  # column blocks of the flattened (M, K) output (K < block_k), not per m


# The time model's constants, each a property of the hardware class, not of a shape:
# Elements a program's tile holds: 8 a thread at 4 warps.  Measured on an H200 over 18 drawn
# problems (benchmarks/results/h200-plan-grid-*): 2048- and 4096-element tiles ran 1.2 - 3.3x
# slower than 1024 (softmax worst: a thread's share lives in registers, more of it spills or
# lowers residency), in no case faster by more than 4%.
TILES = (1024,)
LATENCY = 1.0e-6  # seconds from issuing a load to its data on a busy device: a row step waits for its load
L2_LATENCY = 0.3e-6  # the same for data the previous launch just wrote, still in L2 (~500 cycles at 1.7 GHz)
EFFICIENCY = 0.88  # share of the nominal bandwidth a streaming kernel reaches (an H200's copy: 4.25 of 4.81 TB/s)
BASE_REGS = 32  # registers a thread holds besides its share of the tile (indices, pointers, loop state)
MAX_PROGRAMS = 32  # resident programs (thread blocks) an SM takes at most
LAUNCH = 25.0e-6  # host seconds of one launch through FlagGems' launch cache (measured 5-40 us by host CPU)
FLAT_SOFTMAX_COST = 3.0  # softmax over flattened blocks, same tiles: 2.5 - 3.4x slower on an H200 (see ``tiles``)
OPEN = 32  # bytes a contiguous run costs beyond its own: one 32-byte sector, the unit DRAM and L2 move
# Columns a block takes at most (by kind and element size) where the rows fill NARROW_STEPS
# row steps of a tile at that width.  On an H200 the taller, narrower tile of the same elements
# ran faster where the terms above price the two alike or the wide one lower: a wide block gives
# fewer programs, each walking more row steps.  With fewer rows, programs of a step or two each
# ran slower than the wide plan (a program's own cost, which the model does not price), hence
# NARROW_STEPS.  Half-precision sums and means at 128 columns came out even over an A/B, and one
# on a fresh seed ran slower than native under the cap: no cap for them.  The figures: results
# README, "Narrow blocks" and "Figures formerly in docstrings".
NARROW = {(kind, elem): cols for kind, elem, cols in (("reduce", 4, 128), ("softmax", 4, 64), ("softmax", 2, 64))}
NARROW_STEPS = 4


def cdiv(a: int, b: int) -> int:
    """Host ceil-division (``triton.cdiv`` goes through a JIT wrapper: microseconds a call)."""
    return -(-a // b)


def _pow2_at_most(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def resident(plan: Plan, device: Device, kind: str = "reduce") -> int:
    """Programs of this plan an SM holds at once: its threads, its registers (a thread keeps
    its share of the tile in fp32: the sum's accumulator and loaded value, softmax's value,
    exponent and loaded value), or the SM's program limit, whichever binds first."""
    threads = plan.warps * 32
    regs = BASE_REGS + plan.block_r * plan.block_k / threads * (2 if kind == "reduce" else 3)
    return max(1, min(device.threads_per_sm // threads, int(device.regs_per_sm // (threads * regs)), MAX_PROGRAMS))


def programs(M: int, K: int, plan: Plan) -> int:
    """Programs of a plan's launch on grid axis x (times ``splits`` on z)."""
    return cdiv(M * K, plan.block_k) if plan.flat else M * cdiv(K, plan.block_k)


def cost(
    M: int, N: int, K: int, plan: Plan, device: Device, elem: int = 4, kind: str = "reduce", latency_s: float = LATENCY
) -> tuple[float, float]:
    """(time, GPU time) of a plan in seconds, as the model sees it.

    Time is the larger of the host's launches and the GPU's work.  The GPU's work has two
    limits.  Latency: each program walks its rows one step at a time and a step waits for
    its load (LATENCY, plus its bytes at the SM's share of the bandwidth); programs run in
    waves of what the SMs hold (``resident``), so the bytes in flight, not the tile, set the
    pace (Little's law: too few programs cannot fill the memory system however wide each
    is).  Bandwidth: the bytes over what the device streams, each contiguous run paying
    OPEN bytes' time to start.  Near where the two meet neither is reached, so they
    are combined as a soft maximum (a 4-norm).  Softmax walks its rows twice (statistics,
    then values) and writes as much as it reads.  ``latency_s``: a load's latency, L2's for
    a launch that reads what the one before it wrote."""
    passes, traffic = (2, 3) if kind == "softmax" else (1, 1)
    waves = cdiv(programs(M, K, plan) * plan.splits, resident(plan, device, kind) * device.sms)
    rows_each = cdiv(N, plan.splits)
    steps, tail = rows_each // plan.block_r, bin(rows_each % plan.block_r).count("1")
    # a step reads, per m its columns touch, one contiguous run: block_r whole rows where
    # the block spans whole rows (K <= block_k), else block_k elements of each row
    run = (plan.block_r * K if plan.block_k >= K else plan.block_k) * elem
    lanes = min(K, plan.block_k) if not plan.flat else min(M * K, plan.block_k)
    share = run / (run + OPEN)  # of the bandwidth a run gets
    step = latency_s + plan.block_r * lanes * elem / share / (device.bandwidth / device.sms)
    latency = waves * passes * (steps * step + (tail + 1) * latency_s)
    moved = traffic * M * N * K * elem / share
    chained = 0.0  # after the split launch, what must wait for all of it
    if plan.splits > 1 and kind == "softmax":
        # (max, sum) of every split written, then every program merges every split's, a load
        # at a time from L2 (each waits for the one before: the merge is in split order)
        moved += 2 * plan.splits * M * K * 4 + 2 * plan.splits * plan.splits * M * K * 4
        latency += waves * 2 * plan.splits * L2_LATENCY
    elif plan.splits > 1:  # fp32 partials written, then a second launch reduces (1, splits, M * K)
        moved += plan.splits * M * K * 4
        chained = cost(1, plan.splits, M * K, second_plan(plan.splits, M * K, device), device, latency_s=L2_LATENCY)[1]
    floor = moved / (device.bandwidth * EFFICIENCY)
    gpu = (latency**4 + floor**4) ** 0.25
    if plan.flat and kind == "softmax":
        gpu *= FLAT_SOFTMAX_COST
    launches = 1 if plan.splits == 1 else 2
    gpu += (launches - 1) * LATENCY + chained
    return max(launches * LAUNCH, gpu), gpu


def second_plan(splits: int, MK: int, device: Device) -> Plan:
    """The plan of a split reduction's second launch: (1, splits, M * K) fp32 partials, one
    launch (its kernel has no splits of its own)."""
    plan = tiles(1, splits, MK, device, 4, "reduce", one_launch=True)
    assert plan is not None  # launchable() checked its grid for the first launch's plan
    return plan


def _widest(K: int, kind: str, elem: int) -> int:
    cap = 1024 if kind == "reduce" else 2048 // elem
    return min(cap, 1 << (max(K, 1) - 1).bit_length())


def launchable(M: int, K: int, plan: Plan, kind: str = "reduce") -> bool:
    """The plan's grids fit the device's launch limits: (column blocks of the M * K output,
    1, splits) and, for a reduction split over rows, the second launch's (column blocks of
    the M * K fp32 partials,)."""
    x, _, z = GRID_LIMITS
    if programs(M, K, plan) > x or plan.splits > z:
        return False
    return kind != "reduce" or plan.splits == 1 or cdiv(M * K, _widest(M * K, kind, 4)) <= x


@functools.lru_cache(maxsize=4096)
def tiles(
    M: int, N: int, K: int, device: Device, elem: int = 4, kind: str = "reduce", one_launch: bool = False
) -> Plan | None:
    """The tiles of a non-inner reduction: the plan of least modelled time (``cost``).

    Memory-bound work whose programs each walk the rows of a block of output columns (the
    (M, K) output flattened, so a block may span several m).  Searched:
    - Columns: powers of two up to what M * K needs (at most 1024 elements, 2 KB a row for
      softmax, whose per-column statistics live in registers).  Narrow blocks give more
      programs (a small problem's only parallelism) and pay in short contiguous runs.  A
      block wider than K takes several m (``flat``), or one m with lanes idle; flat loads
      cannot be proven contiguous, which a sum does not feel (memory-bound) and softmax
      does (FLAT_SOFTMAX_COST: exp and three memory operations an element, issued singly).
    - Rows per step: what the tile (TILES) leaves, at most N (no partial row block to mask).
    - Splits of the rows (a second launch combines them in a fixed order, and waits for the
      first: its own walk over the partials is part of the plan's cost).  A launch costs
      host time whatever the kernel does, so a small problem keeps one launch.  One launch
      is also never dearer than the moved-axis path (a copy, then its kernel), so no shape
      goes there for speed.
    Where K and the rows fill NARROW_STEPS tiles at NARROW columns, no wider block is weighed (the
    second launch's own plan keeps every width: the split plans were timed with it).
    Ties go to less GPU time, then wider columns, then fewer splits.  Plans whose grids the
    device cannot launch (``launchable``) are not candidates; None when no plan is (more
    than 2**31 - 1 column blocks of the widest tile): the caller takes the moved axis."""
    plans = [plan for plan in candidates(M, N, K, elem, kind) if not (one_launch and plan.splits > 1)]
    best: tuple[tuple[float, float, int, int], Plan] | None = None
    for plan in plans if one_launch else weighed(N, K, elem, kind, plans):
        total, gpu = cost(M, N, K, plan, device, elem, kind)
        key = (total, gpu, -plan.block_k, plan.splits)
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1] if best is not None else None


def too_wide(N: int, K: int, plan: Plan, elem: int, kind: str) -> bool:
    """A block wider than NARROW columns where K has the columns and N the rows for
    NARROW_STEPS steps of a tile at NARROW."""
    cap = NARROW.get((kind, elem))
    return cap is not None and plan.block_k > cap and K >= cap and N * cap >= NARROW_STEPS * min(TILES)


def weighed(N: int, K: int, elem: int, kind: str, plans: list[Plan]) -> list[Plan]:
    """Of ``plans``, those ``tiles`` weighs: none too wide where a narrower one is there."""
    return [plan for plan in plans if not too_wide(N, K, plan, elem, kind)] or plans


def _warps(tile: int) -> int:
    """4 warps up to 2048 elements, 8 at 4096, 16 above: 8 - 16 elements a thread (FlagGems'
    own non-inner softmax takes 16 warps for its 8192-element tiles)."""
    return 4 if tile <= 2048 else 8 if tile <= 4096 else 16


def candidates(M: int, N: int, K: int, elem: int = 4, kind: str = "reduce") -> Iterator[Plan]:
    """Every launchable plan ``tiles`` weighs (``benchmarks/plan_grid.py`` times them)."""
    widest = _widest(M * K, kind, elem)
    for block_k in (1 << i for i in range(widest.bit_length())):
        # wider than K: blocks of the flattened output, and for the first such width also
        # per m with idle lanes (softmax's vector loads need it; see FLAT_SOFTMAX_COST); not
        # wider: per m, or flattened where M blocks per m would pass grid axis x
        modes: tuple[bool, ...]
        if block_k <= K:
            modes = (False,) if M * cdiv(K, block_k) <= GRID_LIMITS[0] else (True,)
        else:
            modes = (True, False) if block_k < 2 * K else (True,)
        for flat, tile in itertools.product(modes, TILES):
            block_r = _pow2_at_most(min(max(1, tile // block_k), max(N, 1)))
            for splits in (1 << i for i in range(13)):
                if splits > 1 and splits * block_r > N:
                    break
                plan = Plan(block_r, block_k, _warps(block_r * block_k), splits, flat)
                if launchable(M, K, plan, kind):
                    yield plan


# Tiny K: a slab plan (``fastpath.SlabReduce``/``SlabSoftmax``) reads each m's rows as one
# contiguous run, BLOCK elements a step, whatever K is (K a constexpr, at most SLAB_K_MAX).
SLAB_K_MAX = 16
SLAB_BLOCKS = (1024, 2048, 4096)
SLAB_LATENCY = 0.25e-6  # a slab step's wait: its loads do not wait on the previous step's, so they overlap (fit, see results README)
SLAB_SM_BANDWIDTH = (
    150e9  # bytes a second one program streams on an otherwise idle SM (H200 fit); the device's sum bounds many
)
SLAB_FOLD = 0.4e-6  # a program's fold of its lanes per k (a block-wide reduction each), softmax three times (fit, results README)
SLAB_SPLIT_ROWS = 64  # rows a split holds at least (and a multiple of: ``slab_rows``)


@dataclass(frozen=True)
class SlabPlan:
    """Elements a step (a power of two, 8 a thread) and splits of the rows."""

    block: int
    splits: int

    @property
    def warps(self) -> int:
        return max(4, min(16, self.block // 256))


def split_rows(N: int, splits: int, block_r: int) -> tuple[int, int]:
    """(rows a split, splits launched) of a tiled plan: whole BLOCK_R blocks, and a multiple
    of 64 so Triton specialises the argument as 16-divisible (measured: 244-row chunks ran
    3.7x slower than 256 on bf16)."""
    align = max(block_r, 64)
    rows = cdiv(cdiv(N, splits), align) * align
    return rows, cdiv(N, rows)


def slab_rows(N: int, splits: int) -> tuple[int, int]:
    """(rows a split, splits launched): whole multiples of SLAB_SPLIT_ROWS rows."""
    if splits == 1:
        return N, 1
    rows = cdiv(cdiv(N, splits), SLAB_SPLIT_ROWS) * SLAB_SPLIT_ROWS
    return rows, cdiv(N, rows)


def slab_candidates(M: int, N: int, K: int, kind: str = "reduce") -> Iterator[SlabPlan]:
    """Every launchable slab plan of a (M, N, K) problem, K <= SLAB_K_MAX: M programs on grid
    axis x (times the splits on z), and a split's rows at least SLAB_SPLIT_ROWS."""
    x, _, z = GRID_LIMITS
    if not 1 <= K <= SLAB_K_MAX or M > x:
        return
    for block in SLAB_BLOCKS:
        for splits in (1 << i for i in range(13)):
            if splits > 1 and (cdiv(N, splits) < SLAB_SPLIT_ROWS or splits > z):
                break
            if kind == "reduce" and splits > 1 and cdiv(M * K, _widest(M * K, kind, 4)) > x:
                break
            yield SlabPlan(block, splits)


def slab_cost(
    M: int, N: int, K: int, plan: SlabPlan, device: Device, elem: int = 4, kind: str = "reduce"
) -> tuple[float, float]:
    """(time, GPU time) of a slab plan, as ``cost`` prices a tiled one: a program's steps
    each wait for one contiguous run of (BLOCK // K) * K elements; splits pay the partials'
    second launch (a reduction) or every program's merge of every split's statistics
    (softmax, in split order from L2)."""
    passes, traffic = (2, 3) if kind == "softmax" else (1, 1)
    rows, splits = slab_rows(N, plan.splits)
    threads = plan.warps * 32
    regs = BASE_REGS + plan.block / threads * (2 if kind == "reduce" else 3)
    held = max(1, min(device.threads_per_sm // threads, int(device.regs_per_sm // (threads * regs)), MAX_PROGRAMS))
    waves = cdiv(M * splits, held * device.sms)
    run = (plan.block // K) * K * elem
    steps = cdiv(rows * K * elem, run)
    step = SLAB_LATENCY + run / SLAB_SM_BANDWIDTH
    latency = waves * (passes * (steps + 1) * step + K * SLAB_FOLD * (3 if kind == "softmax" else 1))
    moved = traffic * M * N * K * elem
    chained = 0.0
    if splits > 1 and kind == "softmax":
        moved += 2 * splits * M * K * 4
        latency += waves * 2 * splits * L2_LATENCY
    elif splits > 1:
        moved += splits * M * K * 4
        chained = cost(1, splits, M * K, second_plan(splits, M * K, device), device, latency_s=L2_LATENCY)[1]
    gpu = (latency**4 + (moved / (device.bandwidth * EFFICIENCY)) ** 4) ** 0.25
    launches = 1 if splits == 1 else 2
    gpu += (launches - 1) * LATENCY + chained
    return max(launches * LAUNCH, gpu), gpu


@functools.lru_cache(maxsize=4096)
def slabs(M: int, N: int, K: int, device: Device, elem: int = 4, kind: str = "reduce") -> SlabPlan | None:
    """The slab plan of least modelled time (ties: less GPU time, fewer splits, narrower
    steps), or None where K is past SLAB_K_MAX or no slab plan is launchable."""
    best: tuple[tuple[float, float, int, int], SlabPlan] | None = None
    for plan in slab_candidates(M, N, K, kind):
        total, gpu = slab_cost(M, N, K, plan, device, elem, kind)
        key = (total, gpu, plan.splits, plan.block)
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1] if best is not None else None


def pick(M: int, N: int, K: int, device: Device, elem: int = 4, kind: str = "reduce") -> Plan | SlabPlan | None:
    """The fast path's plan: the tiles' or, where K is tiny (at most SLAB_K_MAX), a slab
    plan where the model prices it lower (time, then GPU time).  Slabs win long runs per m:
    a tile spends lanes on padded k and reads 2 - 32-byte runs; tiles win many short m,
    where a slab program's fold per k outweighs its few steps."""
    tiled = tiles(M, N, K, device, elem, kind)
    slab = slabs(M, N, K, device, elem, kind)
    if slab is None or tiled is None:
        return slab or tiled
    return slab if slab_cost(M, N, K, slab, device, elem, kind) <= cost(M, N, K, tiled, device, elem, kind) else tiled
