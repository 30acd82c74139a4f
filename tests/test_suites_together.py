"""The contract suites in one pytest session (the manifest's op_contracts step): each
family's cases keep their own op and contract, and the defect is counted where it lands."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

SELECT = (
    "test_transposed_input[layer_norm-13x24-transposed] or test_determinism[mm-13x19x17] "
    "or test_accuracy[sum-1x13x64-d1-float32]"
)


@pytest.mark.slow
def test_three_suites_in_one_session_keep_each_cases_op(tmp_path):
    report = tmp_path / "out.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_fl_contract.cli",
            "contracts",
            "reductions",
            "layers",
            "tensorops",
            "--",
            "--platform",
            "iluvatar",
            "--fl-emulate",
            "--fl-no-workaround",
            "-k",
            SELECT,
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr  # the injected defect reaches all three
    tags = {}
    for prop in ET.parse(report).getroot().iter("property"):
        if prop.get("name") == "fl_cases":
            tags.update(json.loads(prop.get("value")))
    ops = {key.split("::", 1)[0].split(".")[0]: tag.get("op") for key, tag in tags.items()}
    assert ops == {"layers": "layer_norm", "tensorops": "mm", "reductions": "sum"}, tags
    contracts = {tag.get("contract") for tag in tags.values()}
    assert contracts == {"layout", "determinism", "accuracy"}, tags
    # the per-op summary counts every family's failure under its op
    for op, contract in (("layer_norm", "layout"), ("mm", "determinism"), ("sum", "accuracy")):
        assert f"failing contracts of {op}: 1 ({contract} 1)" in done.stdout, done.stdout[-3000:]
