"""Tuning state decides correctness (FlagGems #6420): each op's first case under every config
of every autotuned kernel it reaches (``hardware.autotune``: config i of each tuner, its cache
set aside), against torch in float64; a failing config is named (kernel, key, config)."""

import pytest

from pytest_fl_contract.families.tensorops import check
from pytest_fl_contract.hardware.autotune import every_config


def test_every_config(flag_gems, fl_device, tensor_op, first_case):
    ops = tensor_op.operands(first_case)

    def one() -> None:
        check(tensor_op, first_case, ops, device=fl_device, dtype="float32", gems=flag_gems)

    ran, failures = every_config(one)
    if not ran:
        pytest.skip(f"{tensor_op.name}: no autotuned kernel on this case's path (nothing to vary)")
    assert not failures, f"{tensor_op.name}: {len(failures)} of {ran} configs give a wrong result: " + " | ".join(
        failures
    )
