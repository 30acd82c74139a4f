"""Forward: each layer over partial row and column tiles (and group sizes a power of two and
not) matches torch in float64: the output and batch norm's updated running statistics; in
half precision also where the statistics (a sum of squares) pass the half range."""

import pytest

from pytest_fl_contract.families.layers import WIDE, check, make_inputs


def test_forward(flag_gems, fl_device, layer, case, dtype):
    check(layer, case, make_inputs(layer, case), device=fl_device, dtype=dtype, gems=flag_gems)


@pytest.mark.parametrize("values", ["wide"])
def test_half_statistics_past_the_half_range(flag_gems, fl_device, layer, half_case, dtype, values):
    """Values near 256 in fp16 or bf16: each fits, a square does not (2**16 > 65504), nor a
    row's sum of them.  A normalized output does not depend on the scale, so a kernel that
    squares or sums in half precision returns zeros, NaN or rounding where torch's float64
    returns the same output as for unit values."""
    check(
        layer,
        half_case,
        make_inputs(layer, half_case, values=values),
        device=fl_device,
        dtype=dtype,
        gems=flag_gems,
        what=f"inputs scaled by {WIDE:g} in {dtype}: ",
    )
