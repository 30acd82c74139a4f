"""Special values go where torch puts them: a NaN or inf in one element of a matmul's first
operand spoils its row of the result (inf - inf: NaN where the row meets signs), an index op
copies or sums them as they are; values near 1e30 stay finite where float64's do."""

import pytest

from pytest_fl_contract.families.tensorops import check


@pytest.mark.parametrize("values", ["nan", "pos_inf", "neg_inf", "huge"])
def test_special_values(flag_gems, fl_device, tensor_op, values):
    case = tensor_op.cases["quick"][0]
    check(
        tensor_op,
        case,
        tensor_op.operands(case, values=values),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        what=f"{values} in one element: ",
    )
