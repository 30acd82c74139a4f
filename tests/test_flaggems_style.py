"""Any FlagGems-style suite under the emulator, on both FlagGems lines: a conftest that
imports flag_gems at import time and adds its own ``--ref`` option, tests that allocate on
``flag_gems.device`` and dispatch inside ``with flag_gems.use_gems():`` - and no plugin
fixture anywhere.  The workaround must be in place before their first dispatch, and the
emulated defect must fail their non-inner cases without it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT

CONFTEST = """
import pytest
import torch

import flag_gems

device = flag_gems.device
TO_CPU = False


def pytest_addoption(parser):
    parser.addoption("--ref", action="store", default=device, choices=[device, "cpu"])


def pytest_configure(config):
    global TO_CPU
    TO_CPU = config.getoption("--ref") == "cpu"
"""

SUITE = """
import pytest
import torch

import flag_gems

CASES = [((3, 5, 64), 1), ((13, 64), 0), ((3, 64, 13), 2)]  # non-inner, non-inner, inner


def reference(inp):
    return inp.to("cpu").to(torch.float64)


@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("op", ["sum", "mean", "softmax"])
def test_reduction(op, shape, dim):
    assert flag_gems.device == "cpu", "under the emulator flag_gems.device is the emulated device"
    inp = torch.randn(shape, dtype=torch.float32, device=flag_gems.device)
    ref_out = getattr(torch, op)(reference(inp), dim=dim)
    with flag_gems.use_gems():
        res_out = getattr(torch, op)(inp, dim=dim)
    torch.testing.assert_close(res_out.to(torch.float64), ref_out, rtol=1e-5, atol=1e-4)
"""


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    """flag_gems 5.0.2 (this environment) and, when CI gives its pip spec, the 5.4 line."""
    out = {"5.0.2": None}
    spec = os.environ.get("FL_FLAGGEMS_54")
    if spec:
        site = tmp_path_factory.mktemp("fg54")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), spec],
            check=True,
            capture_output=True,
        )
        out["5.4"] = site
    return out


@pytest.mark.slow
@pytest.mark.parametrize("line", ["5.0.2", "5.4"])
def test_flaggems_style_suite_runs_unchanged(pytester, lines, line):
    if line not in lines:
        pytest.skip("FL_FLAGGEMS_54 (a pip spec of the 5.4 line) is not set; .ci/run sets it")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_gems=SUITE)
    env = {k: v for k, v in os.environ.items() if k not in ("FL_PLATFORM", "GEMS_VENDOR")}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (lines[line], ROOT) if p)

    def run(*extra):
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "fl_contract",
            "--platform",
            "iluvatar",
            "--fl-emulate",
            "--ref",
            "cpu",
            "-p",
            "no:cacheprovider",
            "-rf",
            *extra,
        ]
        return subprocess.run(argv, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=600)

    done = run()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "9 passed" in done.stdout
    assert "fl-contract workaround installed: pytest_fl_contract.workarounds.masked_reductions" in done.stdout
    assert f"flag_gems {'5.4.0.dev0' if line == '5.4' else '5.0.2'}" in done.stdout

    done = run("--fl-no-workaround")
    assert done.returncode == 1, done.stdout[-3000:]
    failed = sorted(line.split("::")[1].split(" ")[0] for line in done.stdout.splitlines() if line.startswith("FAILED"))
    non_inner = [
        f"test_reduction[{op}-shape{i}-{dim}]" for op in ("mean", "softmax", "sum") for i, dim in ((0, 1), (1, 0))
    ]
    assert failed == non_inner, failed  # the inner case (shape2, dim 2) is right with the defect too
