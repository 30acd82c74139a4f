"""Equivalent-kernel probes (issue 59, class 4) under the emulator: every rewrite keeps a probe's
answer on a correct interpreter, the injected ``equivalent_kernels_differ`` (FlagTree #1227's
miscompile) makes the ``assume_untaken`` variant disagree and nothing else, the reproduction
runs without this package, and the hardware oracle (the recorded launches replayed on a clean
interpreter) is independent of the lane it checks."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytest_fl_contract.emulation import assume, device
from pytest_fl_contract.probes import variants
from pytest_fl_contract.probes.battery import PROBES

from .conftest import ROOT

# the grid-axes probe runs 2 x 1000s of programs: 4 s a launch on the interpreter, and no
# rewrite touches what it probes that another probe does not
CHEAP = [p for p in PROBES if not p.hardware_only and p.id != "grid_axes_yz"]


def _runs(probe, kernel):
    result, _ = probe.launch("cpu", kernel)
    return result.detach().cpu().numpy()


@pytest.fixture
def injected():
    device.enable(assume.DEFECT)
    yield
    device.disable(assume.DEFECT)


def test_every_rewrite_applies_to_some_probe_and_changes_the_source():
    seen = set()
    for probe in PROBES:
        original = variants.kernel_source(probe.kernel)
        for v in variants.variants(original):
            assert v.changed_lines(original) > 0, (probe.id, v.name)
            ast.parse(v.source)
            seen.add(v.name)
    assert seen == {name for name, _ in variants.REWRITES}


def test_every_variant_agrees_with_its_probe_on_a_correct_interpreter():
    for probe in CHEAP:
        base = _runs(probe, probe.kernel)
        for v in variants.variants(variants.kernel_source(probe.kernel)):
            got = _runs(probe, variants.build(v.source, probe.kernel))
            assert got.shape == base.shape and np.array_equal(got, base), (probe.id, v.name, got, base)


def test_the_injected_miscompile_makes_exactly_the_assume_variant_disagree(injected):
    hit = set()
    for probe in CHEAP[:12]:
        assert probe.run("cpu").passed, probe.id  # the battery alone cannot see it
        base = _runs(probe, probe.kernel)
        for v in variants.variants(variants.kernel_source(probe.kernel)):
            same = np.array_equal(_runs(probe, variants.build(v.source, probe.kernel)), base)
            assert same == (v.name != "assume_untaken"), (probe.id, v.name)
            hit.add(probe.id) if not same else None
    assert len(hit) >= 8


def test_the_miscompile_drops_only_stores_after_a_branch_holding_assume():
    src = textwrap.dedent("""\
        def k(p, q):
            tl.store(q, 1)
            for i in range(3):
                if i < 0:
                    tl.assume(i > 5)
                tl.atomic_add(p, 1)
            tl.store(p, 2)
        """)
    out = ast.unparse(assume.miscompile(ast.parse(src)))
    assert "tl.store(q, 1)" in out and "tl.atomic_add" not in out and "tl.store(p, 2)" in out
    plain = src.replace("tl.assume(i > 5)", "pass")
    assert ast.unparse(assume.miscompile(ast.parse(plain))) == ast.unparse(ast.parse(plain))


def test_smallest_is_the_fewest_changed_lines():
    original = variants.kernel_source(PROBES[0].kernel)
    found = variants.variants(original)
    small = variants.smallest(found, original)
    assert all(small.changed_lines(original) <= v.changed_lines(original) for v in found)


def test_the_reproduction_runs_on_its_own(injected, tmp_path):
    probe = next(p for p in PROBES if p.id == "seed_masked_load")
    original = variants.kernel_source(probe.kernel)
    variant = next(v for v in variants.variants(original) if v.name == "assume_untaken")
    recorder = variants.Recorder(probe.kernel)
    result, _ = probe.launch("cpu", recorder)
    recording = recorder.recording(result)
    assert variants.replay(recording, probe.kernel, "cpu").tolist() == result.tolist()
    broken = _runs(probe, variants.build(variant.source, probe.kernel))
    script = variants.reproduction(
        probe.id, original, variant, recording, probe.kernel, (result.numpy(), broken), "cpu"
    )
    path = tmp_path / "repro.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    # a plain interpreter has no such defect: the script runs both kernels and they agree
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"original: \[6\.0\]\nvariant:  \[6\.0\]", done.stdout), done.stdout
    assert "pytest_fl_contract" not in script


def test_the_interpreter_oracle_replays_the_recorded_launches_in_a_clean_child():
    """The hardware lane's second oracle, fed here by the emulated lane with the seed's defect
    injected: the child replays the exact launches on an interpreter with no defect (and the
    emulator's honest ``and``), so it gives the right answers where this process's are wrong."""
    names = ("seed_masked_load", "python_and", "welford_rows", "scalar_args_each_launch", "load_row_mask")
    recordings, local, expected = {}, {}, {}
    device.enable("masked_2d_row_load")
    try:
        for probe in (p for p in PROBES if p.id in names):
            recorder = variants.Recorder(probe.kernel)
            result, expected[probe.id] = probe.launch("cpu", recorder)
            recordings[probe.id], local[probe.id] = recorder.recording(result), result.numpy()
    finally:
        device.disable("masked_2d_row_load")
    oracle = variants.oracle(recordings)
    assert set(oracle) == set(names)
    for name in names:
        assert np.array_equal(oracle[name], expected[name]), (name, oracle[name])
    assert not np.array_equal(local["seed_masked_load"], expected["seed_masked_load"])  # 28, not 6


@pytest.mark.slow
def test_the_contract_fails_on_the_injected_defect_and_holds_without():
    select = "test_equivalent and (seed_masked_load or first_launch or seed_row_loop)"

    def run(*extra: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("FL_PLATFORM", None)
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_fl_contract.cli",
                "contracts",
                "probes",
                "--",
                "--platform",
                "cpu",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                "-k",
                select,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=ROOT,
        )

    clean = run()
    assert clean.returncode == 0 and re.search(r"\b3 passed", clean.stdout), clean.stdout[-1500:]
    broken = run("--fl-inject", assume.DEFECT)
    assert broken.returncode == 1 and re.search(r"\b3 failed", broken.stdout), broken.stdout[-1500:]
    assert "compiler: equivalent_kernels_differ" in broken.stdout
    assert "variant 'assume_untaken' disagrees" in broken.stdout
