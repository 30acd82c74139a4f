"""Every backward entry point of the registry (softmax_backward, log_softmax_backward:
(grad_output, output, dim, input_dtype)) against torch autograd in float64, over the
forward's partial-tile cases and dims, inner and non-inner, and with an output that is not
contiguous.  A backward that drops a term over a non-inner dim passes every forward contract."""

import pytest
from pytest_fl_contract.contracts.reductions.test_paths import check_backward

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

BACKWARD_CASES = {
    "quick": [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 13), -1), Case((2, 300, 8), 1)],
    "full": [
        Case((3, 5, 64), 1),
        Case((13, 1024), 0),
        Case((64, 557, 256), 1),
        Case((4099, 64), 0),
        Case((3, 64, 557), -1),
    ],
}


def backward_params(ops, sweep):
    return [
        pytest.param(op, entry.attr, case, layout, id=f"{entry.attr}-{case.id}-{layout}")
        for op in ops
        for entry in op.entries
        if entry.backward and entry.out is None
        for case in BACKWARD_CASES[sweep]
        for layout in ("contiguous", "column_major_output")
    ]


def test_backward(flag_gems, fl_device, backward_op, entry, backward_case, layout):
    op, case = backward_op, backward_case
    fn = op.fn(entry) if hasattr(__import__(op.module, fromlist=["_"]), entry) else None
    if fn is None:
        pytest.skip(f"flag_gems {flag_gems.__version__} has no {entry}")
    x = make_input(case, "float32", fl_device)
    check_backward(op, fn, x, case.dim, f"{entry} over dim {case.dim} of {case.shape}, {layout} output", layout)
