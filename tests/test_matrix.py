"""`fl-contract matrix` (the manifest's lanes as GitHub / GitLab jobs) and `fl-contract merge`
(their reports back into one): the shipped manifest, an imported torch_fl config, refusals
in one line, and the GitLab pipeline checked against check-jsonschema's vendored schema."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.lanes import verdict
from pytest_fl_contract.lanes.manifest import load
from pytest_fl_contract.lanes.matrix import budget_minutes
from pytest_fl_contract.reporting import junit

from .conftest import ROOT
from .hostile import assert_valid_junit, cli, one_line
from .test_migrate import ILUVATAR

MANIFEST = ROOT / "ci" / "manifest.yaml"
BIN = Path(sys.executable).parent
CPU_LANES = [
    "cpu",
    "iluvatar-emulated",
    "nvidia-hopper-emulated",
    "cpu-tuning-miscompiled",
    "iluvatar-emulated-noworkaround",
    "cpu-fg54",
    "iluvatar-emulated-fg54",
    "iluvatar-emulated-noworkaround-fg54",
    "flaggems-suite-502-fg54",
    "flaggems-suite-fg54",
]


def tool(name: str) -> str:
    """A checker from the `test` extra, next to this interpreter (never skipped: CI must run it)."""
    path = BIN / name
    if not path.is_file():
        pytest.fail(f"{name} is not installed next to {sys.executable}: pip install -e '.[test]'", pytrace=False)
    return str(path)


def schema_check(builtin: str, *files: Path) -> None:
    """check-jsonschema with one of its vendored schemas (no network: they ship in its wheel)."""
    done = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", builtin, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def matrix(capsys, *argv: str, manifest: Path = MANIFEST) -> tuple[object, str]:
    code, out, err = cli(capsys, "--manifest", str(manifest), "matrix", *argv)
    assert code == 0, err
    if "--format" in argv and argv[argv.index("--format") + 1] == "gitlab":
        return yaml.safe_load(out), err
    assert out.count("\n") == 1, "the GitHub matrix is one line (it goes to $GITHUB_OUTPUT as matrix=...)"
    return json.loads(out), err


def cpu_extra_torch() -> str:
    import tomllib

    cpu = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["cpu"]
    return next(spec for spec in cpu if spec.startswith("torch=="))


def test_github_matrix_of_the_shipped_manifest(capsys):
    doc, err = matrix(capsys)
    rows = {row["lane"]: row for row in doc["include"]}
    lanes = load(MANIFEST, load_registry(entry_points=False)).lanes
    assert list(rows) == list(lanes)
    for name in CPU_LANES:
        assert rows[name]["runs_on"] == ["ubuntu-latest"] and rows[name]["hosted"] is True
        assert rows[name]["extras"] == "cpu" and rows[name]["torch"] == cpu_extra_torch()
    for name in ("nvidia", "iluvatar", "ascend", "tsingmicro"):
        assert rows[name]["runs_on"] == ["self-hosted", name] and rows[name]["hosted"] is False
        assert rows[name]["extras"] == rows[name]["torch"] == ""
    steps = {name: sum(step.timeout for step in lane.steps) for name, lane in lanes.items()}
    assert rows["cpu"]["timeout"] == steps["cpu"] // 60 + 15  # its steps' timeouts, plus install and upload
    assert rows["cpu-fg54"]["timeout"] == (900 + steps["cpu-fg54"]) // 60 + 15  # the package install counts too
    assert rows["cpu-fg54"]["inputs"] == "FL_FLAGGEMS_54" and rows["cpu"]["inputs"] == ""
    assert rows["flaggems-suite-502-fg54"]["inputs"] == "FL_FLAGGEMS_54"  # its tests come from the 5.4 wheel
    assert rows["nvidia"]["platform"] == "nvidia"
    assert f"matrix: {len(lanes)} of the {len(lanes)} lanes" in err


def test_gitlab_child_pipeline_of_the_shipped_manifest(capsys, tmp_path):
    doc, _ = matrix(capsys, "--format", "gitlab")
    assert list(doc) == [f"lane:{name}" for name in load(MANIFEST, load_registry(entry_points=False)).lanes]
    cpu, nvidia = doc["lane:cpu"], doc["lane:nvidia"]
    lane = load(MANIFEST, load_registry(entry_points=False)).lanes["cpu"]
    minutes = math.ceil(budget_minutes(lane)) + 15  # the lane's own budget, as the GitHub matrix has it
    assert "tags" not in cpu and cpu["image"] == "python:3.11"
    assert cpu["timeout"] == " ".join(
        p for p in (f"{minutes // 60}h" if minutes >= 60 else "", f"{minutes % 60}m") if p
    )
    assert (
        cpu["before_script"][0]
        == f"python3 -m pip install {cpu_extra_torch()} --index-url https://download.pytorch.org/whl/cpu"
    )
    assert cpu["before_script"][1] == "python3 -m pip install 'pytest-fl-contract[cpu]==0.1.0'"
    assert cpu["script"] == [f"fl-contract --manifest {MANIFEST} run cpu --reports reports"]
    assert cpu["artifacts"] == {"when": "always", "paths": ["reports/"], "reports": {"junit": "reports/cpu.xml"}}
    assert nvidia["tags"] == ["nvidia"] and "image" not in nvidia  # self-hosted is GitHub's, not a GitLab tag
    assert nvidia["before_script"] == ["python3 -m pip install pytest-fl-contract==0.1.0"]
    nvidia_minutes = math.ceil(budget_minutes(load(MANIFEST, load_registry(entry_points=False)).lanes["nvidia"])) + 15
    assert nvidia["timeout"] == f"{nvidia_minutes // 60}h {nvidia_minutes % 60}m"
    path = tmp_path / "lanes.gitlab-ci.yml"
    path.write_text(yaml.safe_dump(doc))
    schema_check("vendor.gitlab-ci", path)


def test_gitlab_options(capsys):
    doc, _ = matrix(
        capsys, "--format", "gitlab", "--runners", "hosted", "--hosted-tag", "saas-linux-small-amd64", "--package", "."
    )
    assert list(doc) == [f"lane:{name}" for name in CPU_LANES]
    assert doc["lane:cpu"]["tags"] == ["saas-linux-small-amd64"]
    assert doc["lane:cpu"]["before_script"][1] == "python3 -m pip install '.[cpu]'"


@pytest.mark.parametrize(
    "argv, lanes",
    [
        (["--lanes", "iluvatar*,!*-fg54"], ["iluvatar-emulated", "iluvatar-emulated-noworkaround", "iluvatar"]),
        (["--lanes", "!*"], None),
        (["--platform", "cuda"], ["nvidia-hopper-emulated", "nvidia"]),  # torch_fl's name: an alias
        (["--platform", "iluvatar", "--runners", "self-hosted"], ["iluvatar"]),
        (["--runners", "hosted"], CPU_LANES),
        (["--lanes", " cpu , amd "], ["cpu", "amd"]),
    ],
)
def test_selection(capsys, argv, lanes):
    if lanes is None:
        code, _, err = cli(capsys, "--manifest", str(MANIFEST), "matrix", *argv)
        assert code == 2
        one_line(err, "selects no lane of")
        return
    doc, _ = matrix(capsys, *argv)
    assert [row["lane"] for row in doc["include"]] == lanes


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lanes", "nomatch*"], "--lanes 'nomatch*' selects no lane of"),
        (["--lanes", "cpu", "--runners", "self-hosted"], "--lanes 'cpu' --runners self-hosted selects no lane"),
        (["--platform", "bogus"], "--platform 'bogus': unknown platform; known: "),
        (["--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["--runners", "gpu"], "argument --runners: invalid choice: 'gpu'"),
        (["--format", "gitlab", "--hosted-tag", "a b"], "--hosted-tag 'a b' holds whitespace, a comma"),
    ],
)
def test_bad_selection_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "matrix", *argv)
    assert code == 2 and out == ""
    one_line(err, message)


def lane_manifest(tmp_path: Path, lane: str) -> Path:
    path = tmp_path / "manifest.yaml"
    path.write_text("lanes:\n" + textwrap.indent(textwrap.dedent(lane), "  "))
    return path


@pytest.mark.parametrize(
    "labels, message",
    [
        ("['gpu box']", "runner_labels: 'gpu box' holds whitespace, a comma or a control character"),
        ("['a,b']", "runner_labels: 'a,b' holds whitespace"),
        ("['']", "runner_labels: '' is empty"),
        ("['  ']", "runner_labels: '  ' is empty"),
        ('["gpu\\x01"]', "runner_labels: 'gpu\\x01' holds whitespace, a comma or a control character"),
        ('["gpu\\u2028"]', "runner_labels: 'gpu\\u2028' holds whitespace, a comma or a control character"),
    ],
)
def test_check_refuses_a_label_no_runner_can_carry(tmp_path, capsys, labels, message):
    path = lane_manifest(
        tmp_path,
        f"""\
        a:
          platform: cpu
          runner_labels: {labels}
          steps: [{{name: s, command: ['true']}}]
    """,
    )
    for argv in (["check", str(path)], ["--manifest", str(path), "matrix"]):
        code, out, err = cli(capsys, *argv)
        assert code == 2 and out == ""
        one_line(err, "lane 'a': " + message)


def test_a_lane_without_runner_labels_is_refused_in_one_line_and_can_be_left_out(tmp_path, capsys):
    path = lane_manifest(
        tmp_path,
        """\
        a:
          platform: cpu
          runner_labels: [ubuntu-latest]
          steps: [{name: s, command: ['true']}]
        nowhere:
          platform: cpu
          steps: [{name: s, command: ['true']}]
    """,
    )
    code, out, err = cli(capsys, "--manifest", str(path), "matrix")
    assert code == 2 and out == ""
    one_line(err, "lane 'nowhere' has no runner_labels", "--lanes '*,!nowhere'")
    doc, _ = matrix(capsys, "--lanes", "*,!nowhere", manifest=path)
    assert [row["lane"] for row in doc["include"]] == ["a"]


def test_job_timeout_is_the_lane_budget_plus_margin_capped_by_the_runner_limit(tmp_path, capsys):
    path = lane_manifest(
        tmp_path,
        """\
        short:
          platform: cpu
          runner_labels: [ubuntu-24.04]
          timeout_minutes: 30
          steps: [{name: s, command: ['true'], timeout: 7200}]
        long:
          platform: cpu
          runner_labels: [ubuntu-latest]
          setup: ['true']
          steps: [{name: s, command: ['true'], timeout: 86400}]
        vendor:
          platform: nvidia
          runner_labels: [self-hosted, linux, h200]
          steps: [{name: s, command: ['true'], timeout: 86400}]
    """,
    )
    doc, err = matrix(capsys, manifest=path)
    rows = {row["lane"]: row for row in doc["include"]}
    assert rows["short"]["timeout"] == 45 and rows["short"]["hosted"] is True
    assert rows["long"]["timeout"] == 360  # GitHub-hosted jobs stop at 6 h: said on stderr
    assert "lane long: its steps may take 1470 min, past the 360-minute job limit" in err
    assert rows["vendor"]["timeout"] == 1440 + 15 and rows["vendor"]["hosted"] is False
    gitlab, _ = matrix(capsys, "--format", "gitlab", manifest=path)
    assert gitlab["lane:vendor"]["tags"] == ["linux", "h200"] and gitlab["lane:vendor"]["timeout"] == "24h 15m"
    assert gitlab["lane:short"]["timeout"] == "45m"


def test_torch_fl_import_feeds_matrix_unchanged(tmp_path, capsys):
    """`fl-contract import .github/configs/*.yml` -> `matrix`, both formats, nothing edited."""
    configs = tmp_path / ".github" / "configs"
    configs.mkdir(parents=True)
    (configs / "iluvatar.yml").write_text(ILUVATAR)
    (configs / "cuda.yml").write_text(
        textwrap.dedent("""\
        display_name: NVIDIA H200
        runner_labels: [self-hosted, Linux, X64, h200]
        integration_environment: {CUDA_VISIBLE_DEVICES: '0'}
        integration_tests:
          - {name: smoke, command: python -c 'import torch'}
    """)
    )
    imported = tmp_path / "ci" / "manifest.yaml"
    imported.parent.mkdir()
    code, _, _ = cli(capsys, "import", str(configs / "iluvatar.yml"), str(configs / "cuda.yml"), "-o", str(imported))
    assert code == 0
    doc, _ = matrix(capsys, manifest=imported)
    rows = {row["lane"]: row for row in doc["include"]}
    assert list(rows) == ["iluvatar", "cuda"]
    assert rows["iluvatar"]["runs_on"] == ["self-hosted", "iluvatar"] and rows["iluvatar"]["timeout"] == 120 + 15
    assert rows["iluvatar"]["image"] == "registry.local/torch_fl:iluvatar-4.5"
    assert rows["cuda"]["runs_on"] == ["self-hosted", "Linux", "X64", "h200"] and rows["cuda"]["platform"] == "nvidia"
    assert not any(row["hosted"] for row in rows.values())
    gitlab, _ = matrix(capsys, "--format", "gitlab", manifest=imported)
    assert gitlab["lane:iluvatar"]["image"] == "registry.local/torch_fl:iluvatar-4.5"
    assert gitlab["lane:iluvatar"]["tags"] == ["iluvatar"] and gitlab["lane:iluvatar"]["timeout"] == "2h 15m"
    assert gitlab["lane:cuda"]["tags"] == ["Linux", "X64", "h200"]
    assert gitlab["lane:cuda"]["script"] == [f"fl-contract --manifest {imported} run cuda --reports reports"]
    path = tmp_path / "child.yml"
    path.write_text(yaml.safe_dump(gitlab))
    schema_check("vendor.gitlab-ci", path)


# -- merge ------------------------------------------------------------------------------


def write_lane(directory: Path, lane: str, report: junit.Report, status: int | None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    junit.write(report, directory / f"{lane}.xml", name=lane)
    if status is not None:
        (directory / f"{lane}.exit").write_text(f"{status}\n")


def passed(lane: str, step: str = "s") -> junit.Report:
    return junit.single_case(lane, step, 1.0, None)


def test_merge_puts_every_case_under_its_lane(tmp_path, capsys):
    reports = tmp_path / "lane-reports"
    write_lane(reports, "a", passed("a"), 0)
    foreign = junit.parse_text(
        '<testsuite name="pytest" tests="1"><testcase classname="tests.test_x" name="t"/></testsuite>'
    )
    write_lane(reports, "b", foreign, 0)  # a report not written by `run`: its case gets the lane too
    caught = junit.single_case("c", "s", 1.0, junit.Result("failure", "caught"))
    record = verdict.record("s", "fail", False, "failed", True)  # what `run` records of an expect: fail step
    write_lane(reports, "c", replace(caught, suites=(replace(caught.suites[0], properties=(record,)),)), 0)
    out = tmp_path / "merged.xml"
    code, stdout, err = cli(capsys, "merge", "--reports", str(reports), "--lanes", "a,b,c", "-o", str(out))
    assert code == 0 and err == ""
    assert_valid_junit(out)
    merged = junit.read(out)
    assert [(c.classname, c.name) for c in merged.cases] == [("a.s", "s"), ("b.tests.test_x", "t"), ("c.s", "s")]
    assert [s.name for s in merged.suites] == ["a/s", "b/pytest", "c/s"]
    assert junit.problems(merged) == []
    assert "| a | ok (exit 0) |" in stdout and "| c | ok (exit 0) |" in stdout


def test_merge_fails_for_a_lane_that_failed_was_skipped_or_left_no_report(tmp_path, capsys):
    reports = tmp_path / "r"
    write_lane(reports, "ok", passed("ok"), 0)
    write_lane(reports, "broken", junit.single_case("broken", "s", 1.0, junit.Result("failure", "no")), 1)
    write_lane(reports, "skipped", junit.skipped_suite("skipped", "s", "not run: lane skipped"), 4)
    (reports / "garbled.xml").write_text("<testsuites><testsuite")
    (reports / "empty.xml").write_text("<testsuites/>")
    out = tmp_path / "merged.xml"
    lanes = "ok,broken,skipped,lost,garbled,empty"
    code, stdout, err = cli(capsys, "merge", "--reports", str(reports), "--lanes", lanes, "-o", str(out))
    assert code == 1
    lines = err.splitlines()
    assert lines == [
        "fl-contract: lane broken: step broken/s: failed",
        "fl-contract: lane broken: fl-contract run FAIL (exit 1)",
        "fl-contract: lane skipped: step skipped/s: not run",
        "fl-contract: lane skipped: fl-contract run SKIPPED (an input it needs was not set) (exit 4)",
        "fl-contract: lane lost: no report lost.xml: its job uploaded no reports/ (cancelled, timed out, or its "
        "runner was lost)",
        "fl-contract: lane garbled: malformed JUnit XML garbled.xml: ParseError: unclosed token: line 1, column 12",
        "fl-contract: lane empty: empty.xml cannot be trusted: no test cases: a report that ran nothing is not a pass",
    ]
    assert_valid_junit(out)
    merged = junit.read(out)
    by_lane = {case.classname.split(".")[0]: case for case in merged.cases}
    assert set(by_lane) == set(lanes.split(","))  # every lane is in the merged report, whatever it left
    assert by_lane["lost"].outcome == "error" and by_lane["lost"].classname == "lost.report"
    assert "| skipped | FAIL: step skipped/s: not run |" in stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lanes", "../x"], "--lanes: '../x' is not a lane name"),
        (["--lanes", ","], "--lanes names no lane"),
        (["--reports", "nowhere"], "--reports nowhere: not a directory"),
        ([], "no lane reports (LANE.xml) in"),
    ],
)
def test_merge_refusals_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    code, out, err = cli(capsys, "merge", *argv)
    assert code == 2 and out == ""
    one_line(err, message)


def test_merge_without_lanes_takes_every_lane_report_and_never_writes_among_them(tmp_path, capsys):
    reports = tmp_path / "reports"
    write_lane(reports, "a", passed("a"), None)  # `run` alone writes no .exit: no verdict, no failure
    inside = reports / "merged.xml"  # a later merge would read it as lane "merged": a stale file as a result
    code, _, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(inside))
    assert code == 2 and not inside.exists()
    one_line(err, "would be read as) the report of lane merged; write the merged report outside --reports")
    out = tmp_path / "merged.xml"
    out.write_text("stale")
    code, stdout, _ = cli(capsys, "merge", "--reports", str(reports), "-o", str(out))
    assert code == 0 and "| a | ok (verdicts from its report) |" in stdout
    assert [c.classname for c in junit.read(out).cases] == ["a.s"]


def test_merge_when_no_lane_uploaded_anything_lists_every_lane_as_lost(tmp_path, capsys, monkeypatch):
    """download-artifact found nothing (every runner lost): still a report naming each lane."""
    monkeypatch.chdir(tmp_path)
    code, stdout, err = cli(capsys, "merge", "--reports", "lane-reports", "--lanes", "a,b")
    assert code == 1 and len(err.splitlines()) == 2 and "lane a: no report a.xml" in err
    merged = tmp_path / "fl-contract-lanes.xml"
    assert_valid_junit(merged)
    assert [(c.classname, c.outcome) for c in junit.read(merged).cases] == [
        ("a.report", "error"),
        ("b.report", "error"),
    ]


def test_merge_junitparser_reads_what_merge_writes_where_its_own_merge_breaks_the_schema(tmp_path, capsys):
    """Why merge writes through reporting/junit.py: junitparser's own merge puts `skipped` on
    <testsuites>, which pytest's junit-10.xsd does not allow; consumers still read ours with it."""
    from junitparser import JUnitXml

    from .hostile import schema

    reports = tmp_path / "r"
    skipped = junit.Case("t", "a.s", 0.0, (junit.Result("skipped", "why", "pytest.skip"),))
    write_lane(reports, "a", junit.Report((junit.Suite("a/s", (junit.Case("s", "a.s"), skipped)),)), 0)
    write_lane(reports, "b", passed("b"), 0)
    theirs = JUnitXml.fromfile(str(reports / "a.xml")) + JUnitXml.fromfile(str(reports / "b.xml"))
    theirs.write(str(tmp_path / "theirs.xml"))
    assert next(iter(schema().iter_errors(str(tmp_path / "theirs.xml"))), None) is not None, (
        "junitparser's merge now writes valid xunit2: fl-contract merge could use it"
    )
    code, _, _ = cli(capsys, "merge", "--reports", str(reports), "-o", str(tmp_path / "ours.xml"))
    assert code == 0
    assert_valid_junit(tmp_path / "ours.xml")
    assert [case.classname for suite in JUnitXml.fromfile(str(tmp_path / "ours.xml")) for case in suite] == [
        "a.s",
        "a.s",
        "b.s",
    ]
