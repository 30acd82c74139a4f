"""Special values propagate exactly as torch propagates them: NaN, +inf and -inf in a slice
(the sum of +inf and -inf is NaN; softmax of a slice holding NaN is NaN; an all -inf
slice), values near the fp32 limit, and cancellation of large opposite values - on a
non-inner dim (partial row tiles) and on the inner one."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.families.reductions import make_input, on_device
from pytest_fl_contract.registry.reductions import Case

INF, NAN = float("inf"), float("nan")
VALUES = {  # planted along the reduced dim of every slice; the rest stays normal
    "nan": [1.0, NAN, 2.0],
    "pos_inf": [INF, 1.0, 2.0],
    "inf_minus_inf": [INF, -INF, 1.0],
    "all_neg_inf": [-INF] * 8,
    "huge": [1e30, 1e30, -1e30],
    "cancel": [1e7, 1.0, -1e7, 3.0],
}
CASES = [Case((3, 5, 8), 1), Case((3, 8, 5), 2)]  # non-inner (N=5 of a 2-D tile) and inner


def plant(x, dim, values):
    for i, value in enumerate(values[: x.shape[dim]]):
        x.select(dim, i).fill_(value)
    return x


@pytest.mark.parametrize("values", list(VALUES))
@pytest.mark.parametrize("special_case", CASES, ids=lambda c: c.id)
def test_special_values(flag_gems, fl_device, fl_settings, any_op, special_case, values):
    op, case = any_op, fitted(special_case, any_op, fl_settings.sweep)
    x = on_device(plant(make_input(case, "float32", "cpu", op=op), case.dim, VALUES[values]), fl_device, op)
    assert_agrees(
        op,
        lambda: op.call(x, case.dim),
        x,
        case.dim,
        what=f"{values} along dim {case.dim} of {case.shape}",
        exact_index=True,
    )
