"""Routing: with the workaround installed, a single non-inner int dim never reaches a
``*non_inner*`` kernel, and every other call (inner, multi-dim, None) launches exactly
what the unwrapped entry point launches and returns the same bits.

The kernels actually launched are recorded (LaunchSpy), on a GPU or the interpreter."""

import pytest
import torch

from pytest_fl_contract.families.dispatch import outcome
from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case
from pytest_fl_contract.testing.spy import spy_launches

FORWARDED = [Case((3, 64, 5), 2), Case((5, 64), 1)]  # inner dims: forwarded unchanged


def _launches(op, fn, x, dim):
    """Kernels launched by one call, and its outcome (result or exception type)."""
    with spy_launches([op.module, "pytest_fl_contract.workarounds.fastpath"]) as spy:
        result = outcome(lambda: op.invoke(fn, x, dim))
    return spy.launched, result


def _same(got, want):
    if got[0] != want[0] or got[0] == "raises":
        return got == want
    return torch.equal(got[1].cpu(), want[1].cpu())


@pytest.fixture
def wrapped(fl_workaround):
    if fl_workaround is None:
        pytest.skip("routing is a property of the workaround, and this lane runs without one")
    return fl_workaround


def test_non_inner_is_routed(flag_gems, fl_device, wrapped, op, partial_case):
    x = make_input(partial_case, "float32", fl_device)
    launched, result = _launches(op, op.fn(), x, op.dim_arg(partial_case.dim))
    assert result[0] == "ok", f"{op.name} {partial_case.id} raised {result[1]}"
    assert launched, f"{op.name}: no kernel launched"
    non_inner = [k for k in launched if "non_inner" in k]
    assert not non_inner, f"{op.name} {partial_case.id} still launched {non_inner} under the workaround"


@pytest.mark.parametrize("multi", [False, True], ids=["single", "multi-dim"])
@pytest.mark.parametrize("fwd_case", FORWARDED, ids=lambda c: c.id)
def test_others_are_forwarded(flag_gems, fl_device, wrapped, op, fwd_case, multi):
    case = fwd_case
    original = getattr(op.fn(), "__wrapped__", None)
    if original is None:
        pytest.skip(f"{op.name} is not wrapped by {wrapped.module}")
    if multi and op.dim_form != "list":
        pytest.skip(f"{op.name} takes a single int dim")
    x = make_input(case, "float32", fl_device)
    dim = [0, case.dim] if multi else op.dim_arg(case.dim)
    got_launched, got = _launches(op, op.fn(), x, dim)
    want_launched, want = _launches(op, original, x, dim)
    assert got_launched == want_launched, f"{op.name} {case.id} dim={dim}: {got_launched} != {want_launched}"
    assert _same(got, want), f"{op.name} {case.id} dim={dim}: {got[0]} != {want[0]}"


def test_none_dim_is_forwarded(flag_gems, fl_device, wrapped, op):
    original = getattr(op.fn(), "__wrapped__", None)
    if original is None or op.kind == "along":
        pytest.skip(f"{op.name}: no dim=None form or not wrapped")
    x = make_input(Case((3, 5, 64), 1), "float32", fl_device)
    got_launched, got = _launches(op, op.fn(), x, None)
    want_launched, want = _launches(op, original, x, None)
    assert got_launched == want_launched
    assert _same(got, want), f"{op.name} dim=None: {got[0]} != {want[0]}"
