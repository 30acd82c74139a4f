"""Launch limits: an extent a kernel puts on grid axis y or z fails to launch on CUDA-like
devices past 65535 programs there (registry: TensorOp.grid, read from each launch: addmm's
N tiles on y, bmm's N tiles on y and its batch on z, index_select's index tiles on y).  The
interpreter loops over any grid; the emulator (every CPU lane's) refuses what the device would,
so the CPU lanes see it at the launch, before a program runs."""

import pytest

from pytest_fl_contract.families.tensorops import MATMUL, check, wraps
from pytest_fl_contract.plugin import session_of

PADDED_GIB = 2  # the matmul route's copy of B, K padded to 256 rows, past which the interpreter lanes stop


def test_grid_limits(flag_gems, fl_device, request, grid_op, grid_case):
    op, case = grid_op, grid_case
    if fl_device == "cpu" and op.family == MATMUL:
        *batch, _, _, n = case.shape
        padded = 4 * 256 * n * (batch[0] if batch else 1) / 2**30
        if wraps(session_of(request.config), op) and padded > PADDED_GIB:
            pytest.skip(
                f"{op.name} {case.id}: the matmul route copies B with K padded to 256 rows "
                f"({padded:.0f} GiB): hardware lanes run it"
            )
    check(op, case, op.operands(case), device=fl_device, dtype="float32", gems=flag_gems, what=f"{case.id}: ")
