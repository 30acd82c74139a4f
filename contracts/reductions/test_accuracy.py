"""Accuracy: every op over the sweep matches a float64 CPU reference.

Sweeps hit partial row tiles (non-power-of-two N, K > 1), where a kernel that drops the
row half of its 2-D mask sums rows that are not there."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.reductions import check, make_input
from pytest_fl_contract.registry.reductions import Case


def test_accuracy(flag_gems, fl_device, op, case, dtype):
    x = make_input(case, dtype, fl_device, op=op)  # index ops: a ramp, the winner past the end
    check(op, op.call(x, case.dim), x, case.dim)


LARGE = [Case((3, 5, 64), 1), Case((3, 64, 5), -1)]


@pytest.mark.parametrize("values", ["offset"])  # a known defect's predicate sees it (Call.values)
@pytest.mark.parametrize("large_case", LARGE, ids=lambda c: c.id)
def test_large_inputs_stay_finite(flag_gems, fl_device, fl_settings, op, large_case, values):
    """Inputs around 1e2 with a spread of 30: exp() overflows in fp32 unless the kernel
    subtracts the max first, and a sum or a variance loses its digits to the offset unless
    it accumulates with care.  For an op that subtracts a maximum, every slice also runs
    from 10 (its first) to 190 (its last): a running result (logcumsumexp) underflows its
    early prefixes unless the maximum it subtracts is each prefix's own."""
    if op.exempt_from("large_inputs"):
        pytest.skip(f"{op.name}: {op.exempt_from('large_inputs')}")
    case = fitted(large_case, op, fl_settings.sweep)
    x = make_input(case, "float32", "cpu").mul_(30).add_(100)
    if op.running_max:
        x.select(case.dim, 0).fill_(10.0)
        x.select(case.dim, -1).fill_(190.0)
    x = x.to(fl_device)
    check(op, op.call(x, case.dim), x, case.dim)
