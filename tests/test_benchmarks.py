"""The lane timeline (benchmarks/lane_timeline.py): what the GPU lane's wall time is read from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_the_timeline_names_each_workers_start_and_cases(pytester: pytest.Pytester, monkeypatch, capsys) -> None:
    pytester.makepyfile(
        test_some="""
        import time, pytest
        @pytest.mark.parametrize("i", range(6))
        def test_case(i):
            time.sleep(0.3 if i == 5 else 0.01)
    """
    )
    folder = pytester.path / "timeline"
    monkeypatch.setenv("FL_TIMELINE", str(folder))
    monkeypatch.setenv("PYTHONPATH", f"{BENCHMARKS}")
    result = pytester.runpytest_subprocess("-p", "lane_timeline", "-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=6)
    assert sorted(p.name for p in folder.iterdir()) == ["controller.jsonl", "gw0.jsonl", "gw1.jsonl"]
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import lane_timeline

    assert lane_timeline.report(folder, top=1) == 0
    out = capsys.readouterr().out
    assert "2 workers" in out and "gw0" in out and "gw1" in out
    longest = out.split("longest cases of the run:")[1]
    assert "test_case[5]" in longest and "0.3" in longest  # the one slow case, timed


def test_no_controller_log_is_one_line_and_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import lane_timeline

    assert lane_timeline.report(tmp_path) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert sys.modules["lane_timeline"].IMPORTED > 0


def test_the_real_model_table_is_non_inner_calls_with_their_sources(monkeypatch) -> None:
    """Issue 32's table: at least 40 cases of sum, mean and softmax in fp32, bf16 and fp16, each
    over a non-inner dim (an inner one never reaches the workaround) and naming its source."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_reductions
    import real_models

    specs = real_models.cases()
    assert len(specs) >= 40 and len(set(specs)) == len(specs)
    for op, shape, dim, source in real_models.MODELS:
        assert op in ("sum", "mean", "softmax") and ("/" in source or source.startswith("the same")), (
            op,
            shape,
            source,
        )
        assert dim % len(shape) != len(shape) - 1, (op, shape, dim)
    assert {bench_reductions.parse(s)[3] for s in specs} == {"float32", "bfloat16", "float16"}


def test_a_sweep_in_parts_takes_the_same_list(monkeypatch) -> None:
    """``bench_reductions.py --cases FROM:TO``: a long sweep over several device calls."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_reductions

    assert bench_reductions.case_range("", 200) == range(200)
    assert bench_reductions.case_range("199:200", 200) == range(199, 200)
    assert bench_reductions.case_range("150:", 200) == range(150, 200)
    assert bench_reductions.case_range(":300", 200) == range(200)
    for bad in ("12", "a:b", "1.5:"):
        with pytest.raises(SystemExit, match="FROM:TO"):
            bench_reductions.case_range(bad, 200)


def test_plan_grid_takes_tile_sizes_it_can_launch(monkeypatch) -> None:
    import argparse

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plan_grid

    assert plan_grid.tile_sizes("1024,2048,8192") == (1024, 2048, 8192)
    for bad in ("", "abc", "1000", "16384", "0", "1024,,2048"):
        with pytest.raises(argparse.ArgumentTypeError, match="powers of two"):
            plan_grid.tile_sizes(bad)


def _row(op: str, shape: list[int], fast: float, native: float, loop: float = 1.0) -> dict:
    return {
        "op": op,
        "shape": shape,
        "dim": 1,
        "dtype": "float32",
        "bytes": 4 * shape[0] * shape[1],
        "fast": fast,
        "native": native,
        "loop_fast": loop,
        "loop_native": 1.0,
        "fast_copy_share": 0.5,
        "error": 0.0,
    }


def test_merged_sweeps_replace_rows_in_place_and_summarise(tmp_path: Path, monkeypatch, capsys) -> None:
    """A later run's rows take the places of the base's cases (same op, shape, dim, dtype);
    its rows the base never had are not added; the summary is the sweep's own."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import merge_sweeps

    base = [_row("sum", [2, 3], 1.0, 1.0, 3.0), _row("mean", [2, 3], 2.0, 1.0, 1.0)]
    later = [_row("sum", [2, 3], 0.5, 1.0, 0.5), _row("sum", [9, 9], 9.0, 1.0, 9.0)]
    rows, replaced = merge_sweeps.merge(base, later)
    assert replaced == 1 and len(rows) == 2 and rows[0]["fast"] == 0.5 and rows[1] is base[1]
    paths = []
    for name, data in (("base", base), ("later", later)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(__import__("json").dumps({"rows": data}))
    assert merge_sweeps.main([*map(str, paths), "--json", str(tmp_path / "merged.json")]) == 0
    out = capsys.readouterr().out
    assert "2 cases, 1 re-measured" in out and "worst 2.00x" in out and "worst 1.00x, 0 over 1.10x" in out
    assert (tmp_path / "merged.json").exists()


def test_current_picks_replace_only_with_rows_that_ran_the_models_plan(tmp_path: Path, monkeypatch, capsys) -> None:
    """An A/B run's two arms as replacements: only the arm whose plan the tile model picks now
    takes a base row's place; a file without its device is one line and exit 2."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import merge_sweeps

    from pytest_fl_contract.workarounds import tilemodel as tm

    model = "NVIDIA H200: 132 SMs, 4.81 TB/s (read from torch.cuda)"
    shape = [2, 135, 132578]
    now = vars(tm.pick(2, 135, 132578, tm.Device(132, 4.81e12, model), 4, "softmax"))
    other = {**now, "block_r": 4, "block_k": 256}
    base = [dict(_row("softmax", shape, 1.0, 1.0, 1.3), plan=other)]
    arms = {
        "narrow": [dict(_row("softmax", shape, 1.0, 1.0, 0.9), plan=now)],
        "wide": [dict(_row("softmax", shape, 1.0, 1.0, 1.25), plan=other)],
    }
    paths = [tmp_path / "base.json"]
    paths[0].write_text(json.dumps({"device_model": model, "rows": base}))
    for name, rows in arms.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({"device_model": model, "rows": rows}))
    out_json = tmp_path / "merged.json"
    assert merge_sweeps.main([*map(str, paths), "--current-picks", "--json", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["rows"][0]["loop_fast"] == 0.9
    assert "1 re-measured" in capsys.readouterr().out
    assert merge_sweeps.main([*map(str, paths), "--json", str(out_json)]) == 0  # without it, the last arm wins
    assert json.loads(out_json.read_text())["rows"][0]["loop_fast"] == 1.25
    paths[1].write_text(json.dumps({"rows": arms["narrow"]}))
    capsys.readouterr()
    assert merge_sweeps.main([*map(str, paths), "--current-picks"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("merge_sweeps: --current-picks")


def test_model_check_picks_among_the_timed_plans_and_weighs_the_narrow_rule(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The model's pick among a grid's timed plans over the fastest; ``--wide-blocks`` lets
    the wide block the narrow rule keeps out back in; an unreadable grid is one line, exit 2."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import model_check

    from pytest_fl_contract.workarounds import tilemodel as tm

    monkeypatch.setattr(tm, "NARROW", dict(tm.NARROW))  # --wide-blocks rebinds it
    plans = [
        ({"block_r": 4, "block_k": 256, "warps": 4, "splits": 1, "flat": False}, 0.180),
        ({"block_r": 16, "block_k": 64, "warps": 4, "splits": 1, "flat": False}, 0.138),
        ({"block_r": 1, "block_k": 1024, "warps": 4, "splits": 1, "flat": False}, 0.400),
    ]
    grid = {
        "device_model": "NVIDIA H200: 132 SMs, 4.81 TB/s (read from torch.cuda)",
        "rows": [
            {
                "op": "softmax",
                "shape": [2, 135, 132578],
                "dim": 1,
                "dtype": "float32",
                "plans": [{"plan": p, "ms": ms, "loop_ms": ms} for p, ms in plans],
            }
        ],
    }
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    assert model_check.main([str(path)]) == 0
    assert "median 1.000" in capsys.readouterr().out
    assert model_check.main([str(path), "--wide-blocks"]) == 0
    assert "median 1.304" in capsys.readouterr().out  # the model alone prices 4 x 256 lowest
    path.write_text("{}")
    assert model_check.main([str(path)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("model_check: cannot read")


@pytest.mark.parametrize("content", ["", "{}", '{"rows": []}', '{"rows": [1]}', "[]"])
def test_a_file_that_is_not_a_sweep_is_one_line_and_exit_2(tmp_path: Path, monkeypatch, capsys, content) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import merge_sweeps

    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert merge_sweeps.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("merge_sweeps: cannot read")


def test_target_bands_group_the_misses_by_plan_family_and_price_the_correct_alternatives(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """A case over 1.10x back to back lands in its plan family's band, host- or GPU-bound by
    native's back-to-back time; ``vs correct`` is fast over the faster of torch and the moved
    axis; copy shares over 64 MB are the fast path's and native's (same bytes, its time)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import target_bands

    split = {
        **_row("sum", [4, 9000], 2.0, 1.0, 0.2),
        "plan": {"block_r": 8, "block_k": 8, "splits": 4, "flat": False},
        "loop_native": 0.1,
        "torch": 4.0,
        "moved": 1.0,
    }  # 2.0x back to back, GPU-bound (100 us); moved 1.0 ms
    slab = {
        **_row("softmax", [3, 900], 1.0, 1.0, 0.012),
        "plan": {"block": 1024, "splits": 1},
        "loop_native": 0.010,
        "torch": 0.5,
    }  # 1.2x, host-bound (10 us); only torch timed
    fine = {**_row("mean", [2, 3], 1.0, 1.0, 1.0), "plan": {"block_r": 1, "block_k": 4, "splits": 1, "flat": True}}
    big = {**_row("sum", [4096, 8192], 1.0, 2.0, 0.5), "fast_copy_share": 0.9}  # native at half the speed: 45%
    lines = target_bands.worst_bands([split, slab, fine])
    assert lines[0].startswith("2 of 3 cases over 1.10x")
    assert any(
        line.startswith("| sum/mean, tiles, split (GPU-bound) | 1 | 2.00x, 2.00x | 100 - 100 | 2.00x, 2.00x (1) |")
        for line in lines
    ), lines
    assert any(
        line.startswith("| softmax, slab, one launch (host-bound) | 1 | 1.20x") and "2.00x, 2.00x (1)" in line
        for line in lines
    ), lines
    shares = target_bands.share_bands([big])
    assert "| float32 | 1 | 90% | 1 | 45% | 0 |" in shares
    path = tmp_path / "run.json"
    path.write_text(__import__("json").dumps({"rows": [split, slab, fine, big]}))
    assert target_bands.main([str(path), "--title", "run"]) == 0
    assert "### run" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["", "{}", '{"rows": []}', '{"rows": [1]}', '{"rows": [{"op": "sum"}]}', "[]"])
def test_target_bands_refuse_what_is_not_a_sweep_in_one_line(tmp_path: Path, monkeypatch, capsys, content) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import target_bands

    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert target_bands.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("target_bands: ")


def test_kernel_resources_reads_load_widths_and_residency(tmp_path: Path, monkeypatch, capsys) -> None:
    """The static profile's arithmetic (benchmarks/kernel_resources.py; the compile itself is
    tests/test_fastpath_compiles.py's): SASS load widths, sm_90 residency, sweep rows."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import kernel_resources as kr

    assert [
        kr.load_width(op) for op in ("LDG.E.128", "LDG.E.U16", "LDG.E", "LDG.E.64.CONSTANT", "LDG.E.EL.128", "LDG.E.S8")
    ] == [16, 2, 4, 8, 16, 1]
    assert kr.resident(32, 4, 0) == (16, "warps")  # 64 warps an SM: four-warp programs, 16 of them
    assert kr.resident(56, 4, 1024) == (9, "registers")  # 56 -> 1792 a warp: 65536 // 7168
    assert kr.resident(40, 4, 100 * 1024) == (2, "shared")
    sweep = tmp_path / "sweep.json"
    row = {
        "op": "sum",
        "shape": [4, 5000, 9000],
        "dim": 1,
        "dtype": "float16",
        "plan": {"block": 2048, "splits": 2},
        "bytes": 4 * 5000 * 9000 * 2,
        "fast_copy_share": 0.5,
    }
    small = dict(row, shape=[2, 3, 4], bytes=48)
    sweep.write_text(json.dumps({"rows": [row, row, small]}))
    [(spec, plan, share)] = kr.measured_cases([str(sweep)], 64)
    assert spec == "sum:4x5000x9000:1:float16" and share == 0.5 and type(plan).__name__ == "SlabPlan"
    rows = [
        {"case": "sum:1x2x3:1:float16", "share": s, "sites": [{"in_flight_kb": kb}]}
        for s, kb in ((0.4, 20), (0.6, 30), (0.8, 30))
    ]
    assert "| float16 | 24 - 40 | 2 | 70% |" in kr.bands(rows) and "| float16 | 16 - 24 | 1 | 40% |" in kr.bands(rows)
    (tmp_path / "bad.json").write_text('{"rows": [{"op": "sum"}]}')
    monkeypatch.setattr(sys, "argv", ["kernel_resources.py", "--measured", str(tmp_path / "bad.json")])
    with pytest.raises(SystemExit) as exit_:
        kr.main()
    assert exit_.value.code == 2 and "not a bench_reductions.py run" in capsys.readouterr().err


def test_ncu_summary_reads_the_committed_counters_one_line_a_launch(monkeypatch, capsys) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ncu_summary

    path = BENCHMARKS / "results" / "h200-ncu-2026-12-05.csv.gz"
    launches = ncu_summary.launches(path)
    assert len(launches) == 28  # six cases, the fast path's and native's launches, twice each
    first = launches[0]
    assert first["kernel"] == "fl_reduce_rows_kernel" and first["grid"] == "(3759,1,1)"
    assert float(first["DRAM Throughput"]) == pytest.approx(62.53)
    assert ncu_summary.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 29 and lines[1].split()[2] == "62.2"  # ns to us


@pytest.mark.parametrize("content", ["", "garbage\n", '"a","b"\n"1","2"\n'])
def test_ncu_summary_refuses_what_is_not_ncu_csv_in_one_line(tmp_path: Path, monkeypatch, capsys, content) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ncu_summary

    bad = tmp_path / "ncu.csv"
    bad.write_text(content)
    assert ncu_summary.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ncu_summary:")
