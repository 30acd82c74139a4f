"""Routing: where the lane's workaround covers the matmuls, each K-tail entry point is the
workaround's wrapper of FlagGems' own, and (on the emulator, where each launch is recorded)
a routed call still launches the kernel of its path - the zero-padded operand keeps mm's
symmetric kernel for ``a @ a.T`` and bmm's K-divisible switch - so the route changes memory,
never FlagGems' choice of kernel."""

import sys

import pytest

from pytest_fl_contract.families.tensorops import run
from pytest_fl_contract.registry.tensorops import MATMUL


def test_matmul_paths_are_kept(flag_gems, fl_device, fl_settings, fl_workaround, path_op, path):
    if path_op.family != MATMUL:
        pytest.skip(f"{path_op.name}: the masked-row defect does not reach its kernels; no route")
    if fl_workaround is None:
        pytest.skip("this lane runs without a workaround")
    module = sys.modules[path_op.module]
    routed = [
        qualname.rsplit(".", 1)[-1]
        for qualname in fl_workaround.entries
        if qualname.rsplit(".", 1)[0] == path_op.module
    ]
    if not routed:
        pytest.skip(f"the workaround leaves {path_op.name}")
    for attr in routed:
        assert hasattr(getattr(module, attr), "__fl_original__"), (
            f"{path_op.module}.{attr} is not the workaround's wrapper"
        )
    if fl_settings.emulation is None:
        return
    from pytest_fl_contract.emulation.device import DEVICE

    DEVICE.launches = []
    try:
        run(path_op, path_op.operands(path.case), device=fl_device, dtype="float32", layout=path.layout, gems=flag_gems)
        launched = [(kernel, switches) for kernel, switches in DEVICE.launches]
    finally:
        DEVICE.launches = None
    kernels = {kernel for kernel, _ in launched}
    assert path.kernel in kernels, f"{path_op.name} {path.name}: launched {sorted(kernels)}, not {path.kernel}"
    for kernel, switches in launched:  # bmm: the route keeps K, so its K-divisible switch is the caller's
        if kernel == path.kernel and "DIVISIBLE_K" in switches and "TILE_K" in switches:
            want = path.case.k % switches["TILE_K"] == 0
            assert switches["DIVISIBLE_K"] == want, f"{path_op.name} {path.name}: DIVISIBLE_K {switches['DIVISIBLE_K']}"
