"""Special values stay where torch keeps them: a NaN or inf in one element makes its row
(its group, its channel) NaN and leaves the others finite.  Not values near 1e30: torch's
own fp32 layers square them to inf (NaN or 0 where float64 is finite)."""

import pytest

from pytest_fl_contract.families.layers import check, make_inputs


@pytest.mark.parametrize("values", ["nan", "pos_inf"])
def test_special_values(flag_gems, fl_device, layer, values):
    case = layer.cases["quick"][0]
    check(
        layer,
        case,
        make_inputs(layer, case, values=values),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        what=f"{values} in the first element: ",
    )
