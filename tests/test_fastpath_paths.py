"""The fast path's plan families (``workarounds/paths.py``): the names the contract
``test_fast_paths.py`` runs are what the fast path really builds and launches, and the
CPU lanes' device reaches the ones its zoo mutants need."""

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.workarounds import fastpath, paths
from pytest_fl_contract.workarounds import masked_reductions as mr
from pytest_fl_contract.workarounds import tilemodel as tm

CPU = tm.device_info("cpu")


def test_every_path_is_named_once_and_an_unknown_kind_is_refused():
    for kind in paths.KINDS:
        every = paths.every_path(kind)
        assert len({p.name for p in every}) == len(every) == (8 if kind == "reduce" else 12)
    with pytest.raises(ValueError, match="unknown fast-path kind"):
        paths.every_path("argmax")


def test_each_paths_kernels_are_the_fast_paths():
    for kind in paths.KINDS:
        for path in paths.every_path(kind):
            assert path.kernels and all(k.startswith("fl_") and hasattr(fastpath, k) for k in path.kernels), path


@settings(max_examples=120, deadline=None)
@example(M=577, N=25, K=568, dtype=torch.float16, op="sum")  # a split plan whose aligned rows make one split
@example(M=27, N=63, K=3000, dtype=torch.float16, op="softmax")
@given(
    M=st.integers(1, 5000),
    N=st.integers(2, 200_000),
    K=st.integers(2, 3000),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    op=st.sampled_from(["sum", "mean", "softmax"]),
)
def test_path_of_is_what_the_fast_path_builds(M, N, K, dtype, op):
    """``path_of`` against the planned call ``fastpath.prepare`` builds for the same problem
    (no launch: a meta tensor carries shape and dtype)."""
    row = ROWS.get(op)
    x = torch.empty((M, N, K), dtype=dtype, device="meta")
    kind = paths.kind_of(row.fastpath)
    device = tm.device_info("meta")
    path = paths.path_of(M, N, K, device, x.element_size(), kind)
    planned = fastpath.prepare(row, x, {"dim": 1} if kind == "softmax" else {"dim": [1], "keepdim": False}, mr.route)
    if path is None:
        assert planned is None
        return
    assert path.slab == isinstance(planned, (fastpath.SlabReduce, fastpath.SlabSoftmax))
    split = planned.splits > 1 if isinstance(planned, fastpath.SlabSoftmax) else planned.split is not None
    assert path.split == split
    if path.slab:
        assert path.k_divides == (planned.meta["BLOCK"] % K == 0)
    else:
        assert path.flat == bool(planned.meta["FLAT"])
        assert path.wide == (kind == "softmax" and planned.meta["BLOCK_K"] >= 32)


def test_path_shapes_take_their_path_within_the_limit():
    for kind in paths.KINDS:
        for elem in (2, 4):
            found = paths.path_shapes(kind, CPU, elem, 1 << 22)
            for path, (M, N, K) in found.items():
                assert paths.path_of(M, N, K, CPU, elem, kind) == path
                assert M * N * K <= 1 << 22 and M >= 3 and N >= 3


def test_the_cpu_lanes_reach_every_split_and_slab_path():
    """The CPU lanes prove the contract on these (the zoo's fast-path mutants): a model change
    that moved one past the emulated lanes' limit would leave its mutants alive there."""
    unreached = {
        "flat tiles, per-step fold, one launch",
        "flat tiles, per-step fold, split",
        "flat tiles, per-element fold, split",
    }  # softmax: the model takes flat tiles for huge M only
    for kind in paths.KINDS:
        found = {p.name for p in paths.path_shapes(kind, CPU, 4, 1 << 22)}
        assert found == {p.name for p in paths.every_path(kind)} - (unreached if kind == "softmax" else set())


@settings(max_examples=150, deadline=None)
@given(
    M=st.integers(1, 3000),
    N=st.integers(2, 100_000),
    K=st.integers(1, 5000),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
    op=st.sampled_from(["sum", "mean", "softmax"]),
)
def test_every_row_walk_launch_takes_the_largest_k_div_that_divides_its_rows(M, N, K, dtype, op):
    """A K_DIV that does not divide the K it launches with would tell the compiler rows start
    aligned where they do not (misaligned vector loads on hardware, invisible to the
    interpreter); one below K's divisor loads elements one by one again."""
    import math

    from pytest_fl_contract.testing.spy import planned_launches

    row = ROWS.get(op)
    x = torch.empty((M, N, K), dtype=dtype, device="meta")
    kind = paths.kind_of(row.fastpath)
    planned = fastpath.prepare(row, x, {"dim": 1} if kind == "softmax" else {"dim": [1], "keepdim": False}, mr.route)
    if planned is None:
        return
    launched = planned_launches(planned, x)
    assert launched
    for site, args in launched:
        kernel = getattr(fastpath, site.name)
        if "K" not in kernel.arg_names:  # the slabs: K is a constexpr there, alignment known exactly
            assert "K_DIV" not in site.meta
            continue
        rows = args[kernel.arg_names.index("K")]
        assert site.meta["K_DIV"] == math.gcd(rows, fastpath.VECTOR), (site.name, rows, site.meta)
