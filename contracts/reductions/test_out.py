"""out= entry points: the caller's buffer is written (and returned), in its dtype, with
the caller's keepdim; bool input sums into an int64 buffer; out bindings are never the
non-out function.  aten's logsumexp reaches sum.IntList_out, so it is checked too."""

import sys

import pytest
import torch

from pytest_fl_contract.families.reductions import check, make_input
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.reductions import Case

# use_gems() overrides aten kernels on purpose; torch warns about it once per process.
pytestmark = pytest.mark.filterwarnings("ignore:Warning only once for all operators:UserWarning")

OUT_OPS = [op for op in ROWS.rows("reductions") if op.out_entry]
CASES = [Case((3, 5, 64), 1), Case((3, 64, 5), 2)]


def _bool_to_int64(op):
    """Where torch itself sums bool into int64 (sum, cumsum), that rule is checked."""
    try:
        rule = op.torch_fn(torch.ones(2, 3, dtype=torch.bool), 1, False).dtype
    except RuntimeError as exc:
        pytest.skip(f"torch refuses {op.name} of bool: {str(exc).splitlines()[0][:80]}")
    if rule != torch.int64:
        pytest.skip(f"torch's {op.name} of bool gives {rule}, not int64")


@pytest.mark.parametrize("layout", ["out_wrong_size"])  # an empty buffer: a known defect's predicate sees it
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("out_case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("out_op", OUT_OPS, ids=lambda op: op.name)
def test_bool_into_int64_buffer(flag_gems, fl_device, out_op, out_case, keepdim, layout):
    op = out_op
    case = out_case
    _bool_to_int64(op)
    if keepdim and op.keeps_shape:
        pytest.skip(f"{op.name} keeps the input's shape: no keepdim")
    x = make_input(case, "float32", fl_device) > 0
    buf = torch.empty(0, dtype=torch.int64, device=fl_device)
    ret = op.call(x, case.dim, keepdim, attr=op.out_entry, out=buf)
    assert ret is buf, "out= must return the caller's buffer"
    assert buf.dtype == torch.int64
    expected = op.reference(x, case.dim, keepdim)
    assert buf.shape == expected.shape, f"{tuple(buf.shape)} != {tuple(expected.shape)}"
    assert torch.equal(buf.cpu(), expected)


@pytest.mark.parametrize("out_case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("out_op", OUT_OPS, ids=lambda op: op.name)
def test_bool_sums_to_int64_without_out(flag_gems, fl_device, out_op, out_case):
    """The dtype rule the out= path must keep, checked on the plain entry point too."""
    _bool_to_int64(out_op)
    x = make_input(out_case, "float32", fl_device) > 0
    got = out_op.call(x, out_case.dim)
    assert got.dtype == torch.int64, f"bool sum returned {got.dtype}"
    assert torch.equal(got.cpu(), out_op.reference(x, out_case.dim))


@pytest.mark.parametrize("layout", ["out_wrong_size"])
@pytest.mark.parametrize("out_case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("out_op", OUT_OPS, ids=lambda op: op.name)
def test_float_buffer_is_written(flag_gems, fl_device, out_op, out_case, layout):
    op = out_op
    case = out_case
    x = make_input(case, "float32", fl_device)
    buf = torch.full((7,), float("nan"), device=fl_device)  # wrong size: must be resized
    ret = op.call(x, case.dim, False, attr=op.out_entry, out=buf)
    assert ret is buf
    check(op, buf, x, case.dim)


@pytest.mark.parametrize("out_op", OUT_OPS, ids=lambda op: op.name)
def test_out_bindings(flag_gems, out_op):
    op = out_op
    module = sys.modules[op.module]
    out_fn, fn = getattr(module, op.out_entry), getattr(module, op.entry)
    assert out_fn is not fn, f"{op.out_entry} is bound to the same object as {op.entry}"
    config = dict((name, f) for name, f, *_ in flag_gems._FULL_CONFIG)
    outs = [name for name in config if name.endswith("_out") and config[name].__name__ == op.entry]
    assert not outs, f"out overloads {outs} are bound to {op.entry}, not an out= entry point"


@pytest.mark.parametrize("aten_op", [op for op in ROWS.rows("reductions") if op.composed_of], ids=lambda op: op.name)
def test_composite_through_an_out_binding(flag_gems, fl_device, aten_op):
    """Where FlagGems lacks an op (5.0.2 has no logsumexp), aten composes it through another
    op's out= binding (sum.IntList_out): that binding is what the workaround must get right."""
    if aten_op.installed():
        pytest.skip(f"flag_gems {flag_gems.__version__} has its own {aten_op.name}: its own contracts cover it")
    x = make_input(Case((3, 5, 64), 1), "float32", fl_device)
    with flag_gems.use_gems(include=[ROWS.get(aten_op.composed_of).out_entry]):
        got = aten_op.torch_fn(x, [1], False)
    torch.testing.assert_close(got.cpu().double(), aten_op.reference(x, [1]), rtol=1e-5, atol=1e-5)
