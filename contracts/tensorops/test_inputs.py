"""An op leaves its operands as they were (the out-of-place scatter and index_add write into
a copy of the input, never into it), and its result is its own storage."""

import torch

from pytest_fl_contract.families.tensorops import prepared


def test_inputs_are_left_alone(flag_gems, fl_device, tensor_op, case):
    ops = prepared(tensor_op, tensor_op.operands(case), device=fl_device, dtype="float32", layout="contiguous")
    before = {k: v.detach().cpu().clone() for k, v in ops.items() if isinstance(v, torch.Tensor)}
    with flag_gems.use_gems(include=list(tensor_op.gems_names)):
        result = tensor_op.call(torch, ops)
    for key, was in before.items():
        now = ops[key].detach().cpu()
        changed = ~((was == now) | (was.isnan() & now.isnan())) if was.is_floating_point() else was != now
        assert not bool(changed.any()), (
            f"{tensor_op.name} {case.id}: the call changed its {key} ({int(changed.sum())} element(s))"
        )
    s = result.untyped_storage()
    for key, t in ops.items():
        if isinstance(t, torch.Tensor) and t.numel() and result.numel():
            o = t.untyped_storage()
            assert not (s.data_ptr() < o.data_ptr() + o.nbytes() and o.data_ptr() < s.data_ptr() + s.nbytes()), (
                f"{tensor_op.name} {case.id}: the result shares storage with its {key}"
            )
