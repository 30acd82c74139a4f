"""FlagGems enabled for every op, as torch_fl and model servers run it: each op's first case
with ``use_gems()`` registering every FlagGems op, forward and the float operands' gradients
through autograd (a matmul's are matmuls, gather's a scatter_add, index_select's an
index_add: FlagGems' own where it registers them), against torch's float64 autograd."""

import pytest

from pytest_fl_contract.families.dispatch import every_op
from pytest_fl_contract.families.tensorops import check, check_gradients

pytestmark = pytest.mark.filterwarnings("ignore:Warning only once for all operators:UserWarning")


def test_every_op_enabled(flag_gems, fl_device, fl_settings, tensor_op, first_case):
    every_op(flag_gems, fl_settings.platform.defects, lambda: _case(flag_gems, fl_device, tensor_op, first_case))


def _case(flag_gems, fl_device, tensor_op, first_case):
    ops = tensor_op.operands(first_case)
    check(
        tensor_op,
        first_case,
        ops,
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        enabling="everything",
        what="every FlagGems op enabled: ",
    )
    check_gradients(
        tensor_op,
        first_case,
        ops,
        device=fl_device,
        gems=flag_gems,
        enabling="everything",
        what="every FlagGems op enabled: ",
    )
