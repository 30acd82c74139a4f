"""Shared helpers for the project's own tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def with_jit_module(script: str, name: str, source: str) -> str:
    """``script`` (a fresh interpreter's, see ``fresh_result``) with its ``# jit module`` line
    replaced by lines that write ``source`` into a module of its own and import everything from it:
    Triton reads a jit function's source from its file, so it cannot be defined in ``-c`` code."""
    lines = (
        "import os as _os, sys as _sys, tempfile as _tempfile\n"
        "_home = _tempfile.mkdtemp()\n"
        f"with open(_os.path.join(_home, {name + '.py'!r}), 'w') as _f:\n"
        f"    _f.write({source!r})\n"
        "_sys.path.insert(0, _home)\n"
        f"from {name} import *\n"
    )
    assert script.count("# jit module\n") == 1, "the script names no place (or two) for its jit module"
    return script.replace("# jit module\n", lines)


@pytest.fixture
def run_subprocess(pytester: pytest.Pytester):
    """pytester in a fresh interpreter (the emulator patches a process for good), with the
    plugin loaded only through ``-p fl_contract``."""

    def run(
        *args: str, autoload: bool = False, timeout: float = 600, env: dict[str, str] | None = None
    ) -> pytest.RunResult:
        extra = env or {}
        env = os.environ.copy()
        if not autoload:
            pytester._monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        pytester._monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
        for name in ("FL_PLATFORM", "GEMS_VENDOR", "FL_CONTRACT_EMULATED_VENDOR"):
            pytester._monkeypatch.delenv(name, raising=False)
        for name, value in extra.items():
            pytester._monkeypatch.setenv(name, value)
        return pytester.runpytest_subprocess(*args, timeout=timeout)

    return run


def fresh_result(script: str, *args: str, pythonpath: list[str] | None = None) -> dict:
    """``script`` run in a fresh interpreter (the emulator patches a process for good), what it
    printed on its ``RESULT <json>`` line; no such line fails with the script's stderr.  FlagGems'
    ``ARCH`` is left out: a profile, not the caller's shell, says the architecture."""
    import json

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath or [str(ROOT)]), "OMP_NUM_THREADS": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("ARCH", None)
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=str(ROOT.parent),
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stderr[-3000:]
    return json.loads(line[len("RESULT ") :])


@pytest.fixture(scope="session")
def fg54_site(tmp_path_factory):
    spec = os.environ.get("FL_FLAGGEMS_54")
    if not spec:
        pytest.skip("FL_FLAGGEMS_54 (a pip spec of the 5.4 line) is not set; .ci/run sets it")
    site = tmp_path_factory.mktemp("fg54")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), spec],
        check=True,
        capture_output=True,
    )
    return site


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests (a contract run or the zoo in subprocesses, 10 - 130 s each) first, in
    their order: xdist hands them out while every worker is free, so none is the last thing
    one worker does while the other idles."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
