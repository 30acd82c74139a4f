"""State from one call to the next, in one process: each op over a sequence of cases that share
its kernels but change what a compiler or a tuner may specialise on (a matmul's K, an index op's
index extent: 16, then 5, 16, 12, 16 - divisible, not, a power of two, not, interleaved), each
against float64; and a result held while the same op runs again on other values of the same
shape, then read: a kernel bound to its first launch's sizes, or an output buffer cached per
shape and handed out again, passes every contract that makes one call per case."""

from dataclasses import replace

import torch

from pytest_fl_contract.families.tensorops import check, compare, reference, rounded, run
from pytest_fl_contract.registry.tensorops import MATMUL

SIZES = (16, 5, 16, 12, 16)


def _varied(op, case, n):
    if op.family == MATMUL:  # K, the extent tl.dot folds
        return replace(case, shape=(*case.shape[:-2], n, case.shape[-1]))
    limit = case.shape[case.dim] if op.unique else n  # scatter's indices are unique along dim
    return replace(case, index=min(n, limit))


def test_interleaved_sizes(flag_gems, fl_device, tensor_op, first_case):
    for i, n in enumerate(SIZES):
        case = _varied(tensor_op, first_case, n)
        check(
            tensor_op,
            case,
            tensor_op.operands(case, seed=i),
            device=fl_device,
            dtype="float32",
            gems=flag_gems,
            what=f"call {i + 1} of the sequence, {case.id}: ",
        )


def test_an_earlier_result_survives_a_later_call(flag_gems, fl_device, tensor_op, first_case):
    op, case = tensor_op, first_case
    first, second = (rounded(op.operands(case, seed=s), "float32") for s in (0, 1))
    held = run(op, first, device=fl_device, dtype="float32", gems=flag_gems, on_device=True)
    kept = held.clone()
    run(op, second, device=fl_device, dtype="float32", gems=flag_gems)
    assert torch.equal(held.cpu(), kept.cpu()), f"{op.name}: the first call's result changed when it ran again"
    compare(op, case, held.cpu(), reference(op, first), "float32", "the first call's result, held: ")
