"""A layer leaves what it was given as it was: its input, weight and bias keep their values
(a kernel that writes its statistics into the input - batch norm with no running buffers -
corrupts the caller's tensor), and its output is its own storage."""

import pytest
import torch

from pytest_fl_contract.families.layers import counted, make_inputs


def _span(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


@pytest.mark.parametrize("values", ["no_running_stats"])  # batch norm's known defect reads it (LayerCall.values)
def test_inputs_are_left_alone(flag_gems, fl_device, layer, case, values):
    inputs = make_inputs(layer, case)
    x = inputs.x.to(fl_device)
    weight = None if inputs.weight is None else inputs.weight.to(fl_device)
    bias = None if inputs.bias is None else inputs.bias.to(fl_device)
    before = [t.detach().cpu().clone() for t in (x, weight, bias) if t is not None]
    with (
        counted(flag_gems, {layer.forward}) as seen,
        torch.backends.cudnn.flags(enabled=False),
        flag_gems.use_gems(include=list(layer.gems_names)),
    ):
        y = layer.torch_call(
            x, weight, bias, case
        )  # batch norm: no running buffers (torch.nn.BatchNorm1d(track_running_stats=False))
    assert layer.forward in seen, f"{layer.name}: torch dispatch never reached FlagGems' {layer.forward}"
    after = [t.detach().cpu() for t in (x, weight, bias) if t is not None]
    for name, was, now in zip(("input", "weight", "bias"), before, after):
        changed = ~((was == now) | (was.isnan() & now.isnan()))
        assert not bool(changed.any()), (
            f"{layer.name} {case.id}: the call changed its {name} "
            f"({int(changed.sum())} element(s), the first at {changed.nonzero()[0].tolist()})"
        )
    (a0, a1), (b0, b1) = _span(y), _span(x)
    assert not (a0 < b1 and b0 < a1), f"{layer.name} {case.id}: the output shares storage with the input"
