"""Tuning state decides correctness (issue 59, class 1; FlagGems #6420): ``config_forced`` runs
config i of every autotuner in the process, its cache set aside and given back; ``every_config``
runs a case under each config and names a failing one (kernel, key, config).  The emulator's
``tuned_config_miscompiled`` miscompiles every config but a tuner's first, which its own tuner
always picks: the lane's other contracts cannot see it, the every-config contract does.  The
emulator patches a process for good, so each check runs in a fresh interpreter."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import fresh_result, with_jit_module

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


COPY_KERNEL = """import triton.language as tl
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""
LIBTUNER = with_jit_module(
    textwrap.dedent("""
    import json, os, sys, tempfile
    os.environ["FLAGGEMS_DB_URL"] = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "tuned.db")
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import flag_gems, triton
    import triton.language as tl
    from triton.runtime.jit import JITFunction
    from flag_gems.utils.libentry import LibTuner
    from pytest_fl_contract.hardware.autotune import config_forced

    # jit module

    configs = [triton.Config({"BLOCK": b}) for b in (16, 32, 64)]
    tuner = LibTuner.get("default")(JITFunction(copy), ["x_ptr", "y_ptr", "n", "BLOCK"], configs, ["n"],
                                    None, None, strategy="default")
    x, y = torch.randn(100), torch.empty(100)
    key = tuner.get_key({"x_ptr": x, "y_ptr": y, "n": 100})
    tuner.cache[key] = configs[0]  # a tuning database that already holds the key
    found = {"type": type(tuner.cache).__name__, "stored": key in tuner.cache}
    with config_forced(2) as choices:
        try:
            tuner.run(x, y, 100, grid=(1,))
        except Exception:
            pass  # no driver on this CPU: the choice is made before the launch
    found["choices"] = [[c.index, c.count] for c in choices]
    found["database_given_back"] = type(tuner.cache).__name__ == found["type"] and tuner.cache[key].kwargs == {"BLOCK": 16}
    print("RESULT " + json.dumps(found))
"""),
    "fl_copy_kernel",
    COPY_KERNEL,
)


@pytest.mark.slow
def test_a_key_in_libtuners_database_is_forced_too():
    """FlagGems' LibTuner launches a key its database holds with the stored config, never
    pruning: ``config_forced`` sets the database aside as it does Triton's dict, or nothing is
    forced (on an H100 addmm's and bmm's every-config cases said "no autotuned kernel")."""
    found = fresh_result(LIBTUNER)
    assert found["type"] == "ConfigCache" and found["stored"]
    assert found["choices"] == [[2, 3]]
    assert found["database_given_back"]


# A tuning database another build wrote (issue 59, item 1: FlagGems #6016, a config tuned under one
# build replayed under another).  FlagGems' LibTuner names a kernel's table by its source and the
# text of every config of its list, so a database written under another list (another tuning
# space, or a Triton whose Config prints otherwise) is never read, and one written under the same
# list replays a config of that list - one the every-config contract runs.  Each build is a fresh
# process on one database file.
FOREIGN = with_jit_module(
    textwrap.dedent("""
    import json, os, sys, tempfile
    os.environ["FLAGGEMS_DB_URL"] = "sqlite:///" + sys.argv[1]
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import triton
    from triton.runtime.jit import JITFunction
    from flag_gems.utils.libentry import LibTuner

    # jit module

    blocks, warps, write = json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "write"
    configs = [triton.Config({"BLOCK": b}, num_warps=warps) for b in blocks]
    tuner = LibTuner.get("default")(JITFunction(copy), ["x_ptr", "y_ptr", "n", "BLOCK"], configs, ["n"],
                                    None, None, strategy="default")
    x, y = torch.randn(100), torch.empty(100)
    key = tuner.get_key({"x_ptr": x, "y_ptr": y, "n": 100})
    if write:
        tuner.cache[key] = configs[-1]  # what this build's tuner chose for the key
    stored = tuner.cache[key] if key in tuner.cache else None
    found = {"table": tuner.config_table_name, "stored": None if stored is None else str(stored),
             "in_list": stored is not None and str(stored) in [str(c) for c in configs]}
    print("RESULT " + json.dumps(found))
"""),
    "fl_copy_kernel",
    COPY_KERNEL,
)


@pytest.mark.slow
def test_a_database_another_build_wrote_replays_a_config_of_the_list_or_nothing(tmp_path):
    database = str(tmp_path / "tuned.db")
    wrote = fresh_result(FOREIGN, database, "[16, 32, 64]", "4", "write")
    assert wrote["stored"] is not None and wrote["in_list"]
    # the same FlagGems, the same tuning space: the other build's choice is replayed, and it is a
    # config of the list the every-config contract forces one by one
    same = fresh_result(FOREIGN, database, "[16, 32, 64]", "4", "read")
    assert same["table"] == wrote["table"] and same["stored"] == wrote["stored"] and same["in_list"]
    # another tuning space (a vendor's tune_configs.yaml, or another num_warps): another table
    other = fresh_result(FOREIGN, database, "[16, 32]", "4", "read")
    warps = fresh_result(FOREIGN, database, "[16, 32, 64]", "8", "read")
    assert other["table"] != wrote["table"] and other["stored"] is None
    assert warps["table"] != wrote["table"] and warps["stored"] is None
