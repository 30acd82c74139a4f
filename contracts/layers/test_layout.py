"""A non-contiguous input (the same values in another memory order): forward and gradients as torch."""

import pytest

from pytest_fl_contract.families.layers import check, make_inputs


@pytest.mark.parametrize("layout", ["transposed"])  # a known defect's predicate reads it (LayerCall.layout)
def test_transposed_input(flag_gems, fl_device, layer, case, layout):
    check(
        layer,
        case,
        make_inputs(layer, case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        backward=True,
        transposed=True,
        what="transposed input: ",
    )
