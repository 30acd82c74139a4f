"""Triage (issue 60): reproductions, groups by cause, order and isolation, drafts.

The scripts are run as a lane engineer runs them - standalone, in a fresh interpreter - and
must exit 1 while the defect is there and 0 once it is gone: a fake ``flag_gems`` package
(one function, broken or not by an environment variable) stands in for FlagGems where the
subject is the script and the recorder, the emulator with the injected defect where the
subject is the emulated lane.  Grouping is checked on a committed H200 report (a hardware
lane's failures and a FlagGems defect it registers) and on an emulated lane's rows; order
and isolation on a planted suite (an order-dependent pair, a flaky case, a case that fails
alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_fl_contract.results import causes as groups
from pytest_fl_contract.results.cases import Row, read_one
from pytest_fl_contract.triage import drafts, order, script
from pytest_fl_contract.triage.rerun import Runner, ident, lane_options, nodeid

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "tests" / "data" / "triage" / "h200-tensorops-fg502.xml"

FAKE_FLAG_GEMS = {
    "flag_gems/__init__.py": "from .ops.fake import sum_dim\n_FULL_CONFIG = (('sum.dim_IntList', sum_dim),)\n",
    "flag_gems/ops/__init__.py": "",
    "flag_gems/ops/fake.py": textwrap.dedent("""\
        import os


        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            '''torch's sum, plus one past the first row where FAKE_BROKEN is set (a row read twice).'''
            out = inp.sum(dim, keepdim=keepdim)
            if os.environ.get("FAKE_BROKEN"):
                out = out + 1.0
            return out
        """),
}


def fake_flag_gems(where: Path) -> Path:
    for name, text in FAKE_FLAG_GEMS.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


def run_script(path: Path, site: Path, *args: str, broken: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("FAKE_BROKEN", None)
    if broken:
        env["FAKE_BROKEN"] = "1"
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, env=env, cwd=str(path.parent), timeout=300
    )


def test_script_replays_the_calls_bit_for_bit_and_exits_by_the_defect(tmp_path, monkeypatch):
    """A strided view of a larger storage (a layout contract's input) is rebuilt exactly and an
    input past the inline limit is read from beside the script; each call runs against
    torch's float64 aten op and the exit code is the verdict: 1 while the defect is there, 0
    once it is gone, 2 - never 1 - when the script cannot run (a saved input that does not
    match its digest)."""
    import torch

    monkeypatch.setattr(script, "INLINE_BYTES", 512)
    site = fake_flag_gems(tmp_path / "site")
    base = torch.randn(7, 9, generator=torch.Generator().manual_seed(3))
    view = base.t()[2:, 1:]  # not contiguous, offset into its storage
    small, _ = script.tensor_record("t0", view)
    assert small.inline and small.offset == view.storage_offset() and small.stride == view.stride()
    large, data = script.tensor_record("t1", torch.arange(600.0).reshape(60, 10))
    assert not large.inline and large.data == ""
    calls = (
        script.Call(
            "flag_gems.ops.fake",
            "sum_dim",
            "sum.dim_IntList",
            (script.encode(view, lambda t: "t0"), {"list": [1]}),
            (("keepdim", False),),
            1e-6,
            1e-5,
        ),
        script.Call(
            "flag_gems.ops.fake", "sum_dim", "sum.dim_IntList", ({"tensor": "t1"}, {"list": [0]}), (), 1e-6, 1e-5
        ),
    )
    repro = script.Repro(
        key="m::t[x]",
        lane="lane",
        platform="cpu",
        device="cpu",
        failure="AssertionError: off",
        versions={"torch": torch.__version__},
        calls=calls,
        tensors=(small, large),
    )
    path = tmp_path / "repro.py"
    path.write_text(script.render(repro, path.name))
    for name, blob in script.sidecars(repro, {"t1": data}, path.name).items():
        (tmp_path / name).write_bytes(blob)
    broken = run_script(path, site, "--lane", "device", broken=True)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "| sum_dim(t0, [1], keepdim=False) |" in broken.stdout and "WRONG" in broken.stdout
    fixed = run_script(path, site, broken=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "every call holds" in fixed.stdout
    sidecar = tmp_path / script.sidecar_name(path.name, large)
    sidecar.write_bytes(__import__("zlib").compress(b"\0" * large.nbytes))  # other bytes: refused, never used
    done = run_script(path, site, broken=True)
    assert done.returncode == 2 and "do not match their digest" in done.stderr  # not 1: that says "defect"


def test_unrecordable_arguments_are_refused():
    with pytest.raises(script.Unrecordable):
        script.encode(object(), lambda t: "t0")


PLANTED_CAPTURE = """
import flag_gems
import torch


def test_sum_rows():
    x = torch.arange(12.0).reshape(3, 4)
    got = flag_gems.ops.fake.sum_dim(x, [0])
    assert torch.equal(got, x.sum(0))


def test_no_flag_gems_call():
    assert False, "nothing of FlagGems ran"
"""


def test_recorder_writes_a_script_from_the_call_the_case_made(pytester, tmp_path):
    """The recorder (``-p pytest_fl_contract.triage.capture``) sees the FlagGems call a
    failing case made, whatever the test is, and its script fails standalone the same way;
    a case that made no FlagGems call gets no script and says why."""
    site = fake_flag_gems(tmp_path / "site")
    pytester.makepyfile(test_planted=PLANTED_CAPTURE)
    out = tmp_path / "out"
    out.mkdir()
    pytester._monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT)]))
    pytester._monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester._monkeypatch.setenv("FL_TRIAGE_OUT", str(out))
    pytester._monkeypatch.setenv("FAKE_BROKEN", "1")
    pytester.runpytest_subprocess("-p", "pytest_fl_contract.triage.capture", "-p", "no:cacheprovider", timeout=300)
    lines = {json.loads(ln)["key"]: json.loads(ln) for ln in (out / "captured.jsonl").read_text().splitlines()}
    assert set(lines) == {"test_planted::test_sum_rows", "test_planted::test_no_flag_gems_call"}
    assert "made no FlagGems call" in lines["test_planted::test_no_flag_gems_call"]["why"]
    entry = lines["test_planted::test_sum_rows"]
    assert entry["calls"] == ["sum_dim(t0, [0])"]
    done = run_script(Path(entry["script"]), site, broken=True)
    assert done.returncode == 1 and "| sum_dim(t0, [0]) |" in done.stdout, done.stdout + done.stderr


def _rows(spec: list[tuple[str, str, str | None, str]]) -> list[Row]:
    return [
        Row(
            "lane",
            "op_contracts",
            f"op_contracts/{key}",
            outcome,
            op,
            key.split("::")[0].split(".")[-1][5:],
            None,
            None,
            message,
        )
        for key, outcome, op, message in spec
    ]


def test_an_emulated_lane_comes_out_as_its_compiler_defect_and_what_else_broke():
    """The injected compiler defect's reduction ops failing their assertions are one group
    (probe-implicated: the probes that failed for it are named), the probe cases themselves
    another (the standalone evidence); a TypeError of a reached op is not lumped in."""
    from pytest_fl_contract.config.platforms import load_registry

    lane = groups.lane_of(
        {"fl_platform": "iluvatar", "fl_emulated": "iluvatar-small; defects: masked_2d_row_load"},
        load_registry(entry_points=False),
    )
    assert "sum" in lane.compiler["masked_2d_row_load"] and lane.injected == ("masked_2d_row_load",)
    rows = _rows(
        [
            (
                "reductions.test_accuracy::test_accuracy[sum-3x5x4-d1-float32]",
                "failed",
                "sum",
                "AssertionError: Tensor-likes are not close! Mismatched elements: 12 / 12",
            ),
            ("reductions.test_dims::test_dims[softmax-3x5x4-d1]", "failed", "softmax", "Tensor-likes are not close!"),
            ("reductions.test_dims::test_dims[sum-3x5x4-d0]", "failed", "sum", "TypeError: sum_dim() got 'dim'"),
            (
                "probes.test_compiler::test_probe[load_row_mask]",
                "failed",
                None,
                "AssertionError: 2-D mask: result 28, expected 6 - evidence for compiler: masked_2d_row_load; affects sum",
            ),
            ("reductions.test_accuracy::test_accuracy[sum-3x4-d1-float32]", "passed", "sum", ""),
        ]
    )
    found = groups.group(rows, lane)
    first = found[0]
    assert first.signature.cause == "compiler:masked_2d_row_load" and first.signature.family == "reductions"
    assert first.size == 2 and dict(first.ops) == {"sum": 1, "softmax": 1}
    assert first.probes == ("op_contracts/probes.test_compiler::test_probe[load_row_mask]",)
    assert "probes failed" in first.evidence and "injected" in first.evidence
    rest = {(g.signature.cause, g.signature.error, g.size) for g in found[1:]}
    assert rest == {("compiler:masked_2d_row_load", "AssertionError", 1), ("failure", "TypeError", 1)}


def test_a_hardware_lane_groups_by_cause_across_contracts_and_drafts_the_registered_defect():
    """The committed H200 report (tensorops, FlagGems 5.0.2): the mm cases out of shared
    memory in eight contracts are one group (the one a strict xfail's mismatch hides
    included), bmm's empty-input error another; with ``registered`` the FlagGems defect the
    lane registers (argmax_tile_not_pow2) is a group whose draft says where it is registered."""
    from pytest_fl_contract.config.platforms import load_registry

    report = read_one(H200)
    registry = load_registry(entry_points=False)
    lane = groups.lane_of(report.properties, registry)
    found = groups.group(report.rows, lane)
    sizes = {(g.signature.error, dict(g.ops).get("mm", 0) + dict(g.ops).get("bmm", 0)): g.size for g in found}
    assert sizes == {("OutOfResources", 15): 15, ("ValueError", 2): 2}
    assert len(dict(found[0].contracts)) == 8
    with_known = groups.group(report.rows, lane, registered=True)
    known = next(g for g in with_known if g.signature.whose == "flag_gems")
    assert known.signature.defect == "argmax_tile_not_pow2" and dict(known.ops) == {"argmax": 2}
    text = drafts.render(
        known, drafts.Evidence(), lane=report.lane, report=report.path, properties=report.properties, registry=registry
    )
    for needed in (
        "**Draft - not filed.**",
        "## Reproduction",
        "## Versions and device",
        "| flag_gems | 5.0.2 |",
        "NVIDIA H200",
        "Registered: `argmax_tile_not_pow2`",
        "## Workaround",
    ):
        assert needed in text
    md = "\n".join(groups.markdown(found))
    assert "**17 failing cases in 2 groups**" in md


def test_triage_command_writes_groups_and_drafts_and_refuses_bad_input(tmp_path, capsys):
    from pytest_fl_contract.cli import main

    assert main(["triage", str(H200), "--out", str(tmp_path), "--no-repro"]) == 0
    data = json.loads((tmp_path / "groups.json").read_text())
    assert [g["size"] for g in data["groups"]] == [15, 2]
    assert all((tmp_path / g["draft"]).is_file() for g in data["groups"])
    assert "failures by cause" in (tmp_path / "groups.md").read_text()
    capsys.readouterr()
    assert main(["triage", str(tmp_path / "missing.xml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such report" in err


def test_lane_options_and_node_ids():
    props = {
        "fl_platform": "iluvatar",
        "fl_emulated": "iluvatar-small; defects: masked_2d_row_load",
        "fl_workaround": "off",
        "fl_sweep": "quick",
        "fl_autotune": "rotate",
    }
    assert lane_options(props) == [
        "--fl-platform",
        "iluvatar",
        "--fl-emulate",
        "--fl-profile",
        "iluvatar-small",
        "--fl-inject",
        "masked_2d_row_load",
        "--fl-no-workaround",
        "--fl-sweep",
        "quick",
    ]
    assert ident("op_contracts/reductions.test_a::test_a[x/y]") == "reductions.test_a::test_a[x/y]"
    from pytest_fl_contract.config.suites import root

    assert (
        nodeid("reductions.test_accuracy::test_accuracy[sum-3x5-d1-float32]", root())
        == "reductions/test_accuracy.py::test_accuracy[sum-3x5-d1-float32]"
    )


PLANTED_ORDER = """
import os
from pathlib import Path

STATE = []


def test_a_leaves_state():
    STATE.append("left")


def test_b_needs_clean_state():
    assert not STATE, "state left by an earlier test"


def test_c_flaky():
    marker = Path(os.environ["FLAKY_DIR"]) / "ran"
    first = not marker.exists()
    marker.touch()
    assert not first, "fails the first time only"


def test_d_broken():
    assert 1 == 2
"""


def test_order_dependent_pair_flaky_case_and_own_failure_are_told_apart(pytester, tmp_path):
    """A planted suite: b fails after a (module state), c fails once, d always.  Each failing
    case re-run alone in a fresh process, then after the cases before it: d 'alone', b
    'order' naming a, c 'flaky'."""
    pytester.makepyfile(test_planted=PLANTED_ORDER)
    env = {"FLAKY_DIR": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)
    junit = tmp_path / "lane.xml"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}", timeout=300)
    report = read_one(junit)
    failing = [ident(r.key) for r in report.rows if r.failing]
    assert failing == [
        "test_planted::test_b_needs_clean_state",
        "test_planted::test_c_flaky",
        "test_planted::test_d_broken",
    ]
    runner = Runner(pytester.path, env=env, timeout=300)
    found = {
        f.key.split("::")[1]: f for f in order.classify_all(failing, [ident(r.key) for r in report.rows], runner.run)
    }
    assert found["test_b_needs_clean_state"].kind == "order"
    assert found["test_b_needs_clean_state"].after == ("test_planted::test_a_leaves_state",)
    assert found["test_c_flaky"].kind == "flaky"
    assert found["test_d_broken"].kind == "alone"
    # the same through the command: each group's draft says what its cases are
    from pytest_fl_contract.cli import main

    out = tmp_path / "triage"
    assert (
        main(["triage", str(junit), "--root", str(pytester.path), "--out", str(out), "--no-repro", "--isolate", "3"])
        == 0
    )
    findings = [f for g in json.loads((out / "groups.json").read_text())["groups"] for f in g["findings"]]
    assert (
        "test_planted::test_b_needs_clean_state: passes alone, fails after test_planted::test_a_leaves_state "
        "(order-dependent)" in findings
    )
    assert "test_planted::test_c_flaky: passes alone and after the cases before it (flaky)" in findings
    assert "test_planted::test_d_broken: fails alone in a fresh process" in findings


def test_classification_from_a_table_of_outcomes():
    """The halving names the one earlier case that breaks a later one out of many; a case
    whose re-run says nothing is 'unknown', never a pass."""
    culprit = "m::t7"

    def run(keys):
        last = keys[-1]
        if last == "m::x":
            return {}
        return {last: "failed" if culprit in keys[:-1] or last == "m::own" else "passed"}

    before = [f"m::t{i}" for i in range(20)]
    assert order.classify("m::late", before, run).after == (culprit,)
    assert order.classify("m::own", before, run).kind == "alone"
    assert order.classify("m::x", before, run).kind == "unknown"
    assert order.classify("m::late", [], run).kind == "flaky"


def test_emulated_lane_case_reproduces_standalone_and_passes_on_the_cpu_lane(tmp_path, capsys):
    """``fl-contract repro`` on a case of the emulated Iluvatar lane without the workaround:
    the script it writes fails standalone under the emulator with the defect injected (exit
    1, the seed's table) and holds on the plain CPU lane (exit 0)."""
    from pytest_fl_contract.cli import main

    key = "reductions.test_accuracy::test_accuracy[sum-1x5x64-d1-float32]"
    code = main(
        [
            "repro",
            key,
            "--out",
            str(tmp_path),
            "--verify",
            "--",
            "--fl-platform",
            "iluvatar",
            "--fl-emulate",
            "--fl-no-workaround",
        ]
    )
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(f"| {key} |"))
    assert code == 0 and row.endswith("| 1 | 0 |"), out
    written = Path(row.split(" | ")[1])
    text = written.read_text()
    assert "masked_2d_row_load" in text and "import pytest" not in text and "pytest_fl_contract.plugin" not in text
    assert "sum_dim(t0, [1]" in text


def test_the_lane_summary_lists_groups_not_cases(tmp_path):
    """What ``fl-contract run`` appends to a lane's Markdown summary: the groups; a report it
    cannot read is one line that decides nothing; a lane with no failure adds nothing."""
    text = groups.lane_summary(str(H200), "h200")
    assert "#### Failures by cause" in text and "**17 failing cases in 2 groups**" in text
    assert "test_accuracy[mm-13x19x17-float32]" not in text  # groups, not cases
    assert groups.lane_summary(str(tmp_path / "none.xml"), "x").strip().startswith("**failures by cause:")
    green = tmp_path / "green.xml"
    green.write_text(
        '<testsuites><testsuite name="pytest" tests="1"><testcase classname="m" name="t"/></testsuite></testsuites>'
    )
    assert groups.lane_summary(str(green), "green") == ""


def test_groups_page_links_each_group_to_its_script_and_draft():
    report = read_one(H200)
    found = groups.group(report.rows, groups.Lane({}))
    html = groups.page("h200", report.path, found, {found[0].ident: ("repro/a b.py", "drafts/x.md")})
    assert 'href="repro/a%20b.py"' in html and 'href="drafts/x.md"' in html
    assert html.count("<tr data-group=") == 2


def test_probe_packet_is_the_battery_with_nothing_of_ours_but_the_emulator(tmp_path):
    """The packet's battery is the project's with its one import of ours written in; its
    runner imports the emulator module only on an emulated lane, nothing of ours on a device."""
    from pytest_fl_contract.triage import probes

    emulated = probes.packet(
        tmp_path / "emu",
        "masked_2d_row_load",
        "row half dropped",
        "lane",
        "cuda",
        ("iluvatar-small", ("masked_2d_row_load",)),
        "nvidia-small",
    )
    device = probes.packet(tmp_path / "dev", "masked_2d_row_load", "row half dropped", "lane", "cuda", None, None)
    battery = (emulated.parent / "probes_battery.py").read_text()
    assert "import pytest_fl_contract" not in battery and "from pytest_fl_contract" not in battery
    assert "GRID_LIMITS = " in battery
    for runner in (emulated, device):
        compile(runner.read_text(), str(runner), "exec")
        compile(battery, "probes_battery.py", "exec")
    assert "pytest_fl_contract.emulation.interpreter import bring_up" in emulated.read_text()
    assert "LANES = {'device': None}" in device.read_text() and "DEVICE = 'cuda'" in device.read_text()


def test_a_case_failing_on_the_twin_lane_too_is_not_the_compiler_defect():
    """With the twin lane's report (the plain CPU lane, no defect), a reached op's case that
    fails there as well is grouped by its own failure, not under the injected defect."""
    from pytest_fl_contract.config.platforms import load_registry

    lane = groups.lane_of(
        {"fl_platform": "iluvatar", "fl_emulated": "iluvatar-small; defects: masked_2d_row_load"},
        load_registry(entry_points=False),
    )
    rows = _rows(
        [
            ("reductions.test_dims::test_dims[sum-3x5x4-d1]", "failed", "sum", "AssertionError: off by 3"),
            ("reductions.test_out::test_out[sum]", "failed", "sum", "AssertionError: out= dtype int32"),
        ]
    )
    twin = [Row("cpu", "op_contracts", "op_contracts/reductions.test_out::test_out[sum]", "failed", "sum")]
    causes = {g.keys[0].rsplit("::", 1)[1]: g.signature.cause for g in groups.group(rows, lane, twin=twin)}
    assert causes == {"test_dims[sum-3x5x4-d1]": "compiler:masked_2d_row_load", "test_out[sum]": "failure"}


def test_the_lane_page_links_each_group_to_its_reproduction_and_draft(tmp_path, capsys):
    """fl-contract html --triage DIR: the lane's page lists its failures by cause, each group
    linked (relative to the page) to its script and draft; a triage of another report is shown
    stale, unlinked; a directory that is no triage, or of a lane not given, is one line."""
    import shutil

    from pytest_fl_contract.cli import main

    report = tmp_path / "h200.xml"
    shutil.copy(H200, report)
    triage = tmp_path / "triage"
    assert main(["triage", str(report), "--out", str(triage), "--no-repro"]) == 0
    out = tmp_path / "html"
    assert main(["html", str(report), "--out", str(out), "--triage", str(triage)]) == 0
    page = next(out.glob("*.html")).read_text()
    assert 'id="causes-title"' in page and 'id="causes-stale"' not in page
    data = json.loads((triage / "groups.json").read_text())
    for g in data["groups"]:
        assert f'href="../triage/{g["draft"]}"' in page, g["draft"]
        assert (out / ".." / "triage" / g["draft"]).is_file()
    assert page.count("<tr data-group=") == len(data["groups"]) == 2

    other = tmp_path / "again" / "h200.xml"  # the same lane, another run's report
    other.parent.mkdir()
    shutil.copy(H200, other)
    assert main(["html", str(other), "--out", str(tmp_path / "html2"), "--triage", str(triage)]) == 0
    stale = next((tmp_path / "html2").glob("*.html")).read_text()
    assert 'id="causes-stale"' in stale and "<tr data-group=" not in stale

    capsys.readouterr()
    assert main(["html", str(report), "--out", str(out), "--triage", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run fl-contract triage" in err
