"""FlagGems enabled for every op, as torch_fl and model servers run it: each row's torch call
over a non-inner dim with ``use_gems()`` registering every FlagGems op, and its input's
gradient through autograd there (every op the backward dispatches to is FlagGems' too),
against torch in float64."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.dispatch import every_op, use_gems
from pytest_fl_contract.families.reductions import check, make_input, tolerance

pytestmark = pytest.mark.filterwarnings("ignore:Warning only once for all operators:UserWarning")


def test_every_op_enabled(flag_gems, fl_device, fl_settings, op, enabled_case, direction):
    """``direction``: the result, or the input's gradient (rows torch differentiates: the
    conftest asks torch, ``sweeps.differentiable``)."""
    every_op(
        flag_gems,
        fl_settings.platform.defects,
        lambda: _case(flag_gems, fl_device, fl_settings, op, enabled_case, direction),
    )


def _case(flag_gems, fl_device, fl_settings, op, enabled_case, direction):
    import torch

    case = fitted(enabled_case, op, fl_settings.sweep)
    x = make_input(case, "float32", fl_device)
    with use_gems(flag_gems, op.gems_names, "everything"):
        got = op.torch_fn(x, case.dim, False)
    if direction == "forward":
        check(op, got, x, case.dim)
        return
    ref_in = x.detach().cpu().double().requires_grad_()
    want = op.torch_fn(ref_in, case.dim, False)
    upstream = torch.randn(want.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    want.backward(upstream)
    leaf = x.detach().clone().requires_grad_()
    with use_gems(flag_gems, op.gems_names, "everything"):
        result = op.torch_fn(leaf, case.dim, False)
        assert result.requires_grad, (
            f"{op.name}: with every FlagGems op enabled its result has no gradient (autograd lost the op's derivative)"
        )
        result.backward(upstream.to(device=leaf.device, dtype=leaf.dtype))
    assert leaf.grad is not None, f"{op.name}: autograd gave no gradient with every FlagGems op enabled"
    torch.testing.assert_close(
        leaf.grad.detach().cpu().double(),
        ref_in.grad,
        equal_nan=True,
        **tolerance("float32", case.shape[case.dim % len(case.shape)], op.kind),
        msg=lambda m: f"{op.name}: the input's gradient with every FlagGems op enabled: {m}",
    )
