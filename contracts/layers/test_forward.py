"""Forward: each layer over partial row and column tiles (and group sizes a power of two and
not) matches torch in float64: the output and batch norm's updated running statistics."""

from pytest_fl_contract.contracts.layers.checks import check, make_inputs


def test_forward(flag_gems, fl_device, layer, case, dtype):
    check(layer, case, make_inputs(layer, case), device=fl_device, dtype=dtype, gems=flag_gems)
