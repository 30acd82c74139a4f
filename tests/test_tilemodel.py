"""The fast path's tile model: pure functions of the problem and the device, checked over
drawn shapes (its invariants), and the device figures it reads or says it assumed."""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fl_contract.workarounds import tilemodel as tm

H200 = tm.Device(132, 4.8e12, "test: H200-like")
SMALL = tm.Device(16, 0.4e12, "test: a 16-SM part")

# small sizes, anything up to 4M, and powers of two +/- 1 (tile boundaries)
sizes = st.one_of(st.integers(1, 64), st.integers(1, 1 << 22), st.sampled_from([2**k + d for k in range(1, 20) for d in (-1, 0, 1)]))


@settings(max_examples=400, deadline=None)
@given(M=sizes, N=sizes, K=sizes, elem=st.sampled_from([2, 4]),
       kind=st.sampled_from(["reduce", "softmax"]), device=st.sampled_from([H200, SMALL]))  # fmt: skip
def test_tiles_hold_their_invariants(M, N, K, elem, kind, device):
    plan = tm.tiles(M, N, K, device, elem, kind)
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    assert pow2(plan.block_r) and pow2(plan.block_k) and pow2(plan.splits)
    assert plan.block_r <= N, "a row block never reaches past the rows (no row mask exists to cut it)"
    assert plan.block_r * plan.block_k <= max(tm.TILES)
    assert plan.block_r * plan.splits <= N, "every split holds at least one whole row block"
    assert plan.block_k <= (1024 if kind == "reduce" else 2048 // elem)
    assert plan.block_k <= 1 << (K - 1).bit_length(), "no column block wider than K needs"
    total, gpu = tm.cost(M, N, K, plan, device, elem, kind)
    one = tm.Plan(plan.block_r, plan.block_k, plan.warps, 1)
    assert plan.splits == 1 or total <= tm.cost(M, N, K, one, device, elem, kind)[0], "a split pays for its launch"


@settings(max_examples=300, deadline=None)
@given(M=st.integers(1, 1 << 20), N=st.integers(1, 1 << 20), K=st.integers(1, 1 << 31), elem=st.sampled_from([2, 4]),
       kind=st.sampled_from(["reduce", "softmax"]))  # fmt: skip
def test_every_plan_is_launchable_or_there_is_none(M, N, K, elem, kind):
    """Grid axes y and z take 65535 programs: a plan past them fails to launch on the device
    (the interpreter would loop on), so it is never chosen; past the widest tile there is none."""
    plan = tm.tiles(M, N, K, H200, elem, kind)
    widest = 1024 if kind == "reduce" else 2048 // elem
    if plan is None:
        assert tm.cdiv(K, widest) > tm.GRID_LIMITS[1]
        return
    assert tm.cdiv(K, plan.block_k) <= tm.GRID_LIMITS[1] and plan.splits <= tm.GRID_LIMITS[1]
    if kind == "reduce" and plan.splits > 1:
        second = tm.tiles(1, plan.splits, M * K, H200)
        assert second is not None and tm.cdiv(M * K, second.block_k) <= tm.GRID_LIMITS[1]


def test_the_launch_limit_is_where_a_device_puts_it():
    assert tm.tiles(2, 2, 65535 * 1024, H200, 4) is not None
    assert tm.tiles(2, 2, 65535 * 1024 + 1, H200, 4) is None
    assert tm.tiles(2, 2, 65535 * 512 + 1, H200, 4, "softmax") is None


@pytest.mark.parametrize("shape", [(81, 2, 141), (8, 1523, 65), (1, 15, 2229), (30, 624, 33), (2, 1266, 34)])
def test_a_small_problem_keeps_one_launch(shape):
    """A second launch costs host time whatever the kernel does (measured 5 - 40 us a
    launch): under a few MB it cannot pay for itself."""
    assert tm.tiles(*shape, H200, 2).splits == 1


def test_a_long_thin_problem_splits_its_rows():
    """Two columns of a million rows: one program would walk them for milliseconds."""
    plan = tm.tiles(1, 1 << 22, 2, H200, 4)
    assert plan.splits > 1


def test_large_tiles_are_not_chosen_where_small_ones_hide_latency():
    """Measured on an H200 (benchmarks/results): 1024-element tiles beat the 8192-element
    ones of the earlier fit 2 - 4x on (4054, 255, 54), (220, 14, 83424), (20884, 1773, 6)."""
    assert tm.tiles(4054, 255, 54, H200, 2).block_r * tm.tiles(4054, 255, 54, H200, 2).block_k <= 1024
    assert tm.tiles(220, 14, 83424, H200, 2).block_r == 1
    assert tm.tiles(20884, 1773, 6, H200, 2).block_r == 128


def test_device_figures_are_read_through_the_platforms_module(monkeypatch):
    torch = pytest.importorskip("torch")
    props = types.SimpleNamespace(multi_processor_count=64, memory_clock_rate=1_600_000, memory_bus_width=4096, name="X1")
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
