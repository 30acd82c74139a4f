"""FlagGems' own tests of the registry's families (lanes/owntests.py): the files derive from the
rows, come from the lane's FlagGems tests (a wheel unpacked, a lane site, the environment), and a
selection that finds nothing is refused, never run as a pass."""

from __future__ import annotations

import zipfile

import pytest

from pytest_fl_contract.lanes import owntests
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.util import FlContractError


def _tests(root, *names):
    package = root / owntests.PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in names:
        (package / f"test_{name}.py").write_text("def test_x(): pass\n")
    return package


def test_every_row_of_every_family_is_under_its_family():
    found = owntests.families()
    rows = {name for members in found.values() for name, _ in members}
    assert rows == {op.name for op in ROWS.rows("reductions")} | {layer.name for layer in ROWS.rows("layers")} | {
        op.name for op in ROWS.rows("tensorops")
    }
    assert dict(found["min/max"])["max_dim"][:2] == ("max_dim", "max")  # FlagGems files max.dim as test_max.py


def test_the_files_are_the_rows_own_in_registry_order(tmp_path):
    package = _tests(tmp_path, "layer_norm", "mm", "max", "unrelated")
    assert [p.name for p in owntests.files(["normalization", "min/max"], package)] == [
        "test_layer_norm.py",
        "test_max.py",
    ]
    assert {p.name for p in owntests.files(["all"], package)} == {"test_layer_norm.py", "test_mm.py", "test_max.py"}


def test_a_selection_that_finds_no_file_is_refused(tmp_path):
    package = _tests(tmp_path, "unrelated")
    with pytest.raises(FlContractError, match="holds no FlagGems test file of matmul: nothing to run"):
        owntests.files(["matmul"], package)


def test_a_registered_row_is_picked_up_with_no_other_edit(tmp_path):
    from dataclasses import replace

    copy = ROWS.register(replace(ROWS.get("mm"), name="mm_copy"))
    try:
        package = _tests(tmp_path, "mm_copy")
        assert [p.name for p in owntests.files(["matmul"], package)] == ["test_mm_copy.py"]
    finally:
        ROWS.unregister(copy.name)


def test_the_directory_comes_from_the_lane_first(tmp_path, monkeypatch):
    lane = _tests(tmp_path / "lane", "mm")
    site = _tests(tmp_path / "site", "mm")
    assert owntests.directory({"FL_LANE_TESTS": str(tmp_path / "lane"), "FL_LANE_SITE": str(tmp_path / "site")}) == lane
    assert owntests.directory({"FL_LANE_SITE": str(tmp_path / "site")}) == site
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(FlContractError, match="no FlagGems tests to run"):
        owntests.directory({"FL_LANE_SITE": str(tmp_path / "nowhere")})


def test_only_the_tests_of_a_wheel_are_unpacked(tmp_path):
    wheel = tmp_path / "flag_gems-9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("flag_gems/__init__.py", "raise SystemExit('not this one')\n")
        z.writestr("flaggems_tests/__init__.py", "")
        z.writestr("flaggems_tests/test_mm.py", "def test_x(): pass\n")
    into = owntests.unpack(str(wheel), tmp_path / "out")
    assert sorted(p.name for p in into.iterdir()) == ["flaggems_tests"]
    assert owntests.files(["matmul"], into / "flaggems_tests")[0].name == "test_mm.py"
    with zipfile.ZipFile(tmp_path / "bare.whl", "w") as z:
        z.writestr("flag_gems/__init__.py", "")
    with pytest.raises(FlContractError, match="ships no flaggems_tests"):
        owntests.unpack(str(tmp_path / "bare.whl"), tmp_path / "out2")
    (tmp_path / "junk.whl").write_bytes(b"not a zip")
    with pytest.raises(FlContractError, match="cannot read"):
        owntests.unpack(str(tmp_path / "junk.whl"), tmp_path / "out3")
