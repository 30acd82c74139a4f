"""The op registry is the one place an op lives (issue 28): a row added at run time - here a
copy of an existing op under a new name - is picked up by the contracts, the workaround's
targets and the defect catalogue's reach with no other edit."""

from __future__ import annotations

import builtins
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fl_contract.registry import ROWS

from .conftest import ROOT

COPY = """
import dataclasses
from pytest_fl_contract.registry import ROWS
ROWS.register(dataclasses.replace(ROWS.get("sum"), name="sum_copy", real_case=False))
"""

# rows named as Python builtins (all, any) are also every "all dims" and "any runner": not op lists
PACKAGE_NAMES_AN_OP = re.compile(
    r"[\"']({})[\"']".format("|".join(op.name for op in ROWS.rows("reductions") if op.name not in dir(builtins)))
)
FASTPATH_KIND = re.compile(r"\bkind\b|fastpath|tiles\(")  # the fast path's kernel kinds: the rows' fastpath values


@pytest.fixture
def copied():
    row = ROWS.register(dataclasses.replace(ROWS.get("sum"), name="sum_copy"))
    yield row
    ROWS.unregister(row.name)


def test_a_registered_row_reaches_the_defect_catalogue_and_the_workaround(copied):
    from pytest_fl_contract.cli import defect_lines
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.workarounds import masked_reductions

    assert "sum_copy" in ROWS.feature_reach("masked_2d_row_load")
    assert "sum_copy" in ROWS.defect_reach("int32_offset_overflow")
    lines = defect_lines(load_registry(entry_points=False).get("iluvatar"), set())
    assert any(line.startswith("masked_2d_row_load:") and "sum_copy" in line for line in lines)
    qualnames = [t.qualname for t in masked_reductions.targets()]
    assert len(qualnames) == len(set(qualnames))  # the copy shares sum's entry points: wrapped once
    with pytest.raises(ValueError, match="already in the registry"):
        ROWS.register(copied)
    with pytest.raises(ValueError, match=r"'sum\.indices': '\.' names a row's view"):
        ROWS.register(dataclasses.replace(copied, name="sum.indices"))


def test_a_rows_indices_view_is_an_index_op_of_the_same_entry_point():
    view = ROWS.get("max_dim.indices")
    assert (view.kind, view.extreme, view.result, view.entry) == ("index", "max", "indices", "max_dim")
    assert ROWS.get("max_dim").result == "values" and ROWS.get("amax").views() == ()
    view = ROWS.get("aminmax.max")
    assert (view.kind, view.picks, view.result) == ("reduce", "max", "max")
    with pytest.raises(KeyError, match="unknown op 'sum.indices'"):
        ROWS.get("sum.indices")


@pytest.mark.slow
def test_the_contracts_pick_up_a_registered_row(tmp_path):
    """The reduction contracts collect and run the copy: on the emulated Iluvatar lane
    without the workaround they fail for it, with the workaround they hold."""
    (tmp_path / "row_plugin.py").write_text(COPY)
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}"}
    base = [
        sys.executable,
        "-m",
        "pytest_fl_contract.cli",
        "contracts",
        "reductions",
        "--",
        "-p",
        "row_plugin",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "-q",
        "-p",
        "no:randomly",
        "-k",
        "test_accuracy and sum_copy and 3x5x64 and float32",
    ]
    import os

    run = {
        name: subprocess.run([*base, *extra], capture_output=True, text=True, timeout=600, env={**os.environ, **env})
        for name, extra in (("without", ["--fl-no-workaround"]), ("with", []))
    }
    assert run["without"].returncode == 1 and re.search(r"\b[1-9]\d* failed", run["without"].stdout), run[
        "without"
    ].stdout[-2000:]
    assert run["with"].returncode == 0 and re.search(r"\b[1-9]\d* passed", run["with"].stdout), run["with"].stdout[
        -2000:
    ]


def test_no_module_outside_the_registry_and_testing_names_an_op():
    """Everything else that lists ops derives from the rows (kernel kinds of the fast path,
    such as its "sum" plan, are the rows' ``fastpath`` values, not op names)."""
    offenders = []
    for path in sorted((ROOT / "pytest_fl_contract").rglob("*.py")) + sorted((ROOT / "contracts").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        # the overload suite's names are OpInfo's and FlagGems' registration table's, not our rows'
        if rel.startswith(
            ("pytest_fl_contract/registry/", "pytest_fl_contract/testing/", "pytest_fl_contract/overloads/")
        ):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if PACKAGE_NAMES_AN_OP.search(line) and not (
                rel.startswith("pytest_fl_contract/workarounds/") and FASTPATH_KIND.search(line)
            ):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


def test_rows_are_built_with_keywords():
    from pytest_fl_contract.registry import reductions

    source = Path(reductions.__file__).read_text()
    assert not re.search(r"^    Op\(\"", source, re.M), "a row built with positional fields"
