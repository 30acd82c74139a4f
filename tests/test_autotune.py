"""Autotuned kernels on hardware lanes: one config per (kernel, key), never timed."""

from __future__ import annotations

import json
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.config.settings import Options, resolve
from pytest_fl_contract.hardware import autotune
from pytest_fl_contract.util import FlContractError

ROOT = Path(__file__).resolve().parent.parent


def lane(**kw):
    return resolve(Options(source_root=Path("/nonexistent"), **kw), load_registry(entry_points=False), environ={})


def test_hardware_lanes_rotate_by_default_and_the_emulator_runs_the_first_config():
    assert lane(platform="nvidia").autotune.mode == "rotate"
    assert lane(platform="nvidia", autotune="tuned").autotune.mode == "tuned"
    assert lane(platform="cpu").autotune.mode == "first"
    assert lane(platform="iluvatar", emulate=True).autotune.mode == "first"


def test_pick_is_the_same_in_every_process():
    """Fixed values: a digest of kernel and key, never Python's per-process salted hash."""
    assert autotune.pick(list("abcd"), "std_kernel", (5, 7, "torch.float32")) == "a"
    assert autotune.pick(list("abcd"), "prod_kernel", (3, 4099, "torch.bfloat16")) == "c"


@given(st.integers(1, 2**20), st.sampled_from(["std_kernel", "prod_kernel", "sum_kernel"]))
def test_keys_one_apart_spread_over_the_configs(n, kernel):
    """Sweeps step one size at a time: 16 neighbouring keys must not all land on one config
    (crc32 did exactly that: its low bits stay put when one digit changes)."""
    assert len({autotune.pick(range(4), kernel, (m, n, "torch.float32")) for m in range(1, 17)}) >= 3


def test_pick_spreads_over_every_config():
    """Over a sweep's keys every config runs (and is checked), none far more than others."""
    counts = Counter(
        autotune.pick(range(4), "std_kernel", (m, n, "torch.float32")) for m in range(1, 40) for n in (1, 7, 64)
    )
    assert set(counts) == {0, 1, 2, 3} and max(counts.values()) < 2 * min(counts.values())


def test_the_key_is_the_tuners_own_when_it_buckets_sizes():
    class Bucketing:  # FlagGems' LibTuner with a strategy: sizes rounded up to 32
        keys, arg_names, nargs = ["M", "N"], ["x", "M", "N"], {"M": 33, "N": 7}

        def get_key(self, args):
            return (-(-args["M"] // 32) * 32, args["N"])

    class Plain:  # Triton's Autotuner
        keys, arg_names, nargs = ["M", "N"], ["x", "M", "N"], {"M": 33, "N": 7}

    assert autotune.tuner_key(Bucketing(), {}) == (64, 7)
    assert autotune.tuner_key(Plain(), {}) == (33, 7)


def test_rotate_refuses_when_flag_gems_tuners_already_exist(monkeypatch):
    monkeypatch.setitem(sys.modules, "flag_gems.utils.libentry", object())
    with pytest.raises(FlContractError, match="flag_gems was imported before the lane started"):
        autotune.install(autotune.plan("rotate", emulated=False), {})


def test_rotate_never_touches_the_users_tuning_database():
    env = {"FLAGGEMS_DB_URL": "sqlite:////home/me/tuned.db", "TRITON_CACHE_AUTOTUNING": "0"}
    undo = autotune.install(autotune.plan("rotate", emulated=False), env)
    assert env["FLAGGEMS_DB_URL"] == autotune.PRIVATE_DB  # in memory, per process
    undo()
    assert env == {"FLAGGEMS_DB_URL": "sqlite:////home/me/tuned.db", "TRITON_CACHE_AUTOTUNING": "0"}


def test_tuned_caches_trition_results_unless_the_lane_chose():
    env: dict[str, str] = {}
    undo = autotune.install(autotune.plan("tuned", emulated=False), env)
    assert env == {"TRITON_CACHE_AUTOTUNING": "1"}
    undo()
    assert env == {}
    env = {"TRITON_CACHE_AUTOTUNING": "0"}
    autotune.install(autotune.plan("tuned", emulated=False), env)
    assert env == {"TRITON_CACHE_AUTOTUNING": "0"}


TUNED_KERNEL = textwrap.dedent(
    """
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    from pytest_fl_contract.hardware import autotune
    undo = autotune.install(autotune.plan("rotate", emulated=False))
    import torch, triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (1, 2, 4, 8)], key=["n"])
    @triton.jit
    def k(out_ptr, runs_ptr, n, BLOCK: tl.constexpr):
        tl.store(out_ptr, BLOCK)
        tl.atomic_add(runs_ptr, 1)

    out, runs, seen = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), {}
    for n in list(range(1, 33)) + list(range(1, 33)):
        k[(1,)](out, runs, n)
        seen.setdefault(n, set()).add(int(out.item()))
    want = {n: autotune.pick([1, 2, 4, 8], "k", (n, "torch.int32", "torch.int32")) for n in seen}
    from triton.runtime.autotuner import Autotuner
    patched = Autotuner._bench
    undo()
    restored = Autotuner._bench is not patched and "__fl_rotate__" not in vars(Autotuner)
    print(json.dumps({"seen": {n: sorted(v) for n, v in seen.items()}, "want": want,
                      "runs": int(runs.item()), "restored": restored}))
    """
)


def test_rotate_runs_the_picked_config_once_per_call_and_times_nothing(tmp_path):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", TUNED_KERNEL],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(len(v) == 1 for v in got["seen"].values())  # the same key, the same config
    assert {n: v[0] for n, v in got["seen"].items()} == got["want"]
    assert {v[0] for v in got["seen"].values()} == {1, 2, 4, 8}
    assert got["runs"] == 64  # each call ran its kernel once: no config was timed
    assert got["restored"]  # the lane's end gives Triton its tuner back


@pytest.mark.parametrize(
    "extra, line", [((), "rotate (one config per kernel and key*"), (("--fl-autotune", "tuned"), "tuned (*")]
)
def test_header_says_how_autotuned_kernels_run(pytester, run_subprocess, extra, line):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia", *extra)
    result.stdout.fnmatch_lines([f"fl-contract autotune: {line}"])
    assert result.ret == 0
