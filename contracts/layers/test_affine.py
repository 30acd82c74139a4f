"""Without affine parameters (elementwise_affine=False, affine=False): forward and gradient
as torch, which takes the layer with no weight and no bias."""

import pytest

from pytest_fl_contract.families.layers import check, make_inputs


@pytest.mark.parametrize("affine", [False])  # a known defect's predicate reads it (LayerCall.affine)
def test_without_weight(flag_gems, fl_device, layer, case, affine):
    check(
        layer,
        case,
        make_inputs(layer, case, affine=False),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        backward=True,
        what="no weight: ",
    )
