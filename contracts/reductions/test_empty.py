"""Empty and unit dims: size-0 and size-1 reduced and kept dims behave as torch's (sum 0,
prod 1, mean NaN, an index op over an empty dim raises)."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.registry.reductions import Case

CASES = [
    Case((0, 5), 0),
    Case((3, 0, 4), 1),
    Case((3, 0, 4), 2),
    Case((3, 1, 4), 1),
    Case((1, 5), 0),
    Case((3, 5, 1), 1),
    Case((3, 5, 1), 2),
    Case((1,), 0),
]


@pytest.mark.parametrize("empty_case", CASES, ids=lambda c: c.id)
def test_empty_and_unit_dims(flag_gems, fl_device, fl_settings, any_op, empty_case):
    op, case = any_op, fitted(empty_case, any_op, fl_settings.sweep)
    x = torch.randn(case.shape, generator=torch.Generator().manual_seed(3)).to(fl_device)
    for keepdim in (False, True) if op.keepdim != "none" else (False,):
        assert_agrees(
            op,
            lambda k=keepdim: op.call(x, case.dim, k),
            x,
            case.dim,
            keepdim,
            f"{case.shape} dim={case.dim} keepdim={keepdim}",
        )
