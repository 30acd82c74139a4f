"""A result is its own tensor, an input is left as it was, an out= result is the buffer
given: for every op.  A no-op shortcut for a size-1 dim that returns the input (or a view
of it) gives right values and passes every value contract; writing into its result then
changes the caller's input."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

ALIAS_CASES = [Case((3, 1, 4), 1), Case((3, 5, 4), 1), Case((3, 4, 8), -1), Case((1, 4), 0), Case((3, 5, 4), None)]


def _span(t):
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _overlap(a, b) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


@pytest.mark.parametrize("alias_case", ALIAS_CASES, ids=lambda c: c.id)
def test_result_owns_its_storage(flag_gems, fl_device, fl_settings, any_op, alias_case):
    op, case = any_op, fitted(alias_case, any_op, fl_settings.sweep)
    if case.dim is None and not op.accepts_none:
        pytest.skip(f"{op.name} takes no dim=None")
    x = make_input(case, "float32", fl_device, op=op if op.kind == "index" else None)
    before = x.detach().cpu().clone()
    for dim in (case.dim,):
        got = op.call(x, dim)
        assert not _overlap(got, x), f"dim={dim} of {case.shape}: the result shares storage with the input"
        assert torch.equal(x.detach().cpu(), before), f"dim={dim} of {case.shape}: the call changed its input"
        got.fill_(7)  # the caller owns its result: writing it must leave the input alone
        assert torch.equal(x.detach().cpu(), before), f"dim={dim} of {case.shape}: writing the result changed the input"


@pytest.mark.parametrize("layout", ["out_wrong_size"])  # an empty buffer: a known defect's predicate sees it
@pytest.mark.parametrize("alias_case", ALIAS_CASES[:2], ids=lambda c: c.id)
def test_out_is_the_buffer(flag_gems, fl_device, any_op, alias_case, layout):
    op, case = any_op, alias_case
    if not op.out_entry:
        pytest.skip(f"{op.name} has no out= binding in the registry")
    x = make_input(case, "float32", fl_device)
    out = torch.empty(0, device=fl_device)
    got = op.call(x, case.dim, attr=op.out_entry, out=out)
    assert got is out or got.data_ptr() == out.data_ptr(), "the out= binding returned another tensor than its out"
    assert not _overlap(out, x), "the out= buffer shares storage with the input"
