"""The compiler probes, proven under the emulator (issue 16).

This session runs with ``fl_platform = cpu``: the emulator is up, Triton interprets, and
defects are switched on per test.  Shown here: the seed's table reproduced (28, 28, 6, 6,
1-D correct), exactly the ``masked_2d_row_load`` probes failing when it is injected, every
probe failing against its mutant kernel, the ``and`` / ``or`` probes failing on Triton's
plain interpreter, and the command's table, exits and lane summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pytest_fl_contract import cli
from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.emulation import device
from pytest_fl_contract.lanes.manifest import load
from pytest_fl_contract.probes import battery
from pytest_fl_contract.probes import catalogue as probes
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.reporting import junit
from pytest_fl_contract.util import md_code

from .conftest import ROOT

REGISTRY = load_registry(entry_points=False)
ROW_LOAD = "masked_2d_row_load"
ROW_LOAD_PROBES = {p.id for p in battery.PROBES if p.defect == ROW_LOAD}
AND_OR_PROBES = {p.id for p in battery.PROBES if p.defect == "python_and_or_masks"}
LABEL = "compiler: masked_2d_row_load; affects " + ", ".join(ROWS.feature_reach("masked_2d_row_load"))


@pytest.fixture
def row_defect():
    device.enable(ROW_LOAD)
    yield
    device.disable()
    device.poison(None)


def verdicts(rows):
    return {r.probe: r.verdict for r in rows}


# -- item 4: the emulated lane -----------------------------------------------------------------


def test_seed_table_reproduced_exactly(row_defect):
    seed = [p for p in battery.PROBES if p.id.startswith("seed_")]
    got = [p.run("cpu") for p in seed]
    assert [float(o.result[0]) for o in got] == [28.0, 28.0, 6.0, 6.0, 6.0]
    assert [float(o.expected[0]) for o in got] == [6.0] * 5


def test_every_probe_passes_on_the_interpreter():
    rows = probes.run_battery("cpu", REGISTRY.get("cpu"))
    assert {p: v for p, v in verdicts(rows).items() if v != "ok"} == {"int64_offsets": "skipped"}


def test_injected_row_load_fails_exactly_its_probes(row_defect):
    rows = probes.run_battery("cpu", REGISTRY.get("iluvatar"))
    failed = {r.probe for r in rows if r.failed}
    assert failed == ROW_LOAD_PROBES and {"seed_masked_load", "seed_where_row"} <= failed
    assert {r.defect for r in rows if r.failed} == {ROW_LOAD}
    assert probes.findings(rows, REGISTRY.get("iluvatar"), REGISTRY) == [
        f"{LABEL} (known on iluvatar; probes: {', '.join(p.id for p in battery.PROBES if p.defect == ROW_LOAD)})"
    ]


PLAIN = textwrap.dedent(
    """
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"  # Triton's interpreter as shipped: no emulator, no `and` fix
    from pytest_fl_contract.probes import catalogue as probes
    print(json.dumps({r.probe: r.verdict for r in probes.run_battery("cpu")}))
    """
)


def test_plain_interpreter_fails_exactly_the_and_or_probes():
    """The interpreter fault the emulator corrects (Python `and`/`or` returning an operand)
    is caught by the probes, and by no other probe."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "FL_PLATFORM", "GEMS_VENDOR")}
    done = subprocess.run([sys.executable, "-c", PLAIN], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert (
        {p for p, v in got.items() if v == "FAIL"}
        == AND_OR_PROBES
        == {"python_and", "python_and_cols_first", "python_or"}
    )
    assert {p for p, v in got.items() if v not in ("ok", "FAIL")} == {"int64_offsets"}


# -- each probe can fail ---------------------------------------------------------------------------


@pytest.mark.parametrize("probe", battery.PROBES, ids=lambda p: p.id)
def test_every_probe_catches_its_mutant(probe):
    """The mutant is the probe's kernel with its feature broken in source; the sizes and
    data must make that change the answer.  int64_offsets (hardware only) runs here at a
    small span, its mutant wrapping offsets at twice the span as a 32-bit one wraps at 2**31."""
    sizes = {"span": 64} if probe.hardware_only else {}
    if probe.hardware_only:
        result, expected = probe.launch("cpu", probe.kernel, **sizes)
        assert (result.numpy() == expected).all()
        result, expected = probe.launch("cpu", probe.mutant, **sizes)
        assert not (result.numpy() == expected).all()
        return
    assert probe.run("cpu").passed
    assert not probe.run("cpu", probe.mutant).passed


def test_int64_probe_skips_on_the_interpreter_and_without_memory(monkeypatch):
    probe = battery.BY_ID["int64_offsets"]
    assert "hardware only" in probe.run("cpu").skipped
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(battery, "_free_bytes", lambda device: 2**30)
    assert probe.run("cpu").skipped == "cpu has 1.0 GiB free; the probe needs 2.5 GiB"
    monkeypatch.setattr(battery, "_free_bytes", lambda device: None)
    assert probe.run("cpu").skipped.startswith("cannot ask cpu for its free memory")


# -- the catalogue and the registry ----------------------------------------------------------------


def test_every_probe_names_a_catalogued_compiler_defect_and_every_compiler_defect_has_a_probe():
    named = {p.defect for p in battery.PROBES}
    compiler = {d.id for d in REGISTRY.defects.values() if not d.flag_gems}
    assert named == compiler
    assert all(REGISTRY.defects[d].feature for d in compiler)
    assert len({p.id for p in battery.PROBES}) == len(battery.PROBES)


def test_a_defects_reach_is_the_op_registrys_vocabulary():
    """Rows' features (reductions, layers, matmul and index ops) name compiler defects of the
    catalogue; a FlagGems defect's reach is the rows whose predicates name it."""
    for op in ROWS.rows("reductions"):
        assert {d.id for d in op.defects} <= REGISTRY.flag_gems_defects, op.name
    rows = (*ROWS.rows("reductions"), *ROWS.rows("layers"), *ROWS.rows("tensorops"))
    for row in rows:
        assert set(row.features) <= {d.id for d in REGISTRY.defects.values() if not d.flag_gems}, row.name
    for defect in REGISTRY.defects.values():
        assert set(ROWS.reach(defect)) <= {row.name for row in rows}, defect.id
    assert {"mm", "addmm", "bmm", "layer_norm"} <= set(ROWS.feature_reach("masked_2d_row_load"))


def test_row_load_ops_come_from_the_registry():
    iluvatar = REGISTRY.get("iluvatar")
    assert probes.label(ROW_LOAD, iluvatar, REGISTRY) == LABEL
    assert probes.label(ROW_LOAD, REGISTRY.get("cpu"), REGISTRY) == LABEL  # another platform's entry
    assert set(probes.affected_ops(ROW_LOAD)) == set(probes.affected_ops(ROW_LOAD, iluvatar))
    assert probes.label("argmax_tie_break") == "compiler: argmax_tie_break; affects argmax, max_dim, min_dim"
    assert probes.label("masked_2d_nonseparable_load") == "compiler: masked_2d_nonseparable_load"


# -- the table -------------------------------------------------------------------------------------

TABLE_ROWS = [
    probes.Row("seed_masked_load", "tl.load(mask=(n<N)&(k<K))", "28", "6", "FAIL", ROW_LOAD),
    probes.Row("mask_pipe", "(n>=N) | (k>=K)", "[8, 8]", "[8, 8]", "ok", ""),
    probes.Row("int64_offsets", "offsets", "-", "-", "skipped", "", "hardware only"),
]


def test_text_table_is_aligned():
    lines = probes.render_text(TABLE_ROWS)
    assert lines[0].split() == probes.HEADER
    starts = [lines[0].index(h) for h in ("result", "expected", "verdict")]
    assert [line[s - 2 : s] for line in lines for s in starts] == ["  "] * len(lines) * 3
    assert lines[1].split()[-3:] == ["6", "FAIL", ROW_LOAD]


def test_markdown_table_escapes_pipes_and_quotes_variants():
    lines = probes.render_markdown(TABLE_ROWS)
    assert lines[:2] == ["| probe | variant | result | expected | verdict | defect |", "|---|---|---|---|---|---|"]
    assert lines[3] == "| mask_pipe | `(n>=N) \\| (k>=K)` | [8, 8] | [8, 8] | ok |  |"
    assert probes.notes(TABLE_ROWS) == ["int64_offsets skipped: hardware only"]


@pytest.mark.parametrize(
    "values, text",
    [(6.0, "6"), (-float("inf"), "-inf"), (0.5, "0.5"), (list(range(10)), "[0, 1, 2, 3, 4, 5, 6, 7, ...]")],
)
def test_values_as_shown(values, text):
    import numpy as np

    assert probes.shown(np.asarray(values, dtype=np.float32)) == text


# -- fl-contract probe -----------------------------------------------------------------------------


def test_command_on_the_cpu_lane(capsys):
    assert cli.main(["probe", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("compiler probe battery: platform cpu, device NVIDIA emulated (4 SMs) (Triton's")
    assert out[2].split() == [
        "seed_masked_load",
        "(N=4,",
        "TILE_N=8)",
        "tl.load(mask=(n<N)&(k<K),",
        "other=0.0)",
        "6",
        "6",
        "ok",
    ]
    n = len(battery.PROBES)
    assert f"{n} probes: {n - 1} passed, 0 failed, 0 errors, 1 skipped" in out


def test_command_mutants_are_all_caught(capsys):
    assert cli.main(["probe", "--platform", "cpu", "--mutants", "--only", "seed_masked_load"]) == 0
    assert "1 mutants: 1 caught, 0 missed, 0 errors, 0 skipped" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["probe", "--platform", "nvidia"],
            "fl-contract: error: platform nvidia runs on cuda, and torch sees no "
            "cuda device here; run on the lane's machine, or pass --emulate",
        ),
        (["probe", "--platform", "cpu", "--only", "nosuch"], "fl-contract: error: unknown probe 'nosuch'; known: "),
        (["probe", "--platform", "quantum"], "fl-contract: error: unknown platform 'quantum'"),
        (["probe", "--platform", "nvidia", "--inject", ROW_LOAD], "fl-contract: error: --fl-inject and --fl-profile"),
    ],
)
def test_command_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_command_on_the_emulated_iluvatar_lane(tmp_path):
    """In its own process: the Iluvatar profile and the injected defect are per process."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "FL_PLATFORM", "GEMS_VENDOR")}
    argv = [
        sys.executable,
        "-m",
        "pytest_fl_contract.cli",
        "probe",
        "--platform",
        "iluvatar",
        "--emulate",
        "--markdown",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    out = done.stdout.splitlines()
    assert "injected defects: masked_2d_row_load" in out[0]
    assert (
        "| seed_masked_load | `(N=4, TILE_N=8) tl.load(mask=(n<N)&(k<K), other=0.0)` | 28 | 6 | FAIL | "
        "masked_2d_row_load |" in out
    )
    assert (
        "| seed_where_row | `(N=4, TILE_N=8) load + tl.where(n < N, v, 0)` | 28 | 6 | FAIL | masked_2d_row_load |"
        in out
    )
    assert "| seed_tile_eq_n | `(N=4, TILE_N=4) TILE_N == N (no masked row)` | 6 | 6 | ok |  |" in out
    assert "| seed_row_loop | `(N=4, TILE_N=8) per-row loop` | 6 | 6 | ok |  |" in out
    assert "| seed_1d_mask | `(N=4, TILE_N=8) 1-D mask / inner-axis mask only` | 6 | 6 | ok |  |" in out
    n = len(battery.PROBES)
    assert (
        f"{n} probes: {n - 1 - len(ROW_LOAD_PROBES)} passed, {len(ROW_LOAD_PROBES)} failed, 0 errors, 1 skipped" in out
    )
    assert any(line.startswith(f"- {LABEL} (known on iluvatar; probes: seed_masked_load,") for line in out)


# -- the suite in a lane: the summary names the compiler defect ------------------------------------


def test_suite_on_the_emulated_lane_names_the_defect_in_the_summary(pytester, run_subprocess):
    xml = pytester.path / "probes.xml"
    result = run_subprocess(
        str(ROOT / "contracts" / "probes" / "test_compiler.py"),
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        f"--junitxml={xml}",
    )
    result.assert_outcomes(
        failed=len(ROW_LOAD_PROBES), passed=len(battery.PROBES) - len(ROW_LOAD_PROBES) - 1, skipped=1
    )
    failing = len(ROW_LOAD_PROBES)
    result.stdout.fnmatch_lines([f"failing contracts of {LABEL}: {failing} (*)"])  # the plugin's summary
    result.stdout.fnmatch_lines(["*fl-contract compiler probes*", "seed_masked_load *28 *6 *FAIL *masked_2d_row_load"])
    counts = junit.count(junit.read(xml), "compiler_probes")
    assert counts.summary.failures == {LABEL: {p: 1 for p in ROW_LOAD_PROBES}}
    assert (
        f"- {md_code(LABEL)}: {failing} (argmax_partial_rows 1, dot_k_tail 1, load_mask_other 1, load_row_mask 1, "
        "max_partial_rows 1, scan_rows_carry 1, seed_masked_load 1, seed_where_row 1)"
        in counts.summary.markdown("compiler_probes")
    )


def test_every_lane_runs_the_probes_and_iluvatar_lanes_expect_them_to_fail():
    manifest = load(ROOT / "ci" / "manifest.yaml", REGISTRY)
    for lane in manifest.lanes.values():
        steps = {s.name: s for s in lane.steps}
        assert "compiler_probes" in steps, lane.name
        assert steps["compiler_probes"].suites == ("probes",)
        known = REGISTRY.get(lane.platform).defect(ROW_LOAD) is not None
        injected = "--fl-inject" in lane.pytest_args  # a compiler defect the emulator adds: its probe fails
        assert steps["compiler_probes"].expect == ("fail" if known or injected else "pass"), lane.name


def test_the_wheel_lists_every_package():
    """setuptools' explicit package list decides what the wheel carries: a suite or a library
    package missing from it would be absent on every vendor lane (pytest_fl_contract.triage was:
    an installed fl-contract stopped at its import on the H100, the editable checkout hid it)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        "pytest_fl_contract." + ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "contracts").rglob("__init__.py")
    }
    on_disk |= {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "pytest_fl_contract").rglob("__init__.py")}
    assert {"pytest_fl_contract.contracts.probes", "pytest_fl_contract.triage"} <= on_disk
    assert sorted(on_disk - listed) == []
