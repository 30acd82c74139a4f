"""The probes' interpreter oracle on a vendor lane's own Triton.

On a real H100 (torch 2.11, triton 3.6.0) every ``test_compiled_agrees_with_interpreter``
case failed: the oracle's child brought up the whole CPU emulator, which demands the CPU
lane's triton and flag_gems, although the probes import no FlagGems and a vendor lane's
Triton is never replaced.  The child now brings up the interpreter's patches alone
(``activate_interpreter``), on any Triton of ``INTERPRETER_TRITON``; on another it refuses in
one line, which the contract reports as a skip.  The CPU lane's own check stays as strict.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_fl_contract.emulation import interpreter
from pytest_fl_contract.emulation.interpreter import INTERPRETER_TRITON, UnsupportedTriton, check_interpreter_triton
from pytest_fl_contract.probes import variants
from pytest_fl_contract.probes.battery import PROBES
from pytest_fl_contract.probes.variants import ORACLE_UNSUPPORTED as UNSUPPORTED
from pytest_fl_contract.util import FlContractError

from .conftest import ROOT

TRITON_36 = Path("/tmp/triton36")  # see test_a_replay_on_triton_3_6_0_equals_one_on_3_7_1
NUMPY_24 = Path(
    "/tmp/np24"
)  # numpy 2.4 (an H100's beside triton 3.6): pip install --no-deps --target /tmp/np24 "numpy>=2.4,<2.5"
OLD = "3.5.0"  # a Triton the patches were never checked on
REFUSAL = f"the Triton interpreter patches support triton 3.6.0/3.7.1; found triton {OLD}"


def _child_env(*front: Path | str) -> dict[str, str]:
    """The environment ``variants.oracle`` gives its child, with ``front`` first on its path."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, front), str(ROOT)])
    return env


@pytest.fixture
def old_triton(tmp_path: Path) -> Path:
    """A directory whose only content is the metadata of a triton 3.5.0: first on a child's
    path, it is the Triton that child finds installed (nothing is imported to ask)."""
    dist = tmp_path / "fake" / f"triton-{OLD}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: triton\nVersion: {OLD}\n")
    return dist.parent


def _recordings(*ids: str) -> tuple[dict[str, variants.Recording], dict[str, np.ndarray]]:
    """The probes' launches as this (emulated) process runs them, and each probe's exact
    answer: every probe the interpreter runs where ``ids`` is empty."""
    recordings, expected = {}, {}
    for probe in PROBES:
        if probe.hardware_only or ids and probe.id not in ids:
            continue
        recorder = variants.Recorder(probe.kernel)
        result, expected[probe.id] = probe.launch("cpu", recorder)
        recordings[probe.id] = recorder.recording(result)
    return recordings, expected


# -- (a) an unsupported Triton: one line, and a skip ----------------------------------------------


def test_the_supported_tritons_are_the_checked_ones():
    assert INTERPRETER_TRITON == ("3.6.0", "3.7.1")
    assert [check_interpreter_triton(v) for v in INTERPRETER_TRITON] == list(INTERPRETER_TRITON)
    with pytest.raises(UnsupportedTriton) as refused:
        check_interpreter_triton(OLD)
    assert str(refused.value) == REFUSAL
    with pytest.raises(UnsupportedTriton, match="found triton not installed$"):
        check_interpreter_triton(None)


def test_the_cpu_lanes_own_check_stays_strict(monkeypatch):
    """The oracle's wider Triton range is not the CPU lane's: triton 3.6.0 beside flag_gems
    5.0.2 is refused there as before (and not as an ``UnsupportedTriton``: that lane fails)."""
    found = {"triton": "3.6.0", "flag_gems": "5.0.2"}
    monkeypatch.setattr(interpreter, "installed_version", found.get)
    with pytest.raises(FlContractError) as refused:
        interpreter.check_versions()
    assert not isinstance(refused.value, UnsupportedTriton)
    assert str(refused.value) == (
        "the CPU emulator supports triton 3.7.1, flag_gems 5.0.2/5.4.0.dev0; "
        "found triton 3.6.0, flag_gems 5.0.2 (install the [cpu] extra)"
    )


def test_the_oracle_child_refuses_an_unsupported_triton_in_one_line(tmp_path, old_triton):
    inp = tmp_path / "in.pickle"
    inp.write_bytes(pickle.dumps({}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.probes.oracle", str(inp), str(tmp_path / "out.pickle")],
        capture_output=True,
        text=True,
        timeout=120,
        env=_child_env(old_triton),
    )
    assert done.returncode == UNSUPPORTED, done.stderr[-2000:]
    assert done.stderr.splitlines() == [REFUSAL] and not done.stdout
    assert not (tmp_path / "out.pickle").exists()


def test_the_contract_skips_with_the_childs_line(run_subprocess, pytester, old_triton):
    """The contract's own fixture (``interpreter_oracle``) on a lane whose Triton the child
    refuses: the cases that ask for it skip with that line, nothing fails or errors."""
    pytester.makepyfile(
        test_oracle_refused=f"""
        import os

        from pytest_fl_contract.contracts.probes.test_equivalent import interpreter_oracle  # noqa: F401

        os.environ["PYTHONPATH"] = os.pathsep.join([{str(old_triton)!r}, os.environ["PYTHONPATH"]])  # children only


        def test_asks_the_oracle(interpreter_oracle):
            raise AssertionError("the oracle answered")
        """
    )
    result = run_subprocess("-p", "fl_contract", "-rs", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(skipped=1)
    assert any(line.endswith(REFUSAL) for line in result.outlines), result.outlines[-20:]


# -- (b) no FlagGems in the child ------------------------------------------------------------------

_NO_FLAG_GEMS = """
import json, sys
from pytest_fl_contract.probes.oracle import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "flag_gems": sorted(m for m in sys.modules if m.split(".")[0] == "flag_gems")}))
"""


def test_the_oracle_child_imports_no_flag_gems(tmp_path):
    """The probes import no FlagGems, so neither does the child that replays them: not its
    version check, not its patches, not the package (whose import a vendor lane's Triton may
    not even survive)."""
    inp, out = tmp_path / "in.pickle", tmp_path / "out.pickle"
    recordings, expected = _recordings("seed_masked_load")
    inp.write_bytes(pickle.dumps(recordings))
    done = subprocess.run(
        [sys.executable, "-c", _NO_FLAG_GEMS, str(inp), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_child_env(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"rc": 0, "flag_gems": []}
    replayed = pickle.loads(out.read_bytes())["seed_masked_load"]  # noqa: S301 - the child's output
    assert np.array_equal(replayed, expected["seed_masked_load"]), replayed


# -- (c) triton 3.6.0, where it is installed -------------------------------------------------------


def _triton_found(env: dict[str, str]) -> str:
    code = "from importlib import metadata; print(metadata.version('triton'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    return done.stdout.strip()


@pytest.mark.skipif(
    not (TRITON_36 / "triton").is_dir(),
    reason=f"triton 3.6.0 is not installed in {TRITON_36} (pip download --no-deps --only-binary=:all: "
    f"triton==3.6.0, then pip install --no-deps --target {TRITON_36} the wheel)",
)
def test_a_replay_on_triton_3_6_0_equals_one_on_3_7_1(monkeypatch):
    """Every probe the interpreter runs, recorded here once and replayed by the oracle's child
    on this environment's triton 3.7.1 and on a triton 3.6.0 (an H100's, torch 2.11) put in
    front of it: the same bits, dtype and shape, and no probe an error on either.

    Needs triton 3.6.0 beside the environment's, in ``/tmp/triton36`` (not a dependency of
    this project: the test skips, saying so, where it is missing)::

        pip download --no-deps --only-binary=:all: -d /tmp/tr36 triton==3.6.0
        pip install --no-deps --target /tmp/triton36 /tmp/tr36/triton-3.6.0-*.whl
    """
    recordings, _ = _recordings()
    assert set(recordings) == {p.id for p in PROBES if not p.hardware_only}
    by_version = {}
    # with numpy 2.4 in front too where it is there: the H100's pair, under which 3.6's
    # interpreter refused every runtime loop (interpreter.squeezed_scalar_index)
    for front in ((), (NUMPY_24, TRITON_36) if NUMPY_24.is_dir() else (TRITON_36,)):
        env = _child_env(*front)
        version = _triton_found(env)
        monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
        by_version[version] = variants.oracle(recordings)
    assert set(by_version) == {"3.6.0", "3.7.1"}
    old, new = by_version["3.6.0"], by_version["3.7.1"]
    assert set(old) == set(new) == set(recordings)
    for probe_id in recordings:
        a, b = old[probe_id], new[probe_id]
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), (probe_id, a, b)
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), (probe_id, a, b)
