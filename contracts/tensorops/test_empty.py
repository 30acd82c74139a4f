"""Empty extents answer as torch answers: a matmul with no rows is empty, one with a K of none
is zeros (addmm: beta * bias); an index of no elements gives an empty result (gather,
index_select) or the input unchanged (scatter, scatter_add_, index_add)."""

from pytest_fl_contract.families.tensorops import check


def test_empty(flag_gems, fl_device, tensor_op, empty_case):
    check(
        tensor_op,
        empty_case,
        tensor_op.operands(empty_case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        what=f"{empty_case.id}: ",
    )
