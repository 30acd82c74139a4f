"""Layouts: column-major operands and a matmul's operand sliced from a wider one; an index op's
input, source and index transposed, its index strided (a gap between elements) or expanded
(stride 0: FlagGems #6448's scatter_add_ on Hygon) - the same answer as torch in float64."""

from pytest_fl_contract.families.tensorops import check


def test_layout(flag_gems, fl_device, tensor_op, layout):
    for case in tensor_op.cases["quick"][:2]:
        check(
            tensor_op,
            case,
            tensor_op.operands(case),
            device=fl_device,
            dtype="float32",
            gems=flag_gems,
            layout=layout,
            what=f"{layout}: ",
        )
