"""The same calls in fresh processes give the same results: every matmul and index-op case
of the sweep called in a child with an empty Triton cache (and, on hardware, in another with
the cache the first filled) is bit for bit this process's call.  A kernel compiled wrong only
cold, or a result that depends on what an earlier call left (a cached output buffer, scalars
baked into a tuned kernel), differs here; the other contracts run in one warm process."""

import pytest

from pytest_fl_contract.families import of
from pytest_fl_contract.hardware import fresh_rows


@pytest.fixture(scope="module")
def fresh(request, flag_gems, fl_settings, tmp_path_factory):
    return fresh_rows.gathered(request.config, fl_settings, "tensorops", False, tmp_path_factory.getbasetemp())


def test_fresh_process(flag_gems, fl_device, tensor_op, case, fresh):
    family = of(tensor_op)
    drawn = family.inputs(tensor_op, case, seed=0, device=fl_device, dtype=fresh_rows.DTYPE)
    here = family.outputs(tensor_op, case, drawn, gems=flag_gems)
    fresh_rows.check(tensor_op, case, here, fresh)
