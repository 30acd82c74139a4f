from __future__ import annotations

import types

import pytest
import yaml

from pytest_fl_contract.config import platforms
from pytest_fl_contract.config.platforms import Detection, detect, load_registry, merge
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.util import FlContractError

FLAGGEMS_VENDORS = [
    "nvidia",
    "iluvatar",
    "ascend",
    "cambricon",
    "metax",
    "mthreads",
    "kunlunxin",
    "hygon",
    "amd",
    "aipu",
    "tsingmicro",
    "sunrise",
    "enflame",
]


@pytest.fixture(scope="module")
def registry():
    return load_registry(entry_points=False)


def test_names_follow_flag_gems_vendors_plus_cpu_mps_bpu(registry):
    assert set(registry.names) == {*FLAGGEMS_VENDORS, "cpu", "mps", "bpu"}
    for vendor in FLAGGEMS_VENDORS:
        assert registry.get(vendor).vendor == vendor


@pytest.mark.parametrize(
    "alias, name",
    [
        ("cuda", "nvidia"),
        ("gcu", "enflame"),
        ("musa", "mthreads"),
        ("dcu", "hygon"),
        ("npu", "ascend"),
        ("mlu", "cambricon"),
        ("CUDA", "nvidia"),
        ("corex", "iluvatar"),
    ],
)
def test_torch_fl_names_are_aliases(registry, alias, name):
    assert registry.get(alias).name == name


def test_capabilities_match_flag_gems_lists(registry):
    no_fp64 = {"cambricon", "iluvatar", "kunlunxin", "mthreads", "aipu", "ascend", "tsingmicro", "sunrise", "enflame"}
    assert {p for p in registry.names if not registry.get(p).has("fp64")} == no_fp64
    assert {p for p in registry.names if not registry.get(p).has("bf16")} == {"aipu", "sunrise"}
    assert {p for p in registry.names if not registry.get(p).has("int64")} == {
        "aipu",
        "tsingmicro",
        "sunrise",
        "enflame",
    }
    no_cast = {p for p in registry.names if not registry.get(p).has("device_cast")}
    assert no_cast == {"bpu", "iluvatar", "mps", "tsingmicro"}


def test_only_defects_that_touch_foreign_memory_may_fault(registry):
    """A device fault is the expected failure of these alone (devicehealth.expected_fault)."""
    faulting = {d.id for d in registry.get("nvidia").defects if d.faults}
    assert faulting == {
        "argmin_inner_out_of_bounds",
        "int32_offset_overflow",
        "out_not_resized",
        "layer_norm_backward_rank",
        "scatter_int32_offsets",
        "rms_norm_int32_row_offsets",
        # found by the overload suite: reads or writes past a tensor, and the Hopper mm copy
        "ldl_factor_rows_stored_64_wide",
        "jagged_to_padded_dense_values_1d_uncut",
        "scatter_strided_self_stored_with_its_strides",
        "unsafe_masked_index_first_index_flat",
        "hopper_mm_tma_empty_and_stride_0",
    }


def test_iluvatar_lists_the_masked_load_defect(registry):
    defect = registry.get("iluvatar").defect("masked_2d_row_load")
    assert defect is not None and defect.workaround == "masked_reductions" and not defect.flag_gems
    assert {"sum", "mean", "softmax", "argmax"} <= set(ROWS.reach(defect))  # from the op rows' features


def test_unknown_platform_lists_known_names(registry):
    with pytest.raises(FlContractError, match="unknown platform 'nosuch'; known: aipu, amd"):
        registry.get("nosuch")


MALFORMED = [
    ("platforms: [1, 2]", "platforms: expected a mapping"),
    ("nope: {}", "nope: unknown top-level key"),
    ("platforms: {x: {device_type: cpu, colour: red}}", "platforms.x.colour: unknown key"),
    (
        "platforms: {x: {device_type: cpu, capabilities: {fp65: true}}}",
        "platforms.x.capabilities.fp65: unknown capability",
    ),
    (
        "platforms: {x: {device_type: cpu, capabilities: {fp64: maybe}}}",
        "platforms.x.capabilities.fp64: expected true or false",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{description: d}]}}",
        r"platforms.x.defects\[0\].id: required string",
    ),
    ("platforms: {x: {device_type: cpu, defects: {}}}", "platforms.x.defects: expected a list"),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, faults: sometimes}]}}",
        r"platforms.x.defects\[0\].faults: expected true or false",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, trigger: weather}]}}",
        r"platforms.x.defects\[0\].trigger: one of launch_resources",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, trigger: launch_resources}]}}",
        r"platforms.x.defects\[0\].fails_with: a defect with a trigger names the error",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, trigger: registered_function,"
        " fails_with: [RegisteredFunctionDefect]}]}}",
        r"platforms.x.defects\[0\].registered: given exactly where trigger is registered_function",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, registered: ['m:f']}]}}",
        r"platforms.x.defects\[0\].registered: given exactly where trigger is registered_function",
    ),
    (
        "platforms: {x: {device_type: cpu, defects: [{id: a, description: d, trigger: registered_function,"
        " registered: [mul], fails_with: [RegisteredFunctionDefect]}]}}",
        r"platforms.x.defects\[0\].registered: each a FlagGems function as module:function",
    ),
    ("platforms: {x: {device_type: cpu, aliases: cuda}}", "platforms.x.aliases: expected a list of strings"),
    ("platforms: {x: {device_type: cpu, emulation: {profile: 3}}}", "platforms.x.emulation: expected"),
    ("platforms: {x: {vendor: x}}", "platforms.x.device_type: required for a new platform"),
    (
        "platforms: {x: {device_type: cpu, aliases: [cuda]}}",
        "platforms.x.aliases: alias 'cuda' is already an alias of platform 'nvidia'",
    ),
    ("platforms: {x: [", r"line [12]: not valid YAML"),
]


@pytest.mark.parametrize("text, message", MALFORMED)
def test_malformed_file_is_one_line_naming_file_and_key(tmp_path, text, message):
    path = tmp_path / "vendor.yaml"
    path.write_text(text)
    with pytest.raises(FlContractError, match=message) as info:
        load_registry([str(path)], entry_points=False)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(FlContractError, match="cannot read"):
        load_registry([str(tmp_path / "none.yaml")], entry_points=False)


def test_vendor_file_overrides_key_by_key_and_adds(tmp_path):
    path = tmp_path / "vendor.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "platforms": {
                    "iluvatar": {"capabilities": {"device_cast": True}},
                    "newchip": {"vendor": None, "device_type": "newchip", "aliases": ["nc"]},
                }
            }
        )
    )
    registry = load_registry([str(path)], entry_points=False)
    ilu = registry.get("iluvatar")
    assert ilu.has("device_cast") and not ilu.has("fp64")  # merged, not replaced
    assert ilu.defect("masked_2d_row_load") is not None
    assert registry.get("nc").name == "newchip"
    assert registry.sources[-1] == str(path)


def test_entry_point_group_extends_registry(monkeypatch):
    doc = {"platforms": {"newchip": {"device_type": "newchip"}}}
    monkeypatch.setattr(platforms, "_entry_point_sources", lambda: [("entry point vendor", lambda: lambda: doc)])
    assert load_registry().get("newchip").device_type == "newchip"


def test_broken_entry_point_is_one_line(monkeypatch):
    def boom():
        raise ImportError("no module named vendor_plugin")

    monkeypatch.setattr(platforms, "_entry_point_sources", lambda: [("entry point vendor (x:y)", boom)])
    with pytest.raises(FlContractError, match="entry point vendor .*failed to load: no module named vendor_plugin"):
        load_registry()


def test_merge_is_pure():
    base = {"a": {"capabilities": {"fp64": False}}}
    merged = merge(base, {"a": {"capabilities": {"bf16": False}}})
    assert merged["a"]["capabilities"] == {"fp64": False, "bf16": False}
    assert base == {"a": {"capabilities": {"fp64": False}}}


def _fake_torch(attrs=(), cuda_name=None, hip=None):
    torch = types.SimpleNamespace(**{a: object() for a in attrs})
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: cuda_name is not None, get_device_name=lambda i=0: cuda_name
    )
    torch.version = types.SimpleNamespace(hip=hip)
    return torch


@pytest.mark.parametrize(
    "environ, torch, expected",
    [
        ({"GEMS_VENDOR": "iluvatar"}, _fake_torch(), Detection("iluvatar", "GEMS_VENDOR=iluvatar")),
        ({}, _fake_torch(["corex"]), Detection("iluvatar", "torch.corex exists")),
        ({}, _fake_torch(["npu"]), Detection("ascend", "torch.npu exists")),
        ({}, _fake_torch(["musa"]), Detection("mthreads", "torch.musa exists")),
        ({}, _fake_torch(["mlu"]), Detection("cambricon", "torch.mlu exists")),
        ({}, _fake_torch(["gcu"]), Detection("enflame", "torch.gcu exists")),
        ({}, _fake_torch(["ptpu"]), Detection("sunrise", "torch.ptpu exists")),
        ({}, _fake_torch(cuda_name="Iluvatar BI-V150"), Detection("iluvatar", "CUDA device 'Iluvatar BI-V150'")),
        ({}, _fake_torch(cuda_name="NVIDIA H200"), Detection("nvidia", "CUDA device 'NVIDIA H200'")),
        ({}, _fake_torch(cuda_name="AMD MI300X", hip="6.2"), Detection("amd", "ROCm device 'AMD MI300X'")),
        ({}, _fake_torch(), Detection("cpu", "no accelerator found by torch")),
        ({"GEMS_VENDOR": "bogus"}, _fake_torch(), Detection("cpu", "no accelerator found by torch")),
        # an xdist worker of an emulated run inherits the emulator's GEMS_VENDOR: still the CPU
        (
            {"GEMS_VENDOR": "nvidia", "FL_CONTRACT_EMULATED_VENDOR": "nvidia"},
            _fake_torch(),
            Detection("cpu", "GEMS_VENDOR=nvidia was set by fl-contract's CPU emulator"),
        ),
        (
            {"GEMS_VENDOR": "iluvatar", "FL_CONTRACT_EMULATED_VENDOR": "nvidia"},
            _fake_torch(),
            Detection("iluvatar", "GEMS_VENDOR=iluvatar"),
        ),
    ],
)
def test_detect_as_flag_gems_does(registry, environ, torch, expected):
    assert detect(registry, environ, torch) == expected


def test_defects_command_says_whose_each_defect_is(registry, capsys):
    """`fl-contract defects`: a compiler defect names its ops, a FlagGems one the FlagGems
    versions per op (from the op registry), and whether the default workaround covers it."""
    from pytest_fl_contract.cli import defect_lines, main

    lines = defect_lines(registry.get("iluvatar"), {"masked_2d_row_load"})
    by_id = {line.split(":", 1)[0]: line for line in lines}
    assert by_id["masked_2d_row_load"].startswith("masked_2d_row_load: compiler; ops sum, mean")
    assert "workaround covers it: yes" in by_id["masked_2d_row_load"]
    assert "ops sum (every version); mean (every version)" in by_id["int32_offset_overflow"]
    assert "FlagGems" in by_id["nan_dropped_by_max"] and "workaround covers it: no" in by_id["nan_dropped_by_max"]
    assert "masked_2d_row_load" not in {line.split(":", 1)[0] for line in defect_lines(registry.get("nvidia"), set())}
    assert main(["defects", "--platform", "iluvatar", "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2].startswith("| defect | whose |") and len(table) == 4 + len(registry.get("iluvatar").defects)
    assert main(["defects", "--platform", "nosuch"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
