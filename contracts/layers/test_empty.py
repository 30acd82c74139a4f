"""Empty inputs: no rows (a batch of none) answer as torch answers - an empty result and
empty gradients, or the same refusal."""

from pytest_fl_contract.families.layers import check, make_inputs


def test_empty(flag_gems, fl_device, layer, empty_case):
    check(
        layer,
        empty_case,
        make_inputs(layer, empty_case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        backward=True,
        what="no rows: ",
    )
