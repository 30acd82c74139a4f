"""Every out= binding of an op that keeps the input's shape (the registry's entry points with
``out``: softmax_out, log_softmax_out and their backward bindings) writes the caller's buffer
with what the op's own entry point returns and returns that buffer - over a non-inner dim (the
defect's reach; a workaround routes it) and the last one.  Bit for bit where nothing routes
them (FlagGems' softmax is its softmax_out); to the accuracy tolerance under a workaround, whose
fast path takes the entry point and not the binding (another order of summation).  A FlagGems
line without the binding (5.0.2 has none: aten composes them) is a skip that says so."""

import math
import sys

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import ops_for

from pytest_fl_contract.families.reductions import assert_close, make_input, tolerance
from pytest_fl_contract.plugin import session_of
from pytest_fl_contract.registry.reductions import Case
from pytest_fl_contract.registry.schema import flag_gems_version

CASES = [Case((3, 5, 64), 1), Case((3, 64, 5), -1)]


def pytest_generate_tests(metafunc):
    if "binding" in metafunc.fixturenames:
        params = [
            pytest.param(op, entry, id=f"{op.name}-{entry.attr}")
            for op in ops_for("full", views=False)
            for entry in op.entries
            if entry.out and entry.kind == "along"
        ]
        metafunc.parametrize("binding_op,binding", params)


@pytest.mark.parametrize("out_case", CASES, ids=lambda c: c.id)
def test_out_binding_writes_the_callers_buffer(flag_gems, fl_device, request, binding_op, binding, out_case):
    op, entry, case = binding_op, binding, out_case
    module = sys.modules[op.module]
    bound = getattr(module, entry.attr, None)
    if bound is None:
        pytest.skip(f"flag_gems {flag_gems_version()} has no {op.module}.{entry.attr}")
    x = make_input(case, "float32", fl_device)
    if entry.backward:
        output = op.call(x, case.dim)
        grad = make_input(case, "float32", fl_device, seed=7)
        want = op.fn(entry.attr.removesuffix("_out"))(grad, output, case.dim, x.dtype)
        buf = torch.full_like(want, math.nan)
        got = bound(grad, output, case.dim, x.dtype, **{entry.out: buf})
    else:
        want = op.call(x, case.dim)
        buf = torch.full_like(want, math.nan)
        got = bound(x, case.dim, False, **{entry.out: buf})
    assert got is buf, f"{entry.attr} returned another tensor than its {entry.out}="
    got, want = buf.cpu(), want.cpu()
    unwritten = got.isnan() & ~want.isnan()
    assert not bool(unwritten.any()), (
        f"{entry.attr}: {int(unwritten.sum())} of {got.numel()} elements hold the NaN the "
        f"{entry.out}= buffer was filled with (never written, or read back from it)"
    )
    what = f"{entry.attr}: the {entry.out}= buffer against {entry.attr.removesuffix('_out')}"
    if not session_of(request.config).wraps(op):
        assert torch.equal(got, want), f"{what}: {int((got != want).sum())} of {got.numel()} differ"
        return
    assert_close(
        got.double(), want.double(), **tolerance("float32", x.shape[case.dim], "along"), msg=lambda m: f"{what}: {m}"
    )
