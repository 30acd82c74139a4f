"""Results over time and across lanes: compare, parity, re-runs and provenance, on real
reports of this project's own contracts (small selections of them, run here) and on
hand-made reports for the edges."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_fl_contract.cli import main
from pytest_fl_contract.reporting import junit
from pytest_fl_contract.results import cases, compare, parity
from pytest_fl_contract.util import FlContractError

from .conftest import ROOT

SELECT = ["-k", "(sum or argmax) and (test_dims or test_keepdim or test_out or test_determinism)"]


def lane_report(pytester, run_subprocess, lane: str, *args: str) -> Path:
    """A real lane report: the contracts on the emulated Iluvatar lane, written as the runner writes LANE.xml
    (suites named LANE/STEP, classnames prefixed with the lane)."""
    path = pytester.path / f"{lane}.step.xml"
    run_subprocess(
        str(ROOT / "contracts" / "reductions"),
        "-c",
        str(ROOT / "contracts" / "pytest.ini"),
        "--rootdir",
        str(ROOT / "contracts"),
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "--fl-junit-prefix",
        lane,
        *args,
        *SELECT,
        f"--junitxml={path}",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "xdist",
        "-n",
        "0",
    )
    report = junit.rename_suites(junit.read(path), f"{lane}/reduction_contract")
    out = pytester.path / f"{lane}.xml"
    junit.write(report, out)
    return out


@pytest.mark.slow
def test_compare_of_the_lanes_names_exactly_the_contracts_the_defect_breaks(pytester, run_subprocess, capsys):
    held = lane_report(pytester, run_subprocess, "held")
    broken = lane_report(pytester, run_subprocess, "broken", "--fl-no-workaround")
    result = compare.compare(cases.read_one(held), cases.read_one(broken))
    # what the no-workaround lane's own summary says failed, minus what failed with the workaround too
    summary = junit.count(junit.read(broken), "broken").summary
    failing = {contract for contracts in summary.failures.values() for contract in contracts}
    held_rows = cases.read_one(held).rows
    assert not any(row.failing for row in held_rows)
    assert failing and result.contracts("new_failures") == failing
    assert {c.op for c in result.of("new_failures")} == set(summary.failures)
    assert result.common == len(held_rows) and not result.of("disappeared")
    # the CLI: Markdown on stdout, JSON beside it, exit 1 on the regression
    out = pytester.path / "cmp.json"
    assert main(["compare", str(held), str(broken), "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert f"new failures: {len(result.of('new_failures'))}" in text
    data = json.loads(out.read_text())
    assert data["counts"]["new_failures"] == len(result.of("new_failures")) and data["regressions"] > 0
    # and the other way round nothing regresses: the workaround fixes every one of them, the known
    # defects' xfails among them (what the workaround lane passes and the other xfails: new xfails there)
    back = compare.compare(cases.read_one(broken), cases.read_one(held))
    assert not back.regressions and all(c.defect for c in result.of("new_xfails"))
    assert {c.key for c in back.of("fixed")} == {c.key for c in result.of("new_failures") + result.of("new_xfails")}
    # provenance: every report says what produced it
    props = cases.read_one(broken).properties
    for name in (
        "version_torch",
        "version_triton",
        "version_flag_gems",
        "version_pytest_fl_contract",
        "fl_registry_sha256",
        "fl_checkout_commit",
        "fl_plugin_commit",
        "fl_device",
        "fl_device_count",
    ):
        assert props.get(name), name
    assert props["fl_registry_sha256"] == cases.read_one(held).properties["fl_registry_sha256"]
    # parity of the two: the matrix's cells are the JUnit's cases, and its rates say their formula
    matrix = parity.matrix([cases.read_one(held), cases.read_one(broken)])
    for rate, path in zip(matrix.rates, (held, broken)):
        seen = Counter(case.outcome for case in junit.read(path).cases)
        assert (rate.passed, rate.failing, rate.skipped, rate.xfailed) == (
            seen["passed"],
            seen["failed"] + seen["error"],
            seen["skipped"],
            seen["xfailed"],
        )
    for op, contract in matrix.rows:
        if matrix.cell(op, contract, "broken").state == "failed":
            assert matrix.also_failing(op, contract) == ["broken"]
            assert contract in failing


# -- hand-made reports: the edges ------------------------------------------------------


def report_xml(lane: str, cases_: list[tuple[str, str, str]], tags: dict | None = None) -> str:
    """cases_: (classname without lane, name, outcome)."""
    body = []
    for classname, name, outcome in cases_:
        inner = {
            "passed": "",
            "failed": '<failure message="boom">x</failure>',
            "skipped": '<skipped message="no bf16 here" type="pytest.skip"/>',
            "xfailed": '<skipped message="known defect d1" type="pytest.xfail"/>',
            "xpassed": '<failure message="[XPASS(strict)] known defect d1">x</failure>',
        }[outcome]
        body.append(f'<testcase classname="{lane}.{classname}" name="{name}" time="0.1">{inner}</testcase>')
    props = f'<properties><property name="fl_cases" value="{_attr(json.dumps(tags or {}))}"/></properties>'
    return (
        f'<?xml version="1.0"?><testsuites><testsuite name="{lane}/reduction_contract" tests="{len(body)}">'
        f"{props}{''.join(body)}</testsuite></testsuites>"
    )


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


TAGS = {f"reductions.test_dims::t[{i}]": {"op": "sum", "contract": "dims"} for i in range(6)}


def test_compare_labels_every_kind_of_change(tmp_path):
    base = [
        ("reductions.test_dims", f"t[{i}]", o)
        for i, o in enumerate(["passed", "failed", "failed", "passed", "xfailed", "passed"])
    ]
    cur = [
        ("reductions.test_dims", f"t[{i}]", o)
        for i, o in enumerate(["failed", "passed", "failed", "skipped", "xpassed"])
    ] + [("reductions.test_dims", "t[9]", "failed")]
    a = cases.read_one(write(tmp_path, "a.xml", report_xml("a", base, TAGS)))
    b = cases.read_one(write(tmp_path, "b.xml", report_xml("b", cur, TAGS)))
    result = compare.compare(a, b)
    kinds = {c.key.rsplit("::", 1)[1]: c.kind for c in result.changes}
    assert kinds == {
        "t[0]": "new_failures",
        "t[1]": "fixed",
        "t[2]": "still_failing",
        "t[3]": "new_skips",
        "t[4]": "xpassed",
        "t[5]": "disappeared",
        "t[9]": "new_failures",
    }
    assert {c.op for c in result.changes if c.key.endswith("t[0]")} == {"sum"}
    skip = next(c for c in result.changes if c.kind == "new_skips")
    assert skip.message == "no bf16 here"
    assert len(result.regressions) == 3  # t[0], t[9] new failures; t[5] gone


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: p / "missing.xml", "no such report"),
        (lambda p: write(p, "notes.txt", "not xml at all"), "not a JUnit report"),
        (lambda p: write(p, "empty.xml", "<testsuites/>"), "no test suites"),
        (lambda p: (p / "emptydir").mkdir() or p / "emptydir", "no JUnit reports"),
    ],
)
def test_bad_baselines_are_one_line_and_exit_2(tmp_path, capsys, setup, message):
    good = write(tmp_path, "good.xml", report_xml("a", [("reductions.test_dims", "t[0]", "passed")], TAGS))
    bad = setup(tmp_path)
    assert main(["compare", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_reports_of_different_suites_are_refused(tmp_path, capsys):
    a = write(tmp_path, "a.xml", report_xml("a", [("reductions.test_dims", "t[0]", "passed")]))
    b = write(tmp_path, "b.xml", report_xml("b", [("tests.test_other", "u[0]", "passed")]))
    assert main(["compare", str(a), str(b)]) == 2
    assert "share no case" in capsys.readouterr().err
    with pytest.raises(FlContractError, match="two lanes or more"):
        parity.matrix([cases.read_one(a)])
    with pytest.raises(FlContractError, match="given twice"):
        parity.matrix([cases.read_one(a), cases.read_one(a)])


def test_parity_cells_and_also_failing_in(tmp_path, capsys):
    rows = {
        "x": ["passed", "failed", "xfailed"],
        "y": ["failed", "failed", "skipped"],
        "z": ["passed", "passed", "passed"],
    }
    paths = []
    for lane, outcomes in rows.items():
        tags = {
            f"reductions.test_dims::t[{i}]": {"op": op, "contract": "dims", "defect": "d1"}
            for i, op in enumerate(["sum", "mean", "prod"])
        }
        paths.append(
            write(
                tmp_path,
                f"{lane}.xml",
                report_xml(lane, [("reductions.test_dims", f"t[{i}]", o) for i, o in enumerate(outcomes)], tags),
            )
        )
    matrix = parity.matrix([r for p in paths for r in cases.read(p)])
    assert matrix.cell("mean", "dims", "x").label == "failed 1/1"
    assert matrix.cell("prod", "dims", "x").state == "defect" and "d1" in matrix.cell("prod", "dims", "x").label
    assert matrix.cell("prod", "dims", "y").label == "skipped: no bf16 here"
    assert matrix.also_failing("mean", "dims") == ["x", "y"]
    assert [r.shown for r in matrix.rates] == ["50.0%", "0.0%", "100.0%"]
    assert main(["parity", *map(str, paths), "--disagreeing"]) == 0
    out = capsys.readouterr().out
    assert parity.RATE in out and "| `mean` | dims | failed 1/1 | failed 1/1 | passed 1/1 | x, y |" in out


def test_a_report_without_fl_cases_still_groups_by_module_and_op(tmp_path):
    path = write(
        tmp_path,
        "old.xml",
        report_xml("a", [("reductions.test_dims", "test_every_dim[prod-2x3-d0]", "failed")]).replace(
            '<property name="fl_cases" value="{}"/>', ""
        ),
    )
    (row,) = cases.read_one(path).rows
    assert (row.op, row.contract) == ("prod", "dims")


# -- re-runs of failures: deterministic or a nondeterministic result, never green -------


FLAKY = """
import os
from pathlib import Path

COUNTER = Path(os.environ["FLAKY_COUNTER"])


def test_always_fails():
    assert False, "always"


def test_flips():
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    assert n % 2 == 1, "fails on the first call, then on every other one"


def test_passes():
    pass
"""


def test_rerun_failures_labels_each_failure_and_keeps_it_failing(tmp_path, monkeypatch):
    import io
    import textwrap

    from pytest_fl_contract.lanes.manifest import Lane, Step
    from pytest_fl_contract.lanes.runner import run_lane

    test = tmp_path / "test_flaky.py"
    test.write_text(textwrap.dedent(FLAKY))
    monkeypatch.setenv("FLAKY_COUNTER", str(tmp_path / "counter"))
    step = Step("flaky", "pytest", (str(test), "-q", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"))
    run = run_lane(Lane("lane-r", "cpu", (step,)), tmp_path / "reports", progress=io.StringIO(), rerun_failures=3)
    assert not run.ok
    rows = {row.key.rsplit("::", 1)[1]: row for row in cases.read_one(tmp_path / "reports" / "lane-r.xml").rows}
    assert rows["test_always_fails"].outcome == "failed" and rows["test_always_fails"].rerun == "deterministic"
    assert rows["test_flips"].outcome == "failed" and rows["test_flips"].rerun == "intermittent"
    assert "nondeterministic result: passed 2 of 3 re-runs" in rows["test_flips"].message
    assert rows["test_passes"].outcome == "passed" and rows["test_passes"].rerun is None
    # each re-run ran the two failures only: the counter saw the first run and three re-runs
    assert (tmp_path / "counter").read_text() == "4"
    assert "1 deterministic, 1 nondeterministic result (test_flaky::test_flips)" in run.markdown


def test_rerun_failures_must_be_a_count(tmp_path, capsys):
    assert main(["run", "cpu", "--rerun-failures", "-1", "--reports", str(tmp_path)]) == 2
    assert "a count of re-runs" in capsys.readouterr().err


# -- history -------------------------------------------------------------------------------


def test_history_first_failing_and_flips(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    outcomes = ["passed", "failed", "passed", "failed", "failed"]
    for n, outcome in enumerate(outcomes):
        path = write(
            tmp_path,
            f"run{n}.xml",
            report_xml(
                "lane-h", [("reductions.test_dims", "t[0]", outcome), ("reductions.test_dims", "t[1]", "passed")], TAGS
            ),
        )
        assert main(["history", "add", str(path), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["history", "case", "t[0]", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "5 run(s), first seen failing in run #2" in out and "flipped 3 time(s), last failed" in out
    assert main(["history", "flaky", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "3 flips in   5 runs  lane-h: reduction_contract/reductions.test_dims::t[0]" in out and "t[1]" not in out
    assert main(["history", "case", "t[7]", "--db", str(db)]) == 2
    assert main(["history", "flaky", "--db", str(tmp_path / "none.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err


# -- a lane's baseline: a path, or its own last green run --------------------------------


def test_a_lane_with_last_green_baseline_fails_on_a_regression(tmp_path):
    import io
    import textwrap

    from pytest_fl_contract.lanes.manifest import Lane, Step
    from pytest_fl_contract.lanes.runner import run_lane

    test = tmp_path / "test_b.py"
    step = Step("s", "pytest", (str(test), "-q", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"), allow_failure=True)
    the_lane = Lane("lane-b", "cpu", (step,), baseline="last-green")

    def go(body: str):
        test.write_text(textwrap.dedent(body))
        return run_lane(the_lane, tmp_path / "reports", progress=io.StringIO())

    first = go("def test_a(): pass\ndef test_b(): pass\n")
    assert first.ok and "baseline: none yet" in first.markdown
    assert (tmp_path / "reports" / "baselines" / "lane-b.xml").is_file()
    again = go("def test_a(): pass\ndef test_b(): pass\n")
    assert again.ok and "no regression" in again.markdown
    # failures are allowed in this step, so only the baseline can tell a new one
    worse = go("def test_a(): pass\ndef test_b(): assert False\n")
    assert not worse.ok and worse.exit_code == 1 and "1 regression(s)" in worse.markdown
    assert "FAILED" in worse.markdown.splitlines()[0]
    gone = go("def test_a(): pass\n")  # the baseline is still the last green run: test_b disappeared
    assert not gone.ok and "cases that disappeared" in gone.markdown


def test_a_baseline_that_is_no_report_fails_the_lane(tmp_path):
    import io

    from pytest_fl_contract.lanes.manifest import Lane, Step
    from pytest_fl_contract.lanes.runner import run_lane

    step = Step("c", "command", (sys_executable(), "-c", "pass"))
    run = run_lane(
        Lane("lane-c", "cpu", (step,), baseline=str(tmp_path / "nope.xml")), tmp_path / "r", progress=io.StringIO()
    )
    assert not run.ok and "no such report" in run.markdown


def sys_executable() -> str:
    import sys

    return sys.executable


def test_the_manifest_takes_a_baseline_and_refuses_a_bad_one(tmp_path):
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.lanes.manifest import load

    good = tmp_path / "m.yaml"
    good.write_text(
        "version: 1\nlanes:\n  l:\n    platform: cpu\n    baseline: last-green\n"
        '    steps:\n      - name: s\n        command: ["true"]\n'
    )
    assert load(good, load_registry([])).lanes["l"].baseline == "last-green"
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("baseline: last-green", "baseline: [1]"))
    with pytest.raises(FlContractError, match="baseline must be a report path or last-green"):
        load(bad, load_registry([]))


# -- a compare step: two steps of one lane held to fail the same cases ---------------------


def test_a_compare_step_holds_two_steps_of_a_lane_alike(tmp_path, capsys):
    body = (
        "import os\n\ndef test_a(): pass\n\ndef test_b():\n    assert os.environ.get('BREAK_B') != '1'\n"
        "\ndef test_c():\n    assert os.environ.get('BREAK_C') != '1'\n"
    )
    (tmp_path / "test_pair.py").write_text(body)
    manifest = tmp_path / "m.yaml"
    template = f"""version: 1
shared_steps:
  pair:
    pytest: ["{tmp_path}/test_pair.py", -q, -p, no:cacheprovider, "--rootdir={tmp_path}"]
lanes:
  l:
    platform: cpu
    steps:
      - name: reference
        use: pair
        env: {{BREAK_B: "1"}}
        allow_failure: true
      - name: other
        use: pair
        args: [-p, no:randomly]
        env: {{BREAK_B: "1", BREAK_C: "WHICH"}}
        allow_failure: true
      - name: alike
        compare: [reference, other]
"""

    def go(which: str) -> int:
        manifest.write_text(template.replace("WHICH", which))
        return main(["--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / f"r{which}")])

    assert go("0") == 0  # both fail test_b only
    assert (
        "other fails the same cases than reference: 0 more, 0 fewer, 1 in both, 2 passed in both"
        in capsys.readouterr().out
    )
    assert go("1") == 1  # other fails test_c too
    out = capsys.readouterr().out
    assert "other fails other cases than reference: 1 more, 0 fewer, 1 in both" in out
    assert "test_pair::test_c" in (tmp_path / "r1" / "l" / "alike.xml").read_text()  # the comparison, in its case


def test_a_compare_step_of_two_runs_that_proved_nothing_fails(tmp_path, capsys):
    """Both steps errored in every case (a fixture raising ImportError: FlagGems' own suite
    on a lane whose flag_gems cannot be imported): "the same failures" in both is no
    agreement.  Nor is a run in which every case skipped."""
    (tmp_path / "test_nothing.py").write_text(
        "import os\nimport pytest\n\n@pytest.fixture\ndef gems():\n"
        "    if os.environ.get('SKIP') == '1':\n        pytest.skip('no flag_gems here')\n"
        "    raise ImportError('no flag_gems')\n\n"
        "def test_a(gems): pass\n\ndef test_b(gems): pass\n"
    )
    manifest = tmp_path / "m.yaml"
    for skip in ("0", "1"):
        manifest.write_text(f"""version: 1
shared_steps:
  s:
    pytest: ["{tmp_path}/test_nothing.py", -q, -p, no:cacheprovider, "--rootdir={tmp_path}"]
    env: {{SKIP: "{skip}"}}
    allow_failure: true
lanes:
  l:
    platform: cpu
    steps:
      - {{name: reference, use: s}}
      - {{name: other, use: s}}
      - name: alike
        compare: [reference, other]
""")
        assert main(["--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / f"r{skip}")]) == 1
        assert "no case passed in both: the comparison shows nothing held" in capsys.readouterr().out


@pytest.mark.parametrize(
    "step, message",
    [
        ("      - name: x\n        compare: [ref]\n", "compare names two earlier pytest steps"),
        (
            "      - name: x\n        compare: [ref, later]\n      - name: later\n        pytest: [-q]\n",
            "is not an earlier pytest step",
        ),
        ("      - name: x\n        compare: [ref, ref2]\n        expect: fail\n", "neither expect nor shell"),
        ('      - name: x\n        command: ["true"]\n        args: [-q]\n', "args: a list of pytest arguments"),
    ],
)
def test_bad_compare_and_args_steps_are_refused(tmp_path, step, message):
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.lanes.manifest import load

    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nlanes:\n  l:\n    platform: cpu\n    steps:\n      - name: ref\n        pytest: [-q]\n"
        "      - name: ref2\n        pytest: [-q]\n" + step
    )
    with pytest.raises(FlContractError, match=message):
        load(path, load_registry([]))


# -- the committed H200 lane reports (benchmarks/results/h200-lane-*-cold.xml.gz) ------------


H200 = ROOT / "benchmarks" / "results"


def test_the_h200_lanes_compared_across_flaggems_lines(tmp_path):
    """FlagGems 5.0.2 against 5.4.0.dev0 on one H200 (before test_generated skipped corrupting draws on
    hardware): the 5.4 line's only new failures are special_log_softmax's generated draws."""
    old = cases.read_one(H200 / "h200-lane-fg502-cold.xml.gz")
    new = cases.read_one(H200 / "h200-lane-fg54-cold.xml.gz")
    assert old.properties["version_flag_gems"] == "5.0.2" and new.properties["version_flag_gems"] == "5.4.0.dev0"
    result = compare.compare(old, new)
    failures = result.of("new_failures")
    assert len(failures) == 8 and {(c.op, c.contract) for c in failures} == {("special_log_softmax", "generated")}
    assert not result.of("xpassed") and not result.of("hidden")
    # 5.0.2's known defects that 5.4 no longer has are fixed (xfailed -> passed); 5.4's own known
    # defect shows as cases that now xfail, a regression a plain diff of failures does not see
    assert {(c.before, c.defect) for c in result.of("fixed")} == {
        ("xfailed", "empty_input_diverges"),
        ("xfailed", "grid_y_over_limit"),
        ("xfailed", "nan_dropped_by_max"),
    }
    assert {(c.before, c.defect) for c in result.of("new_xfails")} == {("passed", "softmax_permuted_output")}
    assert {c.op for c in result.of("new_cases")} >= {"logsumexp", "special_logsumexp", "special_log_softmax"}
    matrix = parity.matrix([old, new])
    for rate, report in zip(matrix.rates, (old, new)):
        seen = Counter(case.outcome for case in junit.read(Path(report.path)).cases)
        assert (rate.passed, rate.failing, rate.xfailed, rate.skipped) == (
            seen["passed"],
            seen["failed"] + seen["error"],
            seen["xfailed"],
            seen["skipped"],
        )
    assert matrix.also_failing("special_log_softmax", "generated") == [new.lane]
    from pytest_fl_contract.results import html

    written = html.render(
        [str(H200 / "h200-lane-fg502-cold.xml.gz"), str(H200 / "h200-lane-fg54-cold.xml.gz")], str(tmp_path / "html")
    )
    assert len(written) == 3 and "special_log_softmax" in (tmp_path / "html" / "matrix.html").read_text()


def test_a_broken_gzip_report_is_one_line(tmp_path, capsys):
    bad = tmp_path / "lane.xml.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not really gzip")
    assert main(["compare", str(bad), str(bad)]) == 2
    assert "broken gzip file" in capsys.readouterr().err
