"""Large indices: more than 2**31 elements in the reduced slice, where an int32 offset
wraps.  Hardware lanes only (the device must hold the input, torch's result and ours),
and each case runs in a child process: a device fault there is one failed case naming the
error, and the worker's CUDA context stays usable for the cases after it."""

import pytest

from pytest_fl_contract.hardware import isolation
from pytest_fl_contract.registry import ROWS, reductions
from pytest_fl_contract.registry.reductions import Case

LARGE = [Case((1, 65537, 32768), 1)]  # N * K = 2**31 + 32768: past int32 in one slice
INPUT_GIB = 8  # 2**31 + 32768 float32 elements


def _gib(op: reductions.Op) -> int:
    """Device memory a case holds: the input, and for an op that keeps its shape also its
    result (isolation compares it with torch's a slab at a time, without float64 copies),
    plus slack for torch's slab and a workaround's moved axis.  What the run's memory
    ledger counts: the four cases and the grid-limit cases fit an H200 together."""
    return INPUT_GIB * (2 if op.keeps_shape else 1) + 4


LARGE_OPS = [
    pytest.param(op, id=op.name, marks=pytest.mark.requires_device_memory(_gib(op)))
    for op in ROWS.rows("reductions")
    if not op.exempt_from("large_index")
]


@pytest.mark.parametrize("large_case", LARGE, ids=lambda c: c.id)
@pytest.mark.parametrize("large_op", LARGE_OPS)
def test_large_index(flag_gems, fl_settings, fl_device, fl_workaround, large_op, large_case):
    spec = isolation.Spec(
        large_op.name,
        large_case.shape,
        large_case.dim,
        "float32",
        fl_device,
        fl_settings.workaround if fl_workaround is not None else None,
        autotune=fl_settings.autotune.mode,
    )
    verdict = isolation.run(spec)
    assert verdict.ok, f"{large_op.name} over dim {large_case.dim} of {large_case.shape}: {verdict.detail}"
