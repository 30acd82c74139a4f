"""The op registry's known-defect predicates, called directly: which calls run into which
FlagGems defect, in which versions, seen where."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_fl_contract.families import reductions as family
from pytest_fl_contract.families.dispatch import outcome as dispatch_outcome
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.reductions import Call

OPS = ROWS.rows("reductions")
get = ROWS.get
defect_reach = ROWS.defect_reach


@pytest.mark.parametrize(
    "call, expected",
    [
        (Call((3, 8, 5), 2), True),  # K == 1, N = 5: reads the next row, and past the tensor
        (Call((1, 7), 1), True),  # one row: only past the tensor, where the contracts put -inf
        (Call((13,), 0), True),
        (Call((3, 8, 5), 2, values="pos_inf"), True),  # the last row holds no -inf
        (Call((3, 8, 5), 2, values="all_neg_inf"), False),  # its own -inf ties and wins: first index
        (Call((1, 7), 1, values="infs"), False),
        (Call((4, 6, 8), 2), False),  # N a power of two: no read past the row
        (Call((3, 5, 8), 1), False),  # K > 1: another kernel
        (Call((3, 8, 5), None), False),
        (Call((3, 8, 5), 2, dtype="int32"), False),
    ],
)
def test_argmin_reads_past_each_row(call, expected):
    assert ("argmin_inner_out_of_bounds" in get("argmin").known_defects(call, "5.0.2")) is expected


def test_argmin_store_past_output_only_the_emulator_sees():
    call = Call((3, 5, 8), 2)  # N = 8 reads nothing past a row; M = 15 rows stores past the output
    assert get("argmin").known_defects(call, "5.0.2", emulated=False) == ()
    assert get("argmin").known_defects(call, "5.0.2", emulated=True) == ("argmin_inner_out_of_bounds",)


@pytest.mark.parametrize(
    "version, call, expected",
    [
        ("5.0.2", Call((3, 5, 8), 1, values="nan"), True),  # every kernel drops NaN on 5.0.2
        ("5.4.0.dev0", Call((3, 5, 8), 1, values="nan"), False),  # 5.4's non-inner kernel keeps it
        ("5.4.0.dev0", Call((3, 5, 8), 1, values="nan", routed=True), True),  # moved to the inner one
        ("5.4.0.dev0", Call((3, 8, 5), 2, values="nan"), True),
        ("5.4.0.dev0", Call((3, 1, 5), 1, values="nan"), False),  # one element: nothing to drop it for
        ("5.0.2", Call((3, 5, 8), 1), False),
    ],
)
def test_log_softmax_nan_dropped(version, call, expected):
    assert ("nan_dropped_by_max" in get("log_softmax").known_defects(call, version)) is expected


@pytest.mark.parametrize("values", ["nan", "pos_inf", "inf_minus_inf", "all_neg_inf"])
def test_std_of_non_finite_slices_is_clamped_to_zero(values):
    assert "nan_dropped_by_max" in get("std").known_defects(Call((3, 5, 8), 1, values=values), "5.4.0.dev0")
    assert "nan_dropped_by_max" not in get("std").known_defects(Call((3, 5, 8), 1, values="huge"), "5.4.0.dev0")


def test_int32_offsets_on_every_line_and_only_past_2g():
    """Issue 27 item 17: the H200 faults on 5.4.0.dev0 too (sum, mean, softmax, argmax over
    dim 1 of (1, 65537, 32768)), so the defect is registered for every line."""
    big = Call((1, 65537, 32768), 1)
    for version in ("5.0.2", "5.4.0.dev0"):
        for name in ("sum", "mean", "softmax", "argmax"):
            assert "int32_offset_overflow" in get(name).known_defects(big, version), (name, version)
    assert "int32_offset_overflow" not in get("sum").known_defects(Call((1, 65535, 32768), 1), "5.0.2")


def test_defect_reach_lists_ops_and_versions():
    assert defect_reach("int32_offset_overflow") == {op: () for op in ("sum", "mean", "softmax", "argmax")}
    assert defect_reach("nan_dropped_by_max") == {
        op: () for op in ("log_softmax", "argmax", "std", "amax", "amin", "max_dim", "min_dim", "aminmax")
    }
    assert defect_reach("masked_2d_row_load") == {}  # a compiler defect: not in the op table


@pytest.mark.parametrize(
    "op, call, version, expected",
    [
        ("argmin", Call((2, 5, 127, 129), 0), "5.0.2", True),  # K = 81915 on grid y (the H200's draw)
        ("argmin", Call((2, 65535), 0), "5.4.0.dev0", False),  # at the limit
        ("argmin", Call((65537, 2), 1), "5.0.2", False),  # inner: K = 1
        ("argmin", Call((8, 64, 65568), 1), "5.0.2", False),  # split-K: cdiv(K, 32) on y
        ("argmin", Call((8, 64, 65535 * 32 + 32), 1), "5.0.2", True),
        ("argmin", Call((2, 65537), 0, "float32", routed=True), "5.0.2", False),  # a moved axis: K = 1
        ("log_softmax", Call((2, 65537), 0), "5.0.2", True),
        ("log_softmax", Call((2, 65537), 0), "5.4.0.dev0", False),  # 5.4 tiles K
        ("sum", Call((2, 65537), 0), "5.0.2", False),
    ],
)
def test_grid_y_over_limit(op, call, version, expected):
    assert ("grid_y_over_limit" in get(op).known_defects(call, version)) is expected


@pytest.mark.parametrize(
    "op, call, expected",
    [
        ("mean", Call((2, 67108867), 0), True),  # 131073 tiles of 512 (the H200's case)
        ("mean", Call((2, 65535 * 512), 0), False),
        ("mean", Call((2, 65535 * 512 + 1), 0, "float16"), False),  # half tiles 1024 columns
        ("mean", Call((2, 65535 * 1024 + 1), 0, "bfloat16"), True),
        ("argmax", Call((2, 65535 * 512 + 1), 0, "float16"), True),
        ("sum", Call((2, 67108867), 0), False),  # its heuristic keeps grid y under the limit
    ],
)
def test_column_tiles_past_grid_y(op, call, expected):
    assert ("grid_y_over_limit" in get(op).known_defects(call, "5.0.2")) is expected


# -- disagreement()'s shortcuts for large inputs ---------------------------------------------


def _sweeps():
    from pytest_fl_contract.contracts.reductions import sweeps

    return sweeps


@pytest.mark.parametrize("name", [op.name for op in OPS])
@pytest.mark.parametrize("dim", [0, 1, -1, 3, -4])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3fn"])
@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5), (1, 7, 2, 9), (3, 2, 2)])
def test_a_large_input_gets_the_outcome_torch_on_the_cpu_gives(monkeypatch, name, dim, dtype, values, shape):
    """The shortcut past META_FROM elements (a small input whose extents name their dims)
    must decide as the CPU does: what raises (a dim out of range, float8) and the result's
    shape and dtype, with torch's values wanted or not (indices judged by the value they
    point at); equal extents and extents of one included."""
    import torch

    sweeps = _sweeps()
    op = next(o for o in OPS if o.name == name)
    x = torch.randn(shape).to(getattr(torch, dtype))
    kind, want = dispatch_outcome(lambda: op.torch_fn(x, dim, False))
    monkeypatch.setattr(sweeps, "META_FROM", 1)
    got_kind, got = sweeps.torch_outcome(op, x, dim, False, values)
    assert got_kind == kind
    if kind == "ok":
        assert (tuple(got.shape), got.dtype) == (tuple(want.shape), want.dtype)
        if values and not want.is_floating_point():  # compared exactly: torch's own indices
            assert got.device == want.device and torch.equal(got, want)
    else:
        assert got == want


def test_magnitude_ignores_what_is_not_finite():
    import torch

    sweeps = _sweeps()
    x = torch.tensor([1e3, -2e3, float("nan"), float("inf"), -float("inf")])
    assert sweeps.magnitude(x) == 2e3 and sweeps.magnitude(torch.tensor([float("nan")])) == 1.0
    assert sweeps.magnitude(torch.empty(0)) == 1.0 and sweeps.magnitude(torch.tensor([-7, 3])) == 7.0
    assert torch.isnan(x[2]) and torch.isinf(x[3])  # the input itself untouched


_SPECIALS = st.sampled_from([0.0, -0.0, 1.0, -1.5, 1e-30, 3e38, 1e300, math.inf, -math.inf, math.nan])
_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), _SPECIALS)


@settings(max_examples=300, deadline=None)
@given(
    pairs=st.lists(st.tuples(_VALUES, _VALUES), min_size=1, max_size=12),
    rtol=st.sampled_from([0.0, 1e-7, 4 * 2.0**-23, 0.5]),
    atol=st.sampled_from([0.0, 1e-30, 1e-5, 1.0]),
)
@example(pairs=[(math.inf, math.inf), (-math.inf, -math.inf), (math.nan, math.nan), (-0.0, 0.0)], rtol=0.0, atol=0.0)
@example(pairs=[(1e308, -1e308)], rtol=4.0, atol=0.0)
@example(pairs=[(1.0, 1.0)] * 7 + [(1.0, 2.0)], rtol=0.0, atol=0.0)  # the last block differs
@example(pairs=[(math.inf, 1.0)], rtol=0.5, atol=1.0)
@example(pairs=[(1.0, math.inf)], rtol=0.5, atol=1.0)
def test_the_fast_comparison_is_torch_isclose(pairs, rtol, atol):
    """family.assert_close passes exactly where torch.isclose(equal_nan=True) holds everywhere,
    and on its own (torch's assert_close, the slow one, only words a failure)."""
    import torch

    got = torch.tensor([a for a, _ in pairs], dtype=torch.float64)
    want = torch.tensor([b for _, b in pairs], dtype=torch.float64)
    close = bool(torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True).all())
    block = family._BLOCK
    for family._BLOCK in (block, 3):  # one block, and several with a short last one
        try:
            if close:
                real, torch.testing.assert_close = torch.testing.assert_close, None  # called: a TypeError
                try:
                    family.assert_close(got.clone(), want.clone(), rtol=rtol, atol=atol)
                finally:
                    torch.testing.assert_close = real
            else:
                with pytest.raises(AssertionError):
                    family.assert_close(got.clone(), want.clone(), rtol=rtol, atol=atol)
        finally:
            family._BLOCK = block


@pytest.mark.parametrize("tiny", [5.749907484773966e-162, 1e-300, 1e-160])
def test_the_std_reference_keeps_tiny_values_exact(tiny):
    """[0, t]'s std is t / sqrt(2): the reference scales before squaring (torch's float64 std
    gave 3.85e-162 for 4.07e-162, hypothesis's find)."""
    import torch

    x = torch.tensor([[0.0, tiny], [0.0, 0.0]], dtype=torch.float64)
    got = get("std").reference(x, 1, False)
    assert got[0].item() == pytest.approx(tiny / math.sqrt(2), rel=1e-12) and got[1].item() == 0.0


@pytest.mark.parametrize("name", ["std", "var", "var_mean", "vector_norm"])
@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data(), keepdim=st.booleans())
def test_the_faster_references_are_torchs(name, shape, data, keepdim):
    """The faster references (two-pass std and var, the 2-norm over its dim moved innermost)
    give torch's float64 results: same shape, NaN and inf where torch has them, values to
    float64 rounding, over int, list and None dims.  Finite values whose
    squares overflow float64 are not drawn: there torch disagrees with itself (NaN over an
    inner dim, inf over an outer one, for the same slice); the contracts' largest values
    are 1e30 (special_values' "huge").  Nor are values whose squares are subnormal: there
    torch's own std loses digits (``test_the_std_reference_keeps_tiny_values_exact``)."""
    import torch

    n = math.prod(shape)
    fits = st.one_of(
        st.floats(-1e150, 1e150).filter(lambda v: v == 0 or abs(v) > 1e-140),
        st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0]),
    )
    x = torch.tensor(data.draw(st.lists(fits, min_size=n, max_size=n)), dtype=torch.float64).reshape(shape)
    dim = data.draw(
        st.one_of(
            st.none(),
            st.integers(0, len(shape) - 1),
            st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True),
        )
    )
    op = get(name)
    assert op.reference_fn is not None
    # var_mean's variance as torch.var gives it: torch.var_mean over every dim lost digits to
    # cancellation (three values near 2.33e20: 3e-6 off the exact variance, which torch.var
    # and the two-pass reference give to 1e-10; hypothesis's find)
    want = (get("var") if name == "var_mean" else op).torch_fn(x, dim, keepdim)
    got = op.reference(x, dim, keepdim)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-300, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(), keepdim=st.booleans())
def test_an_index_is_judged_by_the_value_it_points_at(shape, data, keepdim):
    """argmax/argmin: torch's own index always agrees, ties and NaN included; an index moved
    off every extremum of its slice never does."""
    import torch

    sweeps = _sweeps()
    n = math.prod(shape)
    values = st.one_of(st.sampled_from([0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]), st.floats(-4, 4))
    x = torch.tensor(data.draw(st.lists(values, min_size=n, max_size=n)), dtype=torch.float32).reshape(shape)
    dim = data.draw(st.integers(0, len(shape) - 1))
    for name in ("argmax", "argmin"):
        op = get(name)
        right = op.torch_fn(x, dim, keepdim)
        assert sweeps.disagreement(op, lambda r=right: r, x, dim, keepdim) is None
        best = op.torch_fn(x.double(), dim, True)
        at = x.gather(dim, best)
        others = (x != at) & ~(x.isnan() & at.isnan())  # positions holding no extremum
        if not bool(others.any()):
            continue
        wrong = torch.where(others.any(dim, keepdim=True), others.float().argmax(dim, keepdim=True), best)
        wrong = wrong if keepdim else wrong.squeeze(dim)
        assert sweeps.disagreement(op, lambda w=wrong: w, x, dim, keepdim) is not None


def test_another_devices_tensor_is_std_s_known_defect_in_5_0_only():
    """Seen on a two-H200 host: 5.0.2's std over a dim launches on the current device."""
    other, here = Call((3, 5, 64), 1, placement="other"), Call((3, 5, 64), 1)
    assert "launch_on_current_device" in get("std").known_defects(other, "5.0.2")
    assert "launch_on_current_device" not in get("std").known_defects(here, "5.0.2")
    assert "launch_on_current_device" not in get("std").known_defects(other, "5.4.0.dev0")
    assert "launch_on_current_device" not in get("sum").known_defects(other, "5.0.2")


@settings(max_examples=120, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4), data=st.data(), keepdim=st.booleans())
def test_references_by_slab_are_the_whole_reference(shape, data, keepdim):
    """A large input's reference is made a slab at a time (``blocks``): the slabs cover the
    input and the result once each, in step, for every op kind and dim form, so the pieces
    put together are the whole reference; and a result wrong at one element is caught
    (check and disagreement alike) and named by its index in the whole result."""

    sweeps = _sweeps()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(family, "BLOCKWISE_FROM", 1)
        patch.setattr(family, "REF_BLOCK", data.draw(st.integers(1, 40)))
        _slabs_hold(sweeps, shape, data, keepdim)


def _slabs_hold(sweeps, shape, data, keepdim) -> None:
    import torch

    x = torch.randn(shape, dtype=torch.float32)
    op = get(data.draw(st.sampled_from(["sum", "std", "softmax", "logsumexp", "prod"])))
    rank = len(shape)
    dims = st.integers(-rank, rank - 1)
    dim = data.draw(
        dims
        if op.kind == "along" or op.name == "prod"
        else st.one_of(dims, st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    )
    keep = keepdim and op.kind == "reduce"
    whole = op.reference(x, dim, keep)
    seen = torch.zeros(whole.shape, dtype=torch.int64)
    taken = torch.zeros(x.shape, dtype=torch.int64)
    for src, dst in family.blocks(tuple(x.shape), dim, keep, op.kind):
        torch.testing.assert_close(op.reference(x[src], dim, keep), whole[dst], rtol=1e-12, atol=1e-12, equal_nan=True)
        seen[dst] += 1
        taken[src] += 1
    assert bool((seen == 1).all()) and bool((taken == 1).all())
    got = op.torch_fn(x, dim, keep)
    assert sweeps.disagreement(op, lambda: got, x, dim, keep) is None
    if isinstance(dim, int):
        family.check(op, got, x, dim, keep)
        with pytest.raises(AssertionError, match="shape"):  # the shape, worked out without torch's meta kernels
            family.check(op, got.unsqueeze(0), x, dim, keep)
    if got.numel() == 0:
        return
    at = data.draw(st.integers(0, got.numel() - 1))
    wrong = got.clone()
    value = float(wrong.view(-1)[at])
    wrong.view(-1)[at] = value + 1e3 if math.isfinite(value) else 0.0  # a NaN std of one element: 0 is wrong
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(at), got.shape))
    problem = sweeps.disagreement(op, lambda: wrong, x, dim, keep)
    assert problem is not None and f"at {index}:" in problem
    if isinstance(dim, int):
        with pytest.raises(AssertionError):
            family.check(op, wrong, x, dim, keep)


@settings(max_examples=80, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4), data=st.data())
def test_the_isolated_child_compares_a_slab_at_a_time(shape, data):
    """isolation.compare (the large-index child's verdict) holds torch's result a slab at a
    time: a correct result passes whatever the slab size, one element off anywhere fails."""
    import torch

    from pytest_fl_contract.hardware import isolation

    x = torch.randn(shape)
    op = get(data.draw(st.sampled_from(["sum", "mean", "softmax", "argmax"])))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    elements = data.draw(st.integers(1, 64))
    got = op.torch_fn(x, dim, False)
    assert isolation.compare(op, x, got, dim, elements)["ok"]
    if op.kind == "index" and x.shape[dim] < 2:
        return
    wrong = got.clone()
    at = data.draw(st.integers(0, got.numel() - 1))
    if op.kind == "index":
        wrong.view(-1)[at] = (wrong.view(-1)[at] + 1) % x.shape[dim]
    else:  # off by one, or NaN (Python's max() drops a NaN gap unless it is made infinite)
        wrong.view(-1)[at] = data.draw(st.sampled_from([float(wrong.view(-1)[at]) + 1.0, math.nan, math.inf]))
    verdict = isolation.compare(op, x, wrong, dim, elements)
    assert not verdict["ok"], verdict["detail"]


def test_an_empty_dim_list_reduces_everything_past_the_slab_threshold(monkeypatch):
    """sum/mean take dim=[] as every dim (a 0-d result): no kept axis to cut, one slab; and
    check() names the block of a wrong element past the threshold."""
    import torch

    from pytest_fl_contract.families.slabs import slabs

    sweeps = _sweeps()
    assert slabs((4, 5), [], False, False, 1) == [((), ())]
    monkeypatch.setattr(family, "BLOCKWISE_FROM", 1)
    monkeypatch.setattr(family, "REF_BLOCK", 5)
    x = torch.randn(6, 5)
    op = get("sum")
    assert sweeps.disagreement(op, lambda: x.sum(dim=[]), x, []) is None
    wrong = x.sum(dim=1)
    wrong[4] += 1.0
    with pytest.raises(AssertionError, match=r"block \[4:5\]"):
        family.check(op, wrong, x, 1)


def test_generated_draws_never_run_a_corrupting_call_on_hardware():
    """An H200 ran special_log_softmax's generated draws into small_n_ignores_k (a kernel
    that writes past its tensor: chance outcomes, a device fault); the parametrized cases
    were skipped, the draws not.  On hardware a draw that meets such a defect is not run."""
    from pytest_fl_contract.contracts.reductions import test_generated

    assert get("special_log_softmax").corrupting(Call((2, 2), 0, "float32"), "5.4.0.dev0") == ("small_n_ignores_k",)

    class Corrupting:
        name = "special_log_softmax"

        def known_defects(self, call, version=None, emulated=False):
            return ()

        def corrupting(self, call, version=None):
            return ("small_n_ignores_k",)

        def call(self, *args, **kwargs):
            raise AssertionError("a corrupting call ran on hardware")

    draw = ((2, 2), 0, False, "float32")
    assert test_generated.problem_of(Corrupting(), draw, "cuda", routed=False, version="5.4.0.dev0") is None


def test_the_variance_reference_is_exact_where_torchs_var_mean_is_not():
    """Three values near 2.33e20, where torch 2.13's var_mean over every dim is 3e-6 off the
    exact variance (Fractions): the two-pass reference is within 1e-9 of it."""
    from fractions import Fraction

    import torch

    values = [2.3283064365386963e20, 2.3283064365118528e20, 2.3283064365384686e20]
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / 3
    variance = float(sum((v - mean) ** 2 for v in exact) / 2)
    x = torch.tensor(values, dtype=torch.float64)
    assert get("var_mean").reference(x, None, False).item() == pytest.approx(variance, rel=1e-9)
