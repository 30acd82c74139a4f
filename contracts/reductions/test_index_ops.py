"""Index ops (argmax, argmin): the first index of tied extremes, as torch; all-equal
slices; size-1 dims; NaN is the extreme (torch's rule)."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import on_device
from pytest_fl_contract.registry.reductions import Case

INF, NAN = float("inf"), float("nan")


def tied(case: Case, values: str) -> torch.Tensor:
    """Planted at positions that exist (a size-1 dim keeps only position 0)."""
    shape, d = case.shape, case.dim
    x = torch.zeros(shape)
    n = shape[d]

    def put(i: int, value: float) -> None:
        if 0 <= i < n:
            x.select(d, i).fill_(value)

    if values == "ties":  # the extreme at positions 1 and n-2; the opposite one at 0
        put(0, -3.0), put(1, 3.0), put(n - 2, 3.0)
    elif values == "nan":
        x.normal_(generator=torch.Generator().manual_seed(7))
        put(n - 2, NAN), put(min(1, n - 1), NAN)
    elif values == "infs":  # both infinities: the extreme one wins over the other
        put(1, -INF), put(2, INF)
    return x  # "equal": all zeros


CASES = [Case((4, 8, 6), 1), Case((4, 6, 8), 2), Case((8, 6), 0), Case((3, 1, 6), 1), Case((1, 7), 1)]


@pytest.mark.parametrize("values", ["ties", "equal", "nan", "infs"])
@pytest.mark.parametrize("index_case", CASES, ids=lambda c: c.id)
def test_index_ops(flag_gems, fl_device, index_op, index_case, values):
    op, case, pattern = index_op, index_case, values
    x = tied(case, pattern)
    if op.extreme == "min" and pattern in ("ties", "infs"):
        x = -x
    x = on_device(x, fl_device, op)
    for keepdim in (False, True):
        assert_agrees(
            op,
            lambda k=keepdim: op.call(x, case.dim, k),
            x,
            case.dim,
            keepdim,
            f"{pattern} along dim {case.dim} of {case.shape}, keepdim={keepdim}",
            exact_index=True,
        )
