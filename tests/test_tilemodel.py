"""The fast path's tile model: pure functions of the problem and the device, checked over
drawn shapes (its invariants), and the device figures it reads or says it assumed."""

from __future__ import annotations

import types

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_fl_contract.workarounds import tilemodel as tm

H200 = tm.Device(132, 4.8e12, "test: H200-like")
SMALL = tm.Device(16, 0.4e12, "test: a 16-SM part")

# small sizes, anything up to 4M, and powers of two +/- 1 (tile boundaries)
sizes = st.one_of(
    st.integers(1, 64), st.integers(1, 1 << 22), st.sampled_from([2**k + d for k in range(1, 20) for d in (-1, 0, 1)])
)


@settings(max_examples=400, deadline=None)
@given(
    M=sizes,
    N=sizes,
    K=sizes,
    elem=st.sampled_from([2, 4]),
    kind=st.sampled_from(["reduce", "softmax"]),
    device=st.sampled_from([H200, SMALL]),
)
@example(M=4194304, N=1, K=523265, elem=2, kind="reduce", device=H200)  # per m past axis x, flat within it
def test_tiles_hold_their_invariants(M, N, K, elem, kind, device):
    plan = tm.tiles(M, N, K, device, elem, kind)
    if plan is None:  # an output of more than 2**31 - 1 blocks of the widest tile (terabytes)
        assert tm.cdiv(M * K, 1024 if kind == "reduce" else 2048 // elem) > tm.GRID_LIMITS[0]
        return
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    assert pow2(plan.block_r) and pow2(plan.block_k) and pow2(plan.splits)
    assert plan.block_r <= N, "a row block never reaches past the rows (no row mask exists to cut it)"
    assert plan.block_r * plan.block_k <= max(tm.TILES)
    assert plan.block_r * plan.splits <= N, "every split holds at least one whole row block"
    assert plan.block_k <= (1024 if kind == "reduce" else 2048 // elem)
    assert plan.block_k <= 1 << (M * K - 1).bit_length(), "no column block wider than the M * K output needs"
    total, gpu = tm.cost(M, N, K, plan, device, elem, kind)
    one = tm.Plan(plan.block_r, plan.block_k, plan.warps, 1, plan.flat)
    assert plan.splits == 1 or total <= tm.cost(M, N, K, one, device, elem, kind)[0], "a split pays for its launch"
    assert not tm.too_wide(N, K, plan, elem, kind) or all(
        tm.too_wide(N, K, p, elem, kind) for p in tm.candidates(M, N, K, elem, kind)
    ), "no block wider than NARROW where a narrower candidate exists"


@settings(max_examples=300, deadline=None)
@given(
    M=st.integers(1, 1 << 31),
    N=st.integers(1, 1 << 20),
    K=st.integers(1, 1 << 31),
    elem=st.sampled_from([2, 4]),
    kind=st.sampled_from(["reduce", "softmax"]),
)
@example(M=1 << 30, N=1, K=1025, elem=2, kind="reduce")
def test_every_plan_is_launchable_or_there_is_none(M, N, K, elem, kind):
    """Column blocks of the flattened (M, K) output go on grid axis x (2**31 - 1 programs),
    splits on z (65535): a plan past them fails to launch on the device (the interpreter
    would loop on), so it is never chosen; past the widest tile on x there is none."""
    plan = tm.tiles(M, N, K, H200, elem, kind)
    widest = 1024 if kind == "reduce" else 2048 // elem
    if plan is None:
        assert tm.cdiv(M * K, widest) > tm.GRID_LIMITS[0]
        return
    assert tm.programs(M, K, plan) <= tm.GRID_LIMITS[0] and plan.splits <= tm.GRID_LIMITS[2]
    if kind == "reduce" and plan.splits > 1:
        second = tm.tiles(1, plan.splits, M * K, H200)
        assert second is not None and tm.cdiv(M * K, second.block_k) <= tm.GRID_LIMITS[0]


def test_the_launch_limit_is_where_a_device_puts_it():
    """Grid axis y (65535) no longer bounds K: a (2, 2, 65535 * 1024 + 1) problem has a plan;
    only past 2**31 - 1 blocks of the widest tile on axis x is there none."""
    assert tm.tiles(2, 2, 65535 * 1024 + 1, H200, 4) is not None
    assert tm.tiles(1, 2, (2**31 - 1) * 1024, H200, 4) is not None
    assert tm.tiles(1, 2, (2**31 - 1) * 1024 + 1, H200, 4) is None
    assert tm.tiles(1, 2, (2**31 - 1) * 512 + 1, H200, 4, "softmax") is None


@pytest.mark.parametrize("shape", [(81, 2, 141), (8, 1523, 65), (1, 15, 2229), (30, 624, 33), (2, 1266, 34)])
def test_a_small_problem_keeps_one_launch(shape):
    """A second launch costs host time whatever the kernel does (measured 5 - 40 us a
    launch): under a few MB it cannot pay for itself."""
    assert tm.tiles(*shape, H200, 2).splits == 1


def test_a_long_thin_problem_splits_its_rows():
    """Two columns of a million rows: one program would walk them for milliseconds."""
    plan = tm.tiles(1, 1 << 22, 2, H200, 4)
    assert plan.splits > 1


@pytest.mark.parametrize("shape", [(20884, 1773, 6, 2), (93748, 168, 5, 4), (9425906, 12, 2, 2), (21157, 47, 11, 2)])
def test_short_rows_of_many_m_are_blocked_flat(shape):
    """Measured on an H200 (benchmarks/results/h200-plan-grid-*): a program per m reading a
    few columns ran 1.1 - 10x slower than blocks of the flattened output (9425906x12x2 fp16:
    6.8 ms against 0.66 ms)."""
    M, N, K, elem = shape
    assert tm.tiles(M, N, K, H200, elem).flat


@pytest.mark.parametrize(
    "shape",
    [
        (2, 135, 132578, 4, "softmax"),
        (4, 150, 65536, 2, "softmax"),
        (18, 8726, 1213, 4, "softmax"),
        (116, 11285, 359, 4, "reduce"),
        (4, 21, 270400, 2, "softmax"),
        (2265, 45, 10256, 2, "reduce"),
    ],
)
def test_blocks_stay_narrow_where_rows_fill_the_tile(shape):
    """Measured on an H200 (h200-narrow-blocks-ab-2026-12-04): where the model priced 4 x 256
    and 8 x 128 softmax blocks lowest, 16 x 64 ran 1.13 - 1.30x faster (2x135x132578 fp32:
    0.179 ms against 0.138); the sum 1.29x at 8 x 128.  With rows for fewer than NARROW_STEPS
    steps the wide blocks stay (softmax 4x21x520x520 fp16 at 16 x 64 ran 2.9x slower than
    1 x 1024), and so they do for half-precision sums and means (mean 2265x45x10256 fp16 at
    8 x 128: 1.84x native)."""
    M, N, K, elem, kind = shape
    plan = tm.tiles(M, N, K, H200, elem, kind)
    cap = tm.NARROW.get((kind, elem))
    if cap is None or N * cap < tm.NARROW_STEPS * max(tm.TILES):
        assert not any(tm.too_wide(N, K, p, elem, kind) for p in tm.candidates(M, N, K, elem, kind))
        assert plan.block_k > 128
    else:
        assert plan.block_k <= cap and not tm.too_wide(N, K, plan, elem, kind)


def test_few_long_columns_split_their_rows():
    """Measured: (18, 1767, 10324) fp32 in one launch of 198 programs 674 us, split 32 or 64
    ways 355 - 372 us (bytes in flight, not tile width, set the pace).  (3, 518, 176351) has
    519 column blocks, enough to fill the device: one launch timed as fast as split ones
    (0.274 ms; h200-plan-grid-seed11-current), so it is not held to a split."""
    assert tm.tiles(18, 1767, 10324, H200, 4).splits >= 8


@pytest.mark.parametrize("shape", [(12, 1466773, 10, 2, "softmax"), (5, 71786, 2, 2, "reduce")])
def test_a_split_plan_pays_for_what_waits_on_it(shape):
    """After a split launch, a reduction's second launch walks the partials (its own plan and
    cost) and softmax's programs merge every split's statistics a load at a time.  Measured
    on an H200: softmax (12, 1466773, 10) bf16 at 1024 splits 3.9 ms, at 128 0.57 ms (plan
    grid); sum (5, 71786, 2) bf16 at 1024 splits 62 us against native's 28 us (sweep)."""
    M, N, K, elem, kind = shape
    plan = tm.tiles(M, N, K, H200, elem, kind)
    assert 1 < plan.splits <= 128
    wider = tm.Plan(plan.block_r, plan.block_k, plan.warps, plan.splits * 8, plan.flat)
    assert tm.cost(M, N, K, wider, H200, elem, kind)[1] > tm.cost(M, N, K, plan, H200, elem, kind)[1]
    if kind == "reduce":
        assert tm.second_plan(plan.splits, M * K, H200).splits == 1  # its kernel has no splits


def test_softmax_keeps_vector_loads_where_rows_are_long():
    """Softmax over flattened blocks ran 3x slower for the same tiles (loads not provably
    contiguous): only rows shorter than FLAT_SOFTMAX bytes go flat."""
    assert not tm.tiles(13, 118, 120057, H200, 2, "softmax").flat
    assert not tm.tiles(2474, 588, 114, H200, 4, "softmax").flat
    assert tm.tiles(246857, 4, 24, H200, 2, "softmax").flat
    assert all(p.block_r * p.block_k <= max(tm.TILES) for p in tm.candidates(64, 64, 64, 4, "softmax"))


def test_wider_tiles_take_more_warps(monkeypatch):
    """``plan_grid.py --tiles`` weighs tiles past 1024 elements: a thread keeps 8 - 16 of a
    tile's elements (FlagGems' own non-inner softmax runs its 8192-element tiles on 16 warps)."""
    monkeypatch.setattr(tm, "TILES", (1024, 4096, 8192))
    warps = {p.block_r * p.block_k: p.warps for p in tm.candidates(1, 4096, 4096, 2, "softmax")}
    assert warps == {1024: 4, 4096: 8, 8192: 16}


def test_device_figures_are_read_through_the_platforms_module(monkeypatch):
    torch = pytest.importorskip("torch")
    props = types.SimpleNamespace(
        multi_processor_count=64, memory_clock_rate=1_600_000, memory_bus_width=4096, name="X1"
    )
    monkeypatch.setattr(torch, "fakedev", types.SimpleNamespace(get_device_properties=lambda i: props), raising=False)
    tm.device_info.cache_clear()
    got = tm.device_info("fakedev")
    assert (got.sms, round(got.bandwidth / 1e12, 2)) == (64, 1.64)
    assert "read from torch.fakedev" in got.source


def test_what_cannot_be_read_is_said_to_be_assumed(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "fakedev", types.SimpleNamespace(), raising=False)
    tm.device_info.cache_clear()
    assert tm.device_info("fakedev") is tm.ASSUMED and "assumed" in tm.ASSUMED.source
    props = types.SimpleNamespace(multi_processor_count=24, name="Y")  # SMs, but no memory figures
    monkeypatch.setattr(torch, "fakedev", types.SimpleNamespace(get_device_properties=lambda i: props))
    tm.device_info.cache_clear()
    got = tm.device_info("fakedev")
    assert got.sms == 24 and "bandwidth assumed" in got.source
    tm.device_info.cache_clear()


@settings(max_examples=300, deadline=None)
@given(
    M=st.one_of(st.integers(1, 64), st.integers(1, 1 << 32)),
    N=sizes,
    K=st.integers(1, 2 * tm.SLAB_K_MAX),
    elem=st.sampled_from([2, 4]),
    kind=st.sampled_from(["reduce", "softmax"]),
    device=st.sampled_from([H200, SMALL]),
)
@example(M=(1 << 31) - 1, N=2, K=16, elem=2, kind="reduce", device=H200)  # the last M grid axis x launches
@example(M=1 << 31, N=2, K=3, elem=4, kind="softmax", device=H200)  # one past it: the tiles decide
def test_tiny_k_takes_a_launchable_slab_plan(M, N, K, elem, kind, device):
    """K up to SLAB_K_MAX has a slab plan (one program per m on grid axis x, splits on z,
    each split whole 64-row multiples, a split's partials launchable); past it, or past the
    grid, none.  ``pick`` takes whichever of it and the tiles' plan the model prices lower."""
    plan, tiled = tm.slabs(M, N, K, device, elem, kind), tm.tiles(M, N, K, device, elem, kind)
    picked = tm.pick(M, N, K, device, elem, kind)
    if K > tm.SLAB_K_MAX or M > tm.GRID_LIMITS[0]:
        assert plan is None and picked == tiled
        return
    assert isinstance(plan, tm.SlabPlan) and plan.block in tm.SLAB_BLOCKS
    assert picked in (plan, tiled)
    if tiled is not None:
        slab_price, tile_price = (
            tm.slab_cost(M, N, K, plan, device, elem, kind),
            tm.cost(M, N, K, tiled, device, elem, kind),
        )
        assert picked == (plan if slab_price <= tile_price else tiled)
    rows, splits = tm.slab_rows(N, plan.splits)
    assert splits <= plan.splits <= tm.GRID_LIMITS[2] and (splits - 1) * rows < N <= splits * rows
    assert plan.splits == 1 or (rows % tm.SLAB_SPLIT_ROWS == 0 and tm.cdiv(N, plan.splits) >= tm.SLAB_SPLIT_ROWS)
    if splits > 1 and kind == "reduce":
        second = tm.second_plan(splits, M * K, device)
        assert tm.programs(1, M * K, second) <= tm.GRID_LIMITS[0]
    total, gpu = tm.slab_cost(M, N, K, plan, device, elem, kind)
    alone = tm.slab_cost(M, N, K, tm.SlabPlan(plan.block, 1), device, elem, kind)[0]
    assert 0 < gpu <= total and (plan.splits == 1 or total <= alone), "a split pays for its launch"


def test_slab_model_keeps_small_problems_in_one_launch_and_splits_long_ones():
    """Back to back, a second launch costs the host what the whole of a small problem
    does (H200: one launch 19 - 23 us, two 44 - 47 us; results README); a long thin
    problem (four m over 200 thousand rows) needs splits to fill the SMs."""
    assert tm.slabs(4, 24716, 8, H200, 2).splits == 1
    assert tm.slabs(64, 26211, 3, H200, 2, "softmax").splits == 1
    assert tm.slabs(3360, 27628, 3, H200, 4).splits <= 8
    assert tm.slabs(4, 4_000_000, 2, H200, 4).splits >= 32
