"""Every argument of every matmul and index op beyond its case, swept (the rows' ``params``):
addmm's beta and alpha as F.linear sends them (the integer 1) and their edges, scatter's
reduce=, index_add's alpha - against torch in float64 given the same argument.  A kernel that
reads an integer scalar as zero, or drops reduce="multiply", passes every contract that never
varies the argument.  beta 0 has a rule of its own: torch does not read the bias at all, so NaN
and inf in it must not reach the result."""

import pytest

from pytest_fl_contract.families.tensorops import check


def test_param(flag_gems, fl_device, param_op, param, value, param_case):
    check(
        param_op,
        param_case,
        param_op.operands(param_case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        arguments=param.kwargs(value),
        what=f"{param.name}={value!r}: ",
    )


@pytest.mark.parametrize("values", ["nonfinite_bias"])  # a known defect's predicate reads it (TensorCall.values)
def test_beta_zero_reads_no_bias(flag_gems, fl_device, biased_op, case, values):
    ops = biased_op.operands(case)
    ops["bias"][0], ops["bias"][-1] = float("nan"), float("inf")
    check(
        biased_op,
        case,
        ops,
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        arguments={"beta": 0},
        what="beta=0 with NaN and inf in the bias: ",
    )
