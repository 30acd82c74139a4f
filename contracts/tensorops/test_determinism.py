"""Determinism: identical calls are bit-identical even when the memory around the tensors
changes between them (the allocator poisoned with NaN, 1e30, -7).  A matmul whose K tail
reads rows past its operand multiplies them by zeros: only NaN or inf there shows it - which
is why this contract, not accuracy, is the one the masked-row defect fails on a matmul.
Accumulating index ops get integer values: their atomic adds are exact in any order."""

import torch

from pytest_fl_contract.families.tensorops import run

FILLS = (float("nan"), 1.0e30, -7.0)


def _bits(t):
    t = t.contiguous()
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.int64)


def test_determinism(flag_gems, fl_device, fl_poison, tensor_op, case):
    ops = tensor_op.operands(case, values="integers" if tensor_op.accumulates else "normal")
    results = []
    for fill in FILLS:
        fl_poison(fill)
        results.append(run(tensor_op, ops, device=fl_device, dtype="float32", gems=flag_gems))
    for fill, result in zip(FILLS[1:], results[1:]):
        assert torch.equal(_bits(results[0]), _bits(result)), (
            f"{tensor_op.name} {case.id}: the result changed after the device memory was filled with {fill} "
            f"({int((results[0] != result).sum())} element(s); NaN now: {int(result.isnan().sum())})"
        )
