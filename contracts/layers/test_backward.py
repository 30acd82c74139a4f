"""Backward through autograd: the input's, the weight's and the bias's gradients match torch's
float64 autograd.  The weight and bias gradients (and batch and group norm's) fold the rows
of a (rows, channels) tile: the masked-row defect's shape, inside one entry point."""

from pytest_fl_contract.families.layers import check, make_inputs


def test_backward(flag_gems, fl_device, layer, case, dtype):
    check(layer, case, make_inputs(layer, case), device=fl_device, dtype=dtype, gems=flag_gems, backward=True)
