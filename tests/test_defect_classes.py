"""Defect classes beyond masks (issue 30), each injected by the emulator on the CPU lane:
the contract written for it fails on it and holds without it.  Specialisation (a kernel
bound to its first launch's scalars), a cold compile wrong once (the fresh-process
contract), masked lanes that do not take other= (every partial tile)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pytest_fl_contract.emulation.device import INJECTABLE

from .conftest import ROOT

CLASSES = [  # (injected defect, the suites, the contracts that must catch it)
    ("scalar_bound_at_first_launch", "reductions", "test_interleaved_sizes and (sum or softmax or argmax)"),
    ("cold_first_launch", "reductions", "test_fresh_process and (sum or mean)"),
    # every family's rows in fresh processes (hardware/fresh_rows.py), not only the reductions'
    ("cold_first_launch", "layers tensorops", "test_fresh_process and (layer_norm or mm)"),
    ("masked_load_other", "reductions", "test_path and (sum or softmax) and one-tile"),
]


def _run(suites: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FL_PLATFORM", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_fl_contract.cli",
            "contracts",
            *suites.split(),
            "--",
            "--platform",
            "cpu",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=ROOT,
    )


def test_every_class_is_injectable_and_catalogued():
    from pytest_fl_contract.config.platforms import load_registry

    catalogue = load_registry(entry_points=False).defects
    assert {defect for defect, _, _ in CLASSES} <= set(INJECTABLE) <= set(catalogue)


@pytest.mark.slow
@pytest.mark.parametrize("defect, suites, select", CLASSES, ids=[f"{c[0]}-{c[1].replace(' ', '+')}" for c in CLASSES])
def test_the_contract_fails_on_its_injected_defect_and_holds_without(defect, suites, select):
    clean = _run(suites, "-k", select)
    assert clean.returncode == 0 and re.search(r"\b[1-9]\d* passed", clean.stdout), clean.stdout[-1500:]
    broken = _run(suites, "-k", select, "--fl-inject", defect)
    assert broken.returncode == 1 and re.search(r"\b[1-9]\d* failed", broken.stdout), broken.stdout[-1500:]
