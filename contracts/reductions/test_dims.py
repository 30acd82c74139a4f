"""Dims and keepdim, as PyTorch's ReductionOpInfo checks them: every dim of ranks 1 to 4,
negative and positive, keepdim True and False, the output shape and values as torch's;
and dim lists and dim=None where the entry point accepts them (the workaround forwards
them; they are still checked).  Sizes are not powers of two, so non-inner dims end in a
partial row tile."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

SHAPES = {1: (7,), 2: (5, 6), 3: (3, 5, 6), 4: (2, 3, 5, 4)}
TOY = {1: (5,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 3, 2, 3)}  # tl.reduce ops on the interpreter
DIM_CASES = [Case(SHAPES[r], d) for r in SHAPES for d in range(-r, r)]


def _shape(op, fl_settings, rank):
    return TOY[rank] if fl_settings.sweep == "quick" and op.interpreter == "toy" else SHAPES[rank]


@pytest.mark.parametrize("dim_case", DIM_CASES, ids=lambda c: c.id)
def test_every_dim(flag_gems, fl_device, fl_settings, any_op, dim_case):
    op = any_op
    shape = _shape(op, fl_settings, len(dim_case.shape))
    x = make_input(Case(shape, dim_case.dim), "float32", fl_device, op=op)
    for keepdim in (False, True) if op.keepdim != "none" else (False,):
        assert_agrees(
            op,
            lambda k=keepdim: op.call(x, dim_case.dim, k),
            x,
            dim_case.dim,
            keepdim,
            f"{shape} dim={dim_case.dim} keepdim={keepdim}",
        )


LIST_CASES = [Case((3, 5, 6), [0, 2]), Case((3, 5, 6), [-1, 0]), Case((2, 3, 5, 4), [1, 2]), Case((3, 5, 6), None)]


@pytest.mark.parametrize("dims_case", LIST_CASES, ids=lambda c: c.id)
def test_dim_lists_and_none(flag_gems, fl_device, any_op, dims_case):
    op = any_op
    if dims_case.dim is None and not op.accepts_none:
        pytest.skip(f"{op.name} has no dim=None form (torch's own {op.name} needs a dim)")
    if dims_case.dim is not None and "list" not in op.dim_forms:
        pytest.skip(f"{op.name} takes a single int dim")
    x = make_input(dims_case, "float32", fl_device, op=op)
    for keepdim in (False, True):
        assert_agrees(
            op,
            lambda k=keepdim: op.call(x, dims_case.dim, k),
            x,
            dims_case.dim,
            keepdim,
            f"{dims_case.shape} dim={dims_case.dim} keepdim={keepdim}",
        )
