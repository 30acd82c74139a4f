"""Routing: where the lane's workaround covers the layers, their calls never launch the kernels
that fold a tile's rows (the rows' ``row_folds``) - on the emulator each launch is recorded -
and on hardware each routed entry point is the workaround's wrapper of FlagGems' own."""

import sys

import pytest

from pytest_fl_contract.families.layers import make_inputs, run


def test_row_folding_kernels_are_left(flag_gems, fl_device, fl_settings, fl_workaround, layer, case):
    if fl_workaround is None:
        pytest.skip("this lane runs without a workaround")
    routed = [attr for attr in (layer.forward, layer.backward) if f"{layer.module}.{attr}" in fl_workaround.entries]
    if not routed:
        pytest.skip(f"the workaround leaves {layer.name}")
    module = sys.modules[layer.module]
    for attr in routed:
        assert hasattr(getattr(module, attr), "__fl_original__"), (
            f"{layer.module}.{attr} is not the workaround's wrapper"
        )
    if fl_settings.emulation is None:
        return
    from pytest_fl_contract.emulation.device import DEVICE

    DEVICE.launches = []
    try:
        run(layer, case, make_inputs(layer, case), device=fl_device, dtype="float32", gems=flag_gems, backward=True)
        launched = {kernel for kernel, _ in DEVICE.launches}
    finally:
        DEVICE.launches = None
    assert not launched & set(layer.row_folds), (
        f"{layer.name} {case.id} launched {sorted(launched & set(layer.row_folds))}"
    )
