"""Dim form: each entry point accepts the form it accepts (int or one-element list) and
rejects the other the same way whether or not the dim is routed: a wrapper that converts
the form changes behaviour only on non-inner dims, and this catches it."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import FORM_CASES, fitted

from pytest_fl_contract.families.dispatch import outcome
from pytest_fl_contract.families.reductions import make_input


def _outcome(op, form, case, device, sweep):
    case = fitted(case, op, sweep)
    x = make_input(case, "float32", device)
    kind, value = outcome(lambda: op.call(x, case.dim, False, form=form))
    return (kind, tuple(value.shape) if kind == "ok" else value)


@pytest.mark.parametrize("form", ["int", "list"])
def test_dim_form(flag_gems, fl_device, fl_settings, op, form):
    routed = _outcome(op, form, FORM_CASES["non-inner"], fl_device, fl_settings.sweep)
    forwarded = _outcome(op, form, FORM_CASES["inner"], fl_device, fl_settings.sweep)
    assert routed[0] == forwarded[0], f"{op.name} with a {form} dim: non-inner {routed}, inner {forwarded}"
    if routed[0] == "raises":
        assert routed == forwarded
    if form == op.dim_form:
        assert routed[0] == "ok", f"{op.name} rejects its own dim form on a non-inner dim: {routed}"
