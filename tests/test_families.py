"""The family is the unit (issue 58): a row of any family registered at run time - here copies of
a layer row and a tensor-op row under new names, from a plugin module - is collected by its
suite, marked with its known defects, routed by the workaround, checked in a fresh process as a
hardware lane isolates it, and listed in the generated docs and the defect's reach, with no
other edit.  And the invariants every family's rows keep."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from pytest_fl_contract import docs
from pytest_fl_contract.families import of
from pytest_fl_contract.registry import ROWS, SUITES, coverage
from pytest_fl_contract.registry.schema import Row

from .conftest import ROOT

COPIES = """
import dataclasses
from pytest_fl_contract.registry import ROWS

for name in ("group_norm", "mm"):
    ROWS.register(dataclasses.replace(ROWS.get(name), name=f"{name}_copy"))
"""


def test_every_row_is_one_schema_and_every_family_has_its_behaviour():
    names = [row.name for row in ROWS.rows()]
    assert len(names) == len(set(names))  # one namespace for every family
    assert {row.suite for row in ROWS.rows()} == set(SUITES)
    for row in ROWS.rows():
        assert isinstance(row, Row) and row.module.startswith("flag_gems.") and row.family, row.name
        assert row.entry_names() and all(row.entry_names()), row.name
        assert of(row).suite == row.suite
        for case in row.cases["quick"] if hasattr(row, "cases") else ():
            assert isinstance(case, row.case_type), row.name


@pytest.fixture
def copies(pytester):
    pytester.makepyfile(copies=COPIES)
    return pytester


def _contracts(run_subprocess, *args, env):
    suites = ROOT / "contracts"
    return run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "copies",
        "-c",
        str(suites / "pytest.ini"),
        "--rootdir",
        str(suites),
        str(suites / "layers"),
        str(suites / "tensorops"),
        "-p",
        "no:cacheprovider",
        *args,
        env=env,
    )


@pytest.mark.slow
def test_copies_are_collected_marked_and_routed_with_no_other_edit(copies, run_subprocess):
    env = {"PYTHONPATH": os.pathsep.join([str(copies.path), str(ROOT)])}
    collected = _contracts(run_subprocess, "--platform", "cpu", "--collect-only", "-q", env=env)
    ids = collected.stdout.str()
    for contract in ("test_forward", "test_backward", "test_enabled", "test_paths", "test_accuracy", "test_empty"):
        assert f"{contract}.py::" in ids and ("group_norm_copy" in ids and "mm_copy" in ids), contract
    # marked: group sizes that are not powers of two, and mm's empty K, are known defects of the copies too
    marked = _contracts(
        run_subprocess,
        "--platform",
        "cpu",
        "-q",
        "-k",
        "(group_norm_copy and test_forward and 2x6x7) or (mm_copy and test_empty)",
        "-rA",
        env=env,
    )
    out = marked.stdout.str()
    assert "known defect group_norm_group_size_not_pow2: 1 xfailed" in out, out[-3000:]
    assert "known defect matmul_empty_k_reads_before: 1 xfailed" in out, out[-3000:]
    marked.assert_outcomes(xfailed=2, passed=1)
    # routed: on the emulated lane the workaround wraps the copies' entry points (they share the originals')
    routed = _contracts(
        run_subprocess,
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "-q",
        "-rA",
        "-k",
        "(group_norm_copy or mm_copy) and test_routing",
        env=env,
    )
    outcomes = routed.parseoutcomes()
    assert outcomes.get("passed", 0) >= 2 and not outcomes.get("failed") and not outcomes.get("skipped"), outcomes
    assert {name for name in ("group_norm_copy", "mm_copy") if f"[{name}-" in routed.stdout.str()} == {
        "group_norm_copy",
        "mm_copy",
    }


CHILD = """
import json, sys
from pytest_fl_contract.emulation.interpreter import bring_up
bring_up("nvidia-small")
import flag_gems
from pytest_fl_contract.hardware.isolation import RowSpec, _row_child
spec = json.loads(sys.argv[1])
print(json.dumps(_row_child(RowSpec(**{**spec, "sources": tuple(map(tuple, spec["sources"]))}))))
"""


def test_a_registered_row_is_isolated_in_a_fresh_process_that_registers_it_again(tmp_path):
    """A hardware lane checks large calls in a child process: the child imports the module that
    registered the row (here this test's own file), so the copy is a row there too."""
    from pytest_fl_contract.hardware.isolation import RowSpec

    source = tmp_path / "fl_copies.py"
    source.write_text(COPIES)
    ROWS.load_sources([("fl_copies", str(source))])
    try:
        copy = ROWS.get("mm_copy")
        spec = RowSpec.of(copy, copy.cases["quick"][0], "float32", "cpu")
        assert spec.sources == (("fl_copies", str(source)),)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(dataclasses.asdict(spec))],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
        assert verdict["ok"] and "within torch's result" in verdict["detail"], verdict
    finally:
        for name in ("group_norm_copy", "mm_copy"):
            ROWS.unregister(name)
        sys.modules.pop("fl_copies", None)


def test_a_registered_row_is_in_the_generated_docs_and_the_defects_reach():
    copies = [ROWS.register(dataclasses.replace(ROWS.get(name), name=f"{name}_copy")) for name in ("group_norm", "mm")]
    try:
        tables = docs.rendered()
        for copy in copies:
            assert f"`{copy.name}`" in tables["rows.md"] and f"`{copy.name}`" in tables["kernel-paths.md"]
        assert "group_norm_copy" in ROWS.defect_reach("group_norm_group_size_not_pow2")
        assert "mm_copy" in ROWS.feature_reach("masked_2d_row_load")
        # the no-workaround lane's catch list: the rows the scan's reached modules hold
        reached = {name for reach in coverage.scan(coverage.flag_gems_root()) for name in coverage.rows(reach)}
        assert {"group_norm_copy", "mm_copy"} <= reached
    finally:
        for copy in copies:
            ROWS.unregister(copy.name)
