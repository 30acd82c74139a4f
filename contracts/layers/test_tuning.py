"""Tuning state decides correctness (FlagGems #6420): each layer's first case, forward and
backward, under every config of every autotuned kernel it reaches (``hardware.autotune``:
config i of each tuner, its cache set aside), against torch's float64 autograd; a failing
config is named (kernel, key, config)."""

import pytest

from pytest_fl_contract.families.layers import check, make_inputs
from pytest_fl_contract.hardware.autotune import every_config


def test_every_config(flag_gems, fl_device, layer, first_case):
    inputs = make_inputs(layer, first_case)

    def one() -> None:
        check(layer, first_case, inputs, device=fl_device, dtype="float32", gems=flag_gems, backward=True)

    ran, failures = every_config(one)
    if not ran:
        pytest.skip(f"{layer.name}: no autotuned kernel on this case's path (nothing to vary)")
    assert not failures, f"{layer.name}: {len(failures)} of {ran} configs give a wrong result: " + " | ".join(failures)
