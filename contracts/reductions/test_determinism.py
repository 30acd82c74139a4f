"""Determinism: identical calls are bit-identical even when the memory around the input
changes between them.  The allocator is poisoned (allocate, fill, free) before each call,
so an out-of-bounds read - the seed's "same input, different results" - shows."""

import torch

from pytest_fl_contract.families.reductions import bits, make_input

FILLS = (float("nan"), 1.0e30, -7.0)


def test_determinism(flag_gems, fl_device, fl_poison, op, partial_case):
    x = make_input(partial_case, "float32", fl_device)
    results = []
    for fill in FILLS:
        fl_poison(fill)
        results.append(bits(op.call(x, partial_case.dim)))
    for fill, result in zip(FILLS[1:], results[1:]):
        assert torch.equal(results[0], result), (
            f"{op.name} {partial_case.id}: result changed after the device memory was filled with {fill}"
        )
