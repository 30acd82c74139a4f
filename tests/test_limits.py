"""The launch-limit and large-index rows of the layer and tensor-op families: the grid
predicates against the kernels' launches, the operands drawn on a device, and the child
process that checks a large call against torch's kernels (hardware.isolation.run_row),
here on the emulator at a small size, where a kernel-edit mutant must fail it."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from pytest_fl_contract.registry import ROWS, layers, tensorops
from pytest_fl_contract.registry.schema import GRID_LIMITS
from pytest_fl_contract.registry.tensorops import TensorCall, TensorCase

torch = pytest.importorskip("torch")


def _select(n: int, index: int) -> bool:
    return "grid_y_over_limit" in ROWS.get("index_select").known_defects(
        TensorCall(TensorCase((2, n), dim=1, index=index)), "5.0.2"
    )


@pytest.mark.parametrize(("n", "block_n"), [(16, 16), (1, 16), (17, 16), (257, 32), (8193, 512), (100000, 512)])
def test_index_select_grid_predicate_follows_its_block_heuristic(n, block_n):
    assert not _select(n, GRID_LIMITS[1] * block_n)
    assert _select(n, GRID_LIMITS[1] * block_n + 1)


@pytest.mark.parametrize(
    ("op", "shape", "defect"),
    [
        ("bmm", (65535, 1, 1, 1), None),
        ("bmm", (65536, 1, 1, 1), "grid_z_over_limit"),
        ("bmm", (65536, 0, 1, 1), None),
        ("bmm", (1, 1, 1, 65535 * 128), None),
        ("bmm", (1, 1, 1, 65535 * 128 + 1), "grid_y_over_limit"),
        ("addmm", (1, 1, 65535 * 256), None),
        ("addmm", (1, 1, 65535 * 256 + 1), "grid_y_over_limit"),
    ],
)
def test_matmul_grid_predicates(op, shape, defect):
    found = ROWS.get(op).known_defects(TensorCall(TensorCase(shape)), "5.4.0.dev0")
    assert (defect in found) if defect else not {"grid_y_over_limit", "grid_z_over_limit"} & set(found)


def test_every_grid_case_passes_a_limit_and_every_large_case_passes_2_31():
    for op in ROWS.rows("tensorops"):
        for case in op.grid:
            assert {"grid_y_over_limit", "grid_z_over_limit"} & set(op.known_defects(TensorCall(case), "5.0.2")), (
                op.name,
                case.id,
            )
        assert op.large, f"{op.name} has no large case"
        for case in op.large:
            operands = (
                {"a": case.shape[:-1], "b": (*case.shape[:-3], *case.shape[-2:])}
                if op.family == tensorops.MATMUL
                else {"x": case.shape}
            )
            assert max(math.prod(s) for s in operands.values()) > 2**31, (op.name, case.id)
    for layer in ROWS.rows("layers"):
        assert layer.large and all(math.prod(c.shape) > 2**31 for c in layer.large), layer.name


def test_operands_drawn_on_a_device_are_the_cpu_draw():
    for op in ROWS.rows("tensorops"):
        case = op.cases["quick"][0]
        here, there = op.operands(case), op.operands(case, device="cpu")
        assert here.keys() == there.keys()
        assert all(torch.equal(v, there[k]) if hasattr(v, "shape") else v == there[k] for k, v in here.items())


def test_an_index_reaches_the_last_element_of_its_dim():
    for name in ("gather", "scatter_add_", "index_select", "index_add"):
        op = ROWS.get(name)
        case = op.cases["quick"][1]
        index = op.operands(case)["index"]
        assert int(index.max()) == case.shape[case.dim] - 1, name


def test_excess_is_per_element_counts_nan_as_infinite_and_reads_every_slab():
    from pytest_fl_contract.hardware.isolation import excess

    want = torch.full((1000,), 100.0)
    got = want.clone()
    got[999] = 100.5  # half a unit off a value of 100: within a rtol of 1e-2, past one of 1e-3
    assert excess(got, want, 1e-2, 0.0, elements=100) == pytest.approx(0.5)
    assert excess(got, want, 1e-3, 0.0, elements=100) == pytest.approx(5.0)
    got[5] = float("nan")
    assert excess(got, want, 1e-2, 0.0, elements=7) == math.inf


_CHILD = """
import json, sys
from pytest_fl_contract.emulation.interpreter import bring_up
bring_up("nvidia-small")
import flag_gems
from pytest_fl_contract.testing import zoo
from pytest_fl_contract.hardware.isolation import RowSpec, _row_child
spec, mutant = json.loads(sys.argv[1]), sys.argv[2]
if mutant:
    zoo.get(mutant).apply()
print(json.dumps(_row_child(RowSpec(**spec))))
"""


@pytest.mark.parametrize(
    ("spec", "mutant"),
    [
        (
            {
                "op": "rms_norm",
                "case": {"shape": [13, 24], "norm": 1, "groups": 1},
                "dtype": "float16",
                "backward": True,
            },
            "rms_norm_mean_square_over_the_block",
        ),
        (
            {"op": "mm", "case": {"shape": [13, 19, 17], "dim": 0, "index": 0}, "dtype": "float32"},
            "mm_tail_drops_last_k",
        ),
    ],
    ids=["rms_norm-fp16", "mm"],
)
def test_the_row_child_holds_flag_gems_to_torch_and_a_mutant_fails_it(spec, mutant):
    """On the emulator (the child's device is the CPU): FlagGems' call against torch's, the
    gradients included; the same child with a kernel-edit mutant applied is not ok."""
    spec = {**spec, "device": "cpu"}
    for applied in ("", mutant):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(spec), applied], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
        assert verdict["ok"] is (not applied), (applied, verdict)
        assert "of the tolerance" in verdict["detail"]


def _layer(name: str, shape: tuple, backward: bool = True, routed: bool = False, groups: int = 1) -> tuple[str, ...]:
    case = layers.LayerCase(shape, groups=groups)
    return ROWS.get(name).known_defects(layers.LayerCall(case, "float16", backward=backward, routed=routed), "5.0.2")


def test_int32_row_offset_predicates_start_where_the_last_row_passes_2_31():
    assert "layer_norm_weight_grad_int32_rows" in _layer("layer_norm", (65537, 32768))
    assert "layer_norm_weight_grad_int32_rows" in _layer("layer_norm", (262145, 8192))
    assert not _layer("layer_norm", (65536, 32768))  # the last row starts at 2**31 - 32768
    assert not _layer("layer_norm", (65537, 32768), backward=False)
    assert not _layer("layer_norm", (65537, 32768), routed=True)
    assert "rms_norm_int32_row_offsets" in _layer("rms_norm", (524289, 4096), backward=False, routed=True)
    assert not _layer("rms_norm", (65537, 32768), backward=False)  # the loop kernel widens its ids
    assert "rms_norm_int32_row_offsets" in _layer("rms_norm", (65537, 32768))
    scatter = ROWS.get("scatter")
    assert "scatter_int32_offsets" in scatter.known_defects(TensorCall(TensorCase((65537, 32768), 1, 1)), "5.0.2")
    assert not scatter.known_defects(TensorCall(TensorCase((65536, 32767), 1, 1)), "5.0.2")


@pytest.mark.parametrize(
    ("shape", "groups", "past"),
    [
        ((2, 64, 2**24 + 1), 32, True),
        ((1, 128, 1024, 1024), 32, True),
        ((1, 64, 1024, 1024), 32, True),
        ((1, 32, 1024, 1024), 32, False),
        ((1, 2, 2**19), 1, False),
        ((1, 2, 2**19 + 1), 1, True),
        ((1, 3, 2**18 + 1), 1, True),
    ],
)
def test_group_norm_tile_predicate_is_the_pow2_tile_past_2_20(shape, groups, past):
    assert ("group_norm_tile_past_max_numel" in _layer("group_norm", shape, groups=groups)) is past
    assert not _layer("group_norm", shape, groups=groups, routed=True)
