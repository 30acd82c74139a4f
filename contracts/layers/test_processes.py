"""The same calls in fresh processes give the same results: every layer case of the sweep,
forward and gradients, called in a child with an empty Triton cache (and, on hardware, in
another with the cache the first filled) is bit for bit this process's call.  A kernel
compiled wrong only cold, or a result that depends on what an earlier call left (a cached
workspace, a tuned config), differs here; the other contracts run in one warm process."""

import pytest

from pytest_fl_contract.families import of
from pytest_fl_contract.hardware import fresh_rows


@pytest.fixture(scope="module")
def fresh(request, flag_gems, fl_settings, tmp_path_factory):
    return fresh_rows.gathered(request.config, fl_settings, "layers", True, tmp_path_factory.getbasetemp())


def test_fresh_process(flag_gems, fl_device, layer, case, fresh):
    family = of(layer)
    drawn = family.inputs(layer, case, seed=0, device=fl_device, dtype=fresh_rows.DTYPE, backward=True)
    here = family.outputs(layer, case, drawn, gems=flag_gems, backward=True)
    fresh_rows.check(layer, case, here, fresh)
