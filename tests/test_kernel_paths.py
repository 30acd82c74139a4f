"""The op rows' kernel paths are real (issue 34): each path's case launches the kernel the
row names, on the side of its one-tile switch the row says, and every kernel of the op's
FlagGems module is launched by some path (or the row says why not) - on each FlagGems line.
A release that changes a heuristic, or adds a kernel, fails here until the rows say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_fl_contract.testing import paths

from .conftest import ROOT


def _check(seen, missing):
    wrong = [
        f"{s.op}: {s.path}: expected {s.kernel} (tiles={s.tiles}), launched {list(s.launched)} {s.error}"
        for s in seen
        if not s.reached
    ]
    assert wrong == [] and missing == {}, "\n".join(wrong + [f"{op}: no path reaches {k}" for op, k in missing.items()])


def test_every_path_is_reached_and_every_kernel_has_a_path_on_the_installed_line():
    seen = paths.trace()
    assert seen, "no op of the registry is installed"
    _check(seen, paths.unreached(seen))


def test_every_layer_path_is_reached_and_every_layer_kernel_has_a_path_on_the_installed_line():
    """The normalization layers' rows (registry.layers): forward and backward through dispatch."""
    seen = paths.trace_layers()
    assert {s.op for s in seen} == {"layer_norm", "rms_norm", "group_norm", "batch_norm"}
    _check(seen, paths.unreached_layers(seen))


@pytest.mark.slow
def test_every_path_is_reached_on_the_54_line(fg54_site):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fg54_site), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.testing.paths"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["version"].startswith("5.4")
    seen = [paths.Seen(**{**s, "launched": tuple(map(tuple, s["launched"]))}) for s in result["seen"]]
    _check(seen, result["unreached"])


def test_the_generated_docs_are_the_rows_and_the_catalogue_now():
    """docs/generated/ (rows, kernel paths, defects) is what the rows and the catalogue say:
    a row added, a path moved or a defect registered fails here until the docs are written
    again (python -m pytest_fl_contract.docs docs/generated)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.docs", "--check", str(ROOT / "docs" / "generated")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
