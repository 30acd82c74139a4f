"""keepdim round trip: keepdim=True has a 1 at the reduced dim and squeezes to the
keepdim=False result, bit for bit, on routed (non-inner) and forwarded dims alike."""

import pytest
import torch

from pytest_fl_contract.families.reductions import check, make_input


def test_keepdim(flag_gems, fl_device, op, keepdim_case):
    if op.exempt_from("keepdim"):
        pytest.skip(f"{op.name}: {op.exempt_from('keepdim')}")
    case = keepdim_case
    x = make_input(case, "float32", fl_device)
    kept, dropped = op.call(x, case.dim, True), op.call(x, case.dim, False)
    expected = list(x.shape)
    expected[case.dim] = 1
    assert list(kept.shape) == expected, f"keepdim=True gave {tuple(kept.shape)}"
    assert torch.equal(kept.squeeze(case.dim).cpu(), dropped.cpu())
    check(op, kept, x, case.dim, keepdim=True)
