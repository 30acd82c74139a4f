"""Accuracy: each op over partial tiles (a matmul's K tail below, at and past a tile; an index
op's dim inner and outer, indices with duplicates) matches torch in float64, in fp32 and
(first case) in the half types."""

from pytest_fl_contract.families.tensorops import check


def test_accuracy(flag_gems, fl_device, tensor_op, case, dtype):
    check(tensor_op, case, tensor_op.operands(case), device=fl_device, dtype=dtype, gems=flag_gems)
