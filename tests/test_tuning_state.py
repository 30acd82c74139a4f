"""Tuning state decides correctness (issue 59, class 1; FlagGems #6420): ``config_forced`` runs
config i of every autotuner in the process, its cache set aside and given back; ``every_config``
runs a case under each config and names a failing one (kernel, key, config).  The emulator's
``tuned_config_miscompiled`` miscompiles every config but a tuner's first, which its own tuner
always picks: the lane's other contracts cannot see it, the every-config contract does.  The
emulator patches a process for good, so each check runs in a fresh interpreter."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import fresh_result

PROBE = textwrap.dedent("""
    import json, sys, torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", tuple(sys.argv[1:]))
    import flag_gems
    from triton.runtime import autotuner
    from pytest_fl_contract.hardware.autotune import config_forced, every_config

    x = torch.randn(5, 37, 13, generator=torch.Generator().manual_seed(0))
    want = x.double().amax(1)

    def amax():
        with flag_gems.use_gems(include=["amax"]):
            return torch.amax(x, 1)

    def case():
        torch.testing.assert_close(amax().double(), want)

    found = {}
    amax()  # the lane's own choice, made by the emulator's tuner: its first config
    tuners = [t for t in __import__("gc").get_objects() if isinstance(t, autotuner.Autotuner) and t.cache]
    before = {id(t): dict(t.cache) for t in tuners}
    with config_forced(2) as choices:
        case_ok = True
        try:
            case()
        except AssertionError:
            case_ok = False
        inside = [dict(t.cache) for t in tuners]
    found["choices"] = [[c.kernel, c.index, c.count] for c in choices]
    found["forced_case_holds"] = case_ok
    found["caches_given_back"] = all(dict(t.cache) == before[id(t)] for t in tuners)
    found["cache_set_aside_inside"] = all(c != before[id(t)] for c, t in zip(inside, tuners))
    found["every_config"] = every_config(case)
    found["untuned"] = every_config(lambda: torch.testing.assert_close(x.sum(1), x.sum(1)))
    print("RESULT " + json.dumps(found))
""")


def _probe(*defects: str) -> dict:
    return fresh_result(PROBE, *defects)


@pytest.mark.slow
def test_every_config_holds_where_every_config_is_right():
    found = _probe()
    assert found["choices"] == [["amax_kernel", 2, 4]]  # config 3 of amax's 4, for its one key
    assert found["forced_case_holds"]
    assert found["cache_set_aside_inside"] and found["caches_given_back"]
    assert found["every_config"] == [4, []]
    assert found["untuned"] == [0, []]  # sum's kernel here is not autotuned: nothing to vary


@pytest.mark.slow
def test_a_miscompiled_config_is_caught_and_named():
    found = _probe("tuned_config_miscompiled")
    assert not found["forced_case_holds"]
    ran, failures = found["every_config"]
    assert ran == 4 and len(failures) == 3  # the first config (the emulator tuner's pick) holds
    assert failures[0].startswith(
        "amax_kernel key=(65, 37, 'torch.float32', 'torch.float32') config 2 of 4: BLOCK_M: 4"
    )
    assert found["caches_given_back"]
