"""State from one call to the next, in one process: each layer over a sequence of cases that
share its kernels but change what a compiler or a tuner may specialise on (the last extent 16,
then 5, 16, 12, 16: divisible, not, a power of two, not, interleaved), each against float64
autograd; and a result held while the same layer runs again on other values of the same
shape, then read: a kernel bound to its first launch's sizes, or an output buffer cached per
shape and handed out again, passes every contract that makes one call per case."""

import torch

from pytest_fl_contract.families.layers import check, compare, make_inputs, reference, rounded, run
from pytest_fl_contract.registry.layers import LayerCase

SIZES = (16, 5, 16, 12, 16)


def test_interleaved_sizes(flag_gems, fl_device, layer, first_case):
    for i, n in enumerate(SIZES):
        case = LayerCase((*first_case.shape[:-1], n), first_case.norm, first_case.groups)
        check(
            layer,
            case,
            make_inputs(layer, case, seed=i),
            device=fl_device,
            dtype="float32",
            gems=flag_gems,
            backward=True,
            what=f"call {i + 1} of the sequence, {case.shape}: ",
        )


def test_an_earlier_result_survives_a_later_call(flag_gems, fl_device, layer, first_case):
    first, second = (rounded(make_inputs(layer, first_case, seed=s), "float32") for s in (0, 1))
    held = run(
        layer, first_case, first, device=fl_device, dtype="float32", gems=flag_gems, backward=True, on_device=True
    )
    kept = {k: None if v is None else v.clone() for k, v in held.items()}
    run(layer, first_case, second, device=fl_device, dtype="float32", gems=flag_gems, backward=True)
    for key, value in held.items():
        if value is not None:
            assert torch.equal(value.cpu(), kept[key].cpu()), (
                f"{layer.name}: the first call's {key} changed when the layer ran again on other values"
            )
    compare(
        layer,
        first_case,
        {k: None if v is None else v.cpu() for k, v in held.items()},
        reference(layer, first_case, first, backward=True),
        "float32",
        "the first call's results, held: ",
    )


def test_a_graph_held_across_a_later_call(flag_gems, fl_device, layer, first_case):
    """The first call's backward runs after the layer ran forward again on other values of
    the same shape: a statistic saved for the backward in a workspace shared by every call of
    one shape (1/rms, a mean) is then the later call's."""
    first, second = (rounded(make_inputs(layer, first_case, seed=s), "float32") for s in (0, 1))
    got = run(
        layer, first_case, first, device=fl_device, dtype="float32", gems=flag_gems, backward=True, between=second
    )
    compare(
        layer,
        first_case,
        got,
        reference(layer, first_case, first, backward=True),
        "float32",
        "the first call's gradients, taken after a later forward: ",
    )
