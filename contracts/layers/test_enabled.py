"""FlagGems enabled for every op, as torch_fl and model servers run it: each layer's first
case, forward and backward through autograd, with ``use_gems()`` registering every FlagGems
op - the layer's entry points and every op its (or a workaround route's) arithmetic and its
autograd dispatch to - against torch's float64 autograd."""

import pytest

from pytest_fl_contract.families.dispatch import every_op
from pytest_fl_contract.families.layers import check, make_inputs

pytestmark = pytest.mark.filterwarnings("ignore:Warning only once for all operators:UserWarning")


def test_every_op_enabled(flag_gems, fl_device, fl_settings, layer, first_case):
    every_op(
        flag_gems,
        fl_settings.platform.defects,
        lambda: check(
            layer,
            first_case,
            make_inputs(layer, first_case),
            device=fl_device,
            dtype="float32",
            gems=flag_gems,
            backward=True,
            enabling="everything",
            what="every FlagGems op enabled: ",
        ),
    )
