"""Both layouts in CI: the contracts run from a workspace with no source tree, the plugin
and the workaround coming from a built wheel; and from the checkout itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT

SELECT = ["-k", "sum and (accuracy or routing or install)", "-p", "xdist", "-n", "2", "-p", "no:cacheprovider"]


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory):
    """The project built as a wheel and installed into a directory of its own."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(ROOT)], check=True, capture_output=True)  # fmt: skip
    site = tmp_path_factory.mktemp("site")
    wheel = next(dist.glob("pytest_fl_contract-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)  # fmt: skip
    return site


@pytest.mark.slow
def test_wheel_only_workspace(pytester, wheel_site):
    workspace = pytester.path / "workspace"
    shutil.copytree(ROOT / "contracts", workspace / "contracts")
    env = {**os.environ, "PYTHONPATH": str(wheel_site), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("FL_PLATFORM", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "contracts/reductions", "-p", "fl_contract",
         "--platform", "iluvatar", "--fl-emulate", *SELECT],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-2000:]
    assert "fl-contract layout: wheel (no " in out
    assert f"workaround: pytest_fl_contract.workarounds.masked_reductions from the wheel ({wheel_site}" in out


@pytest.mark.slow
def test_source_checkout():
    env = {k: v for k, v in os.environ.items() if k != "FL_PLATFORM"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "contracts" / "reductions"), "-p", "fl_contract", "--platform",
         "iluvatar", "--fl-emulate", "--fl-source-root", str(ROOT), "--fl-layout", "checkout", *SELECT],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert "fl-contract layout: checkout (--fl-layout)" in done.stdout
    assert "workaround: pytest_fl_contract.workarounds.masked_reductions from the checkout" in done.stdout
