"""Tuning state decides correctness (FlagGems #6420: on an Iluvatar BI-V150 the config an empty
tuning database chose gave wrong answers; no per-op blacklist helped): each row's call over a
non-inner dim with partial tiles, run under every config of every autotuned kernel it reaches
(``hardware.autotune.config_forced``: config i of each tuner, its cache set aside), each result
against float64.  A lane's own tuner runs one config per key (the emulator's: always the first),
so a config the device's tuner would pick another day is checked here.  A failing config is
named (kernel, key, config) so a vendor can pin it."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.dispatch import use_gems
from pytest_fl_contract.families.reductions import check, make_input
from pytest_fl_contract.hardware.autotune import every_config


def test_every_config(flag_gems, fl_device, fl_settings, op, tuning_case):
    case = fitted(tuning_case, op, fl_settings.sweep)
    x = make_input(case, "float32", fl_device, op=op)

    def one() -> None:
        with use_gems(flag_gems, op.gems_names):
            got = op.torch_fn(x, case.dim, False)
        check(op, got, x, case.dim)

    ran, failures = every_config(one)
    if not ran:
        pytest.skip(f"{op.name}: no autotuned kernel on this call's path (nothing to vary)")
    assert not failures, f"{op.name}: {len(failures)} of {ran} configs give a wrong result: " + " | ".join(failures)
