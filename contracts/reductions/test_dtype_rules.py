"""dtype rules as torch's: half, bfloat16, float64, integer and bool inputs (sum of int32
or bool gives int64; what torch refuses, such as the mean of an integer tensor, is refused
alike), and the ``dtype=`` argument (half in, fp32 or fp64 out)."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.config.platforms import DTYPE_CAPABILITY
from pytest_fl_contract.families.reductions import make_input, tolerance
from pytest_fl_contract.registry.reductions import Case

DTYPES = ["float16", "bfloat16", "float64", "int32", "int64", "bool"]
# N = 8: a partial row tile still (TILE_N is larger), but not argmax's own tile defect (N not
# a power of two), which would make a bool argmax raise where torch raises for another reason.
CASES = [Case((3, 8, 6), 1), Case((3, 6, 8), 2)]


def typed(x: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype == "bool":
        return x > 0
    if dtype.startswith("int"):
        return (x * 4).round().to(getattr(torch, dtype))
    return x.to(getattr(torch, dtype))


def _marks(dtype):
    cap = DTYPE_CAPABILITY.get(dtype)
    return [pytest.mark.requires_capability(cap)] if cap else []


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=_marks(d)) for d in DTYPES])
@pytest.mark.parametrize("dtype_case", CASES, ids=lambda c: c.id)
def test_input_dtypes(flag_gems, fl_device, fl_settings, any_op, dtype_case, dtype):
    op, case = any_op, fitted(dtype_case, any_op, fl_settings.sweep)
    x = typed(make_input(case, "float32", fl_device, op=op), dtype)
    assert_agrees(op, lambda: op.call(x, case.dim), x, case.dim, what=f"{dtype} input, dim {case.dim}")


@pytest.mark.parametrize("values", ["int32_wide"])  # a known defect's predicate sees it (Call.values)
@pytest.mark.parametrize("dtype", ["int32"])
@pytest.mark.parametrize("dtype_case", CASES, ids=lambda c: c.id)
def test_integer_results_past_int32(flag_gems, fl_device, fl_settings, any_op, dtype_case, dtype, values):
    """int32 inputs near 2**30: torch sums and multiplies int32 in int64 (its result's dtype),
    so two of them pass 2**31; a kernel that accumulates in int32 wraps.  Integer results are
    exact modulo 2**64 in any order, so they must equal torch's."""
    op, case = any_op, fitted(dtype_case, any_op, fl_settings.sweep)
    x = typed(make_input(case, "float32", fl_device, op=op), dtype) + 2**30
    assert_agrees(op, lambda: op.call(x, case.dim), x, case.dim, what=f"int32 input near 2**30, dim {case.dim}")


@pytest.mark.parametrize("values", ["int64_wide"])  # a known defect's predicate sees it (Call.values)
@pytest.mark.parametrize("dtype", [pytest.param("int64", marks=_marks("int64"))])
@pytest.mark.parametrize("dtype_case", CASES, ids=lambda c: c.id)
def test_int64_values_past_32_bits(flag_gems, fl_device, fl_settings, any_op, dtype_case, dtype, values):
    """int64 values of 2**33 and more whose low 32 bits order them otherwise (a larger value
    with smaller low bits, negatives among them): a compiler or kernel that compares, selects
    or accumulates a 64-bit integer in 32 bits picks the wrong extreme, index or sum.  Integer
    results are exact: they must equal torch's."""
    op, case = any_op, fitted(dtype_case, any_op, fl_settings.sweep)
    small = typed(make_input(case, "float32", "cpu", op=op), dtype)  # the op's own value pattern, |v| small
    g = torch.Generator().manual_seed(64)
    high = torch.randint(-3, 4, tuple(case.shape), generator=g, dtype=torch.int64) << 33
    low = torch.randint(0, 2**31, tuple(case.shape), generator=g, dtype=torch.int64) * 2  # low bits past the small ones
    x = (high + low + small).to(fl_device)
    assert_agrees(
        op, lambda: op.call(x, case.dim), x, case.dim, exact_index=True, what=f"int64 input past 2**32, dim {case.dim}"
    )


@pytest.mark.parametrize("dtype", ["float32", pytest.param("float64", marks=_marks("float64"))])
@pytest.mark.parametrize("values", ["dtype_arg"])
@pytest.mark.parametrize("dtype_case", CASES, ids=lambda c: c.id)
def test_dtype_argument(flag_gems, fl_device, fl_settings, any_op, dtype_case, values, dtype):
    """Half in, ``dtype`` out: the result has torch's dtype and the precision of it."""
    op, case = any_op, fitted(dtype_case, any_op, fl_settings.sweep)
    if not op.dtype_arg:
        pytest.skip(f"{op.name} takes no dtype= argument")
    x = make_input(case, "float16", fl_device)
    got = op.call(x, case.dim, dtype=getattr(torch, dtype)).cpu()
    want = op.torch_fn(x.cpu(), case.dim, False, dtype=getattr(torch, dtype))
    assert got.dtype == want.dtype, f"dtype={dtype}: {op.name} returned {got.dtype}, torch {want.dtype}"
    exact = op.reference(x.cpu(), case.dim)
    torch.testing.assert_close(
        got.double(), exact, **tolerance(dtype, case.shape[case.dim]), msg=lambda m: f"dtype={dtype}: {m}"
    )
