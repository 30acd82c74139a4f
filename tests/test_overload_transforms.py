"""The overload suite's re-drawn samples keep what the op's contract needs of them, and its
oracle's allowances hold only where torch's own rounding allows (the H100 run of 2026-12-08:
scatter and index_copy failed on repeated indices the re-draw made, the Chebyshev polynomials
on fractional degrees, kron's reference did not fit a host, histc moved edge values)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pytest_fl_contract.overloads import boundary, samples  # noqa: E402
from pytest_fl_contract.overloads.oracle import histogram_difference  # noqa: E402


def test_an_index_without_repeats_keeps_none_past_tile_edges() -> None:
    """scatter's index has distinct values along its dim in OpInfo's sample: which of two
    writes to one element lands is undefined, so the re-draw keeps them distinct."""
    self_, index = torch.zeros(5, 5), torch.tensor([[0, 1, 2], [4, 3, 0], [1, 2, 3], [2, 0, 4], [3, 4, 1]])
    drawn = boundary.redraw((self_, (1, index, torch.ones(5, 3)), {}), "boundary", budget=4097, seed=3)
    new = drawn[1][1]
    assert new.shape[0] > 5
    ordered = new.sort(dim=1).values
    assert bool((ordered[:, 1:] != ordered[:, :-1]).all())
    assert int(new.min()) >= 0


def test_an_index_with_repeats_may_repeat() -> None:
    """An index the sample repeats (a gather's) is drawn freely in its range."""
    index = torch.tensor([[0, 0, 1], [0, 1, 1]])
    assert boundary._distinct_along(index) is None
    assert boundary._distinct_along(torch.tensor([[0, 1], [1, 0]])) == 1


def test_whole_valued_floats_stay_whole() -> None:
    """A Chebyshev degree drawn as whole floats stays whole: torch truncates a fractional one."""
    x, n = torch.rand(17, 33) * 2 - 1, torch.randint(0, 7, (33,)).float()
    drawn = boundary.redraw((x, (n,), {}), "boundary", budget=1 << 20, seed=0)
    new_x, new_n = drawn[0], drawn[1][0]
    assert new_n.numel() > 33 and bool((new_n == new_n.round()).all())
    assert 0 <= float(new_n.min()) and float(new_n.max()) <= 6
    assert not bool((new_x == new_x.round()).all())


def test_a_result_past_the_hosts_limit_shrinks_the_draw() -> None:
    """kron of two re-drawn matrices: the budget is quartered until torch's result fits."""
    source = samples.Source("kron", "op")
    sample = next(s for s in samples.drawn("kron", "float32") if s.input.dim() == 2 and s.args[0].dim() == 2)
    drawn = samples.transformed("kron", source, sample, "boundary", budget=1 << 20, seed=0)
    inp, other = drawn[0], drawn[1][0]
    assert inp.numel() * other.numel() <= samples.RESULT_LIMIT
    assert max(inp.shape) > max(sample.input.shape)  # still past the sample's sizes


def test_histc_allows_an_edge_value_one_bin_over() -> None:
    x = torch.tensor([0.0, 0.5, 1.0, 0.25])  # each on an edge of 4 bins over [0, 1]
    ref = torch.histc(x.double(), bins=4, min=0, max=1)
    moved = ref.clone()
    moved[1], moved[2] = moved[1] + 1, moved[2] - 1
    assert histogram_difference(moved, ref, (x, (4, 0, 1), {})) is None
    far = ref.clone()
    far[0], far[3] = far[0] + 1, far[3] - 1
    far[1], far[2] = far[1] + 4, far[2] - 4  # 10 moved, past the 8 four edge values allow
    assert "past the" in histogram_difference(far, ref, (x, (4, 0, 1), {}))
    inner = torch.tensor([0.1, 0.6, 0.9])  # no value near an edge: no count may move
    ref = torch.histc(inner.double(), bins=4, min=0, max=1)
    shifted = ref.clone()
    shifted[0], shifted[1] = shifted[0] - 1, shifted[1] + 1
    assert histogram_difference(shifted, ref, (inner, (), {"bins": 4, "min": 0, "max": 1})) is not None


def test_a_sort_may_order_equal_values_either_way() -> None:
    """Among equal values a sort's indices are open (not asked to be stable): any permutation
    that picks the sorted values passes, one that picks others or repeats an index fails."""
    from pytest_fl_contract.overloads.oracle import tied_order_difference

    x = torch.tensor([[2.0, 1.0, 2.0, 0.0]])
    values, indices = torch.sort(x.double(), dim=1)
    swapped = indices.clone()
    swapped[0, 2], swapped[0, 3] = indices[0, 3], indices[0, 2]  # the two 2.0s the other way
    assert tied_order_difference(indices, values, x, 1) is None
    assert tied_order_difference(swapped, values, x, 1) is None
    wrong = indices.clone()
    wrong[0, 0], wrong[0, 1] = indices[0, 1], indices[0, 0]  # 1.0 before 0.0
    assert "pick" in tied_order_difference(wrong, values, x, 1)
    repeated = indices.clone()
    repeated[0, 3] = indices[0, 2]
    assert "permutation" in tied_order_difference(repeated, values, x, 1)
