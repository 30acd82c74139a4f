"""Coverage from what FlagGems defines: every module whose kernels the masked-row defect
reaches has a registry row or a stated reason (``registry.coverage``), on each FlagGems
line; a release that adds such a module fails here until it has one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from pytest_fl_contract.registry import ROWS, coverage, reductions

from .conftest import ROOT

NON_INNER = """
import triton
import triton.language as tl

@triton.jit
def kernel(out, inp, M, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    pid_m = tl.program_id(0)
    k = tl.program_id(1) * TILE_K + tl.arange(0, TILE_K)
    acc = tl.zeros([TILE_N, TILE_K], dtype=tl.float32)
    for start in range(0, N, TILE_N):
        n = start + tl.arange(0, TILE_N)[:, None]
        {mask}
        acc += tl.load(inp + pid_m * N * K + n * K + k, {load})
    tl.store(out + pid_m * K + k, tl.sum(acc, axis={axis}), mask=k < K)
"""


def kernel(mask: str = "mask = (n < N) & (k[None, :] < K)", load: str = "mask=mask, other=0.0", axis: int = 0) -> str:
    return NON_INNER.format(mask=mask, load=load, axis=axis)


@pytest.mark.parametrize(
    "source",
    [
        kernel(),
        kernel(mask="mask = n < N and k[None, :] < K"),  # Python's `and`, as argmax writes it
        kernel(load="mask, other=0.0"),  # the mask passed positionally (layer_norm's backward)
        kernel(mask="row = n < N\n        col = k[None, :] < K\n        mask = row & col"),
        kernel(mask="mask = (n < N) & (k[None, :] < K)\n        mask = mask & (pid_m >= 0)"),  # reassigned
    ],
    ids=["and-operator", "python-and", "positional", "through-names", "reassigned"],
)
def test_a_row_masked_tile_folded_along_its_rows_is_reached(source):
    assert coverage.reached_kernels(source) == ("kernel",)


def test_a_whole_tile_fold_is_reached_too():
    """Batch and group norm's statistics: tl.sum over a whole (rows, columns) tile, no axis."""
    whole = kernel().replace("tl.sum(acc, axis=0)", "tl.sum(acc)")
    assert coverage.reached_kernels(whole) == ("kernel",)
    assert (
        coverage.reached_kernels(kernel(mask="mask = k[None, :] < K").replace("tl.sum(acc, axis=0)", "tl.sum(acc)"))
        == ()
    )


DOT = """
import triton
import triton.language as tl

@triton.jit
def kernel(c, a, b, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, K, BK):
        rk = start + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask={a_mask}, other=0.0)
        {b_mask}
        y = tl.load(b + rk[:, None] * N + rn[None, :], mask=mask_b, other=0.0)
        acc += tl.dot({operands})
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
"""


def dot(a_mask: str = "rk[None, :] < K", b_mask: str = "mask_b = rk[:, None] < K", operands: str = "x, y") -> str:
    return DOT.format(a_mask=a_mask, b_mask=b_mask, operands=operands)


@pytest.mark.parametrize(
    "source",
    [
        dot(),  # mm's peeled tail: the row condition alone, broadcast over the columns
        dot(b_mask="mask_b = (rk[:, None] < K) & (rn[None, :] < N)"),  # addmm's, bmm's
        dot(operands="x, y.to(tl.float16)"),  # cast on the way in
    ],
    ids=["bare-row", "combined", "cast"],
)
def test_a_dot_whose_second_operand_is_row_masked_is_reached(source):
    """The K tail: rows read past K enter every output of the product."""
    assert coverage.reached_kernels(source) == ("kernel",)


@pytest.mark.parametrize(
    "source",
    [
        dot(b_mask="mask_b = rn[None, :] < N"),  # only a column condition on the second operand
        dot(a_mask="(rm[:, None] < M) & (rk[None, :] < K)", b_mask="mask_b = rn[None, :] < N"),  # rows of the first: M
        dot(operands="y, x"),  # the row-masked tile is the first operand: its rows are M, masked at the store
    ],
    ids=["column-only", "first-operand-rows", "swapped"],
)
def test_a_dot_the_defect_does_not_reach(source):
    assert coverage.reached_kernels(source) == ()


@pytest.mark.parametrize(
    "source",
    [
        kernel(axis=1),  # reduced along its columns: the extra rows are never stored
        kernel(mask="mask = k[None, :] < K"),  # no row condition to drop
        kernel(mask="mask = (n[:, None, None] < N) & (k[None, :] < K)"),  # a 3-D tile: not the 2-D defect
        kernel().replace("@triton.jit", ""),  # not a kernel
        "def broken(:\n",  # unparsable source reaches nothing
    ],
    ids=["column-fold", "no-row-condition", "3-d", "not-jit", "syntax-error"],
)
def test_what_the_defect_does_not_reach(source):
    assert coverage.reached_kernels(source) == ()


def _rows(found):
    return {name for r in found for name in coverage.rows(r)}


def _lines(fg54_site):
    return ((coverage.flag_gems_root(), "5.0.2"), (fg54_site / "flag_gems", "5.4.0.dev0"))


def test_every_line_has_no_uncovered_module(fg54_site):
    for root, _ in _lines(fg54_site):
        assert coverage.uncovered(coverage.scan(root)) == (), root


def test_the_scan_finds_what_the_rows_declare_and_nothing_else(fg54_site):
    """Each row says which kernels of its module fold a row-masked tile (``row_masked``: a
    reduction's ``*_non_inner`` kernels, a layer's ``row_folds``, a matmul's ``kernels``): on
    every line the scan finds no kernel a row does not declare, and every declared kernel is
    found on some line.  The rows are the snapshot: a new row brings its own."""
    declared_found: set[tuple[str, str]] = set()
    for root, version in _lines(fg54_site):
        found = {r.module: set(r.kernels) for r in coverage.scan(root)}
        for row in ROWS.rows():
            declared = set(row.row_masked(version))
            assert found.get(row.module, set()) <= declared, (version, row.name, found.get(row.module))
            declared_found |= {(row.name, k) for k in declared & found.get(row.module, set())}
    never = {
        (row.name, k) for row in ROWS.rows() for _, v in _lines(fg54_site) for k in row.row_masked(v)
    } - declared_found
    assert never == set(), never


def test_every_stated_reason_names_a_module_some_line_reaches(fg54_site):
    """No stale entry: a reason for a module that no longer exists or is no longer reached
    would hide the next one."""
    reached = {r.name for root in (coverage.flag_gems_root(), fg54_site / "flag_gems") for r in coverage.scan(root)}
    assert set(coverage.NOT_ROWS) <= reached, set(coverage.NOT_ROWS) - reached


@pytest.fixture
def new_release(tmp_path):
    """The installed FlagGems' source with one more op: a copy of sum under a new name."""
    root = tmp_path / "flag_gems"
    shutil.copytree(coverage.flag_gems_root(), root, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "ops" / "sum.py", root / "ops" / "nansum_new.py")
    return root


def test_a_release_that_adds_a_non_inner_module_fails_until_it_has_a_row(new_release):
    missing = coverage.uncovered(coverage.scan(new_release))
    assert [r.module for r in missing] == ["flag_gems.ops.nansum_new"]
    assert "UNKNOWN to the registry: ops.nansum_new" in coverage.summary(coverage.scan(new_release))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.registry.coverage", str(new_release)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == "1 reached module(s) with no row: flag_gems.ops.nansum_new"
    assert "| `flag_gems.ops.nansum_new` | `sum_dim_kernel_non_inner` | **nothing** |" in done.stdout


def test_no_flag_gems_is_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.registry.coverage", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2 and done.stderr.strip() == f"fl-contract: error: no flag_gems package at {tmp_path}"


def test_the_workaround_wraps_the_modules_the_scan_finds(fg54_site):
    """The workaround's targets are the scan's, not a name pattern: on 5.4 it wraps
    special_logsumexp (a module of its own) and not special_log_softmax (its kernels fold
    along columns)."""
    code = (
        "from pytest_fl_contract.emulation.interpreter import bring_up;"
        "from pytest_fl_contract.hardware.device import import_flag_gems;"
        "from pytest_fl_contract.workarounds import masked_reductions as mr;"
        "bring_up('iluvatar-small'); import_flag_gems();"
        "print(json.dumps(sorted({t.module for t in mr.applicable_targets()})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json;" + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(fg54_site), str(ROOT)])},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "flag_gems.ops.special_logsumexp" in modules and "flag_gems.ops.special_log_softmax" not in modules
    assert {m.rsplit(".", 1)[-1] for m in modules} == {
        "sum",
        "mean",
        "softmax",
        "log_softmax",
        "argmax",
        "prod",
        "std",
        "logsumexp",
        "special_logsumexp",
    }


def _catch(lane: str) -> set[str]:
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.lanes import manifest

    found = manifest.load(ROOT / "ci" / "manifest.yaml", load_registry())
    return {op for step in found.lanes[lane].steps for op in step.catch}  # the reductions' and the layers' steps


def test_the_no_workaround_lanes_must_catch_every_reached_op(fg54_site):
    """The lanes' ``catch`` lists are the scan's rows per line: a reached op the defect's lane
    stops catching turns it red, and a newly reached op cannot be left off."""
    assert _catch("iluvatar-emulated-noworkaround") == _rows(coverage.scan(coverage.flag_gems_root()))
    assert _catch("iluvatar-emulated-noworkaround-fg54") == _rows(coverage.scan(fg54_site / "flag_gems"))


def test_a_defect_that_writes_past_its_tensor_is_skipped_on_hardware_and_run_on_the_emulator():
    """special_log_softmax's small-N kernel over a non-inner dim (5.4): an H200 passed and
    failed the same case, and faulted on others; the emulator stops every such write."""
    op, version = ROWS.get("special_log_softmax"), "5.4.0.dev0"
    non_inner = reductions.Call((3, 5, 4), 1)
    assert "small_n_ignores_k" in op.known_defects(non_inner, version, emulated=True)
    assert "small_n_ignores_k" not in op.known_defects(non_inner, version, emulated=False)
    assert op.corrupting(non_inner, version) == ("small_n_ignores_k",)
    for fine in (
        reductions.Call((3, 5), 1),
        reductions.Call((1, 4), 0),
        reductions.Call((3, 1025, 4), 1),
    ):  # inner; dim 0 with N = 1; N > 1024
        assert op.corrupting(fine, version) == () and not op.known_defects(fine, version, emulated=True)
