"""Through torch dispatch: flag_gems.use_gems() registers the (possibly wrapped) entry
points with aten, and torch.sum / mean / softmax / ... must reach the same contract (every
FlagGems op enabled: test_enabled.py)."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.dispatch import use_gems
from pytest_fl_contract.families.reductions import check, make_input
from pytest_fl_contract.registry.reductions import Case

# use_gems() overrides aten kernels on purpose; torch warns about it once per process.
pytestmark = pytest.mark.filterwarnings("ignore:Warning only once for all operators:UserWarning")

CASES = [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 5), -1)]


@pytest.mark.parametrize("dispatch_case", CASES, ids=lambda c: c.id)
def test_torch_dispatch(flag_gems, fl_device, fl_settings, op, dispatch_case):
    case = fitted(dispatch_case, op, fl_settings.sweep)
    x = make_input(case, "float32", fl_device)
    with use_gems(flag_gems, op.gems_names):
        got = op.torch_fn(x, case.dim, False)
    check(op, got, x, case.dim)
