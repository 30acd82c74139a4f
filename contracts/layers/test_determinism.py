"""Determinism: identical calls, forward and backward, are bit-identical even when the memory
around the tensors changes between them (the allocator poisoned with NaN, 1e30, -7).  A
kernel that reads rows past the end multiplies them by a zero it loaded under the right
mask (rms_norm's weight gradient): only NaN or inf there shows it."""

import torch

from pytest_fl_contract.families.layers import make_inputs, run

FILLS = (float("nan"), 1.0e30, -7.0)


def _bits(t):
    t = t.contiguous()
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.int64)


def test_determinism(flag_gems, fl_device, fl_poison, layer, case):
    inputs = make_inputs(layer, case)
    results = []
    for fill in FILLS:
        fl_poison(fill)
        results.append(run(layer, case, inputs, device=fl_device, dtype="float32", gems=flag_gems, backward=True))
    for fill, result in zip(FILLS[1:], results[1:]):
        for key, value in result.items():
            if value is not None:
                assert torch.equal(_bits(results[0][key]), _bits(value)), (
                    f"{layer.name} {case.id}: {key} changed after the device memory was filled with {fill}"
                )
