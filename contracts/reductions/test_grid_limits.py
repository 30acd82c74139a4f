"""Launch limits: extents past what a device's grid takes on one axis.  CUDA and the
CUDA-like backends take 2**31 - 1 programs on grid axis x but 65535 on y and z, so a kernel
that puts a tensor extent (the inner columns K, the outer rows M) on y fails to launch once
that extent passes 65535, at a size every model meets.  The interpreter loops over any grid:
the emulator refuses what the device would (its profile's ``max_grid``), so the CPU lanes see
it too.  The cases past 2**26 columns (tile grids of up to 1024 columns a program) and
65537 rows are large for the interpreter: hardware lanes only."""

import math

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.plugin import session_of
from pytest_fl_contract.registry.reductions import Case

# Hardware only, with what the memory ledger should count: K2e26's input, a result of its size
# and a workaround's moved copy (0.5 GiB each) on the device, the input and result copied to the
# host (its float64 reference goes slab by slab); M65537 is 1.5 MB.  The ledger runs them beside
# the large-index cases, where a flat 4 GiB each made the lane wait on cases that hold nothing.
CASES = [
    pytest.param(Case((2, 65537), 0), id="K65537"),  # one program per column: 65537 on y
    pytest.param(Case((2, 5, 127, 129), 0), id="K81915"),  # found on an H200 by the generated draws
    pytest.param(
        Case((2, 2**26 + 3), 0), id="K2e26", marks=pytest.mark.requires_device_memory(2)
    ),  # 65536 tiles of 1024
    pytest.param(Case((65537, 3, 2), 1), id="M65537", marks=pytest.mark.requires_device_memory(0.25)),  # rows past y
]


@pytest.mark.parametrize("grid_case", CASES)
def test_grid_limits(flag_gems, fl_device, fl_settings, request, any_op, grid_case):
    op, case = any_op, grid_case
    if fl_settings.emulation is not None:
        if op.interpreter != "fast":
            pytest.skip(
                f"{op.name} runs element by element or row by row on the interpreter ({op.interpreter}): "
                f"{case.shape} takes minutes there; hardware lanes run it"
            )
        if session_of(request.config).wraps(op) and op.fastpath is None:
            pytest.skip(
                f"{op.name} is routed through the moved axis, whose inner kernel puts each of "
                f"{math.prod(case.shape) // case.shape[case.dim]} rows on grid x: a program each on the "
                "interpreter (a minute); hardware lanes run it"
            )
    x = make_input(case, "float32", fl_device, op=op)
    assert_agrees(op, lambda: op.call(x, case.dim), x, case.dim, False, f"{case.shape} dim={case.dim}")
