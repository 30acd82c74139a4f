"""Large indices: more than 2**31 elements in the reduced slice, where an int32 offset
wraps.  Hardware lanes only (the device must hold the input, torch's result and ours),
and each case runs in a child process: a device fault there is one failed case naming the
error, and the worker's CUDA context stays usable for the cases after it."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import Case

from pytest_fl_contract import isolation, ops

LARGE = [Case((1, 65537, 32768), 1)]  # N * K = 2**31 + 32768: past int32 in one slice
LARGE_OPS = [op for op in ops.OPS if op.name in ("sum", "mean", "softmax", "argmax")]


@pytest.mark.requires_device_memory(32)
@pytest.mark.parametrize("large_case", LARGE, ids=lambda c: c.id)
@pytest.mark.parametrize("large_op", LARGE_OPS, ids=lambda op: op.name)
def test_large_index(flag_gems, fl_settings, fl_device, fl_workaround, large_op, large_case):
    spec = isolation.Spec(large_op.name, large_case.shape, large_case.dim, "float32", fl_device,
                          fl_settings.workaround if fl_workaround is not None else None,
                          autotune=fl_settings.autotune.mode)  # fmt: skip
    verdict = isolation.run(spec)
    assert verdict.ok, f"{large_op.name} over dim {large_case.dim} of {large_case.shape}: {verdict.detail}"
