"""Issue 61: no green from nothing.  One section per class of the issue; each test names its
class and failed on the main of that day.  The rules they hold are docs/verdicts.md's: what
counts as ran, as agreement, as current, as caught, cancelled, retried - and what the plugin
does when it is installed but not asked.

Nothing here waits on a wall-clock margin: a subprocess says where it is with files, and a
timeout is only a guard against a hang (``GUARD``), never what a verdict rests on."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_fl_contract.lanes import runner, verdict
from pytest_fl_contract.lanes.manifest import Lane, Step
from pytest_fl_contract.reporting import junit
from pytest_fl_contract.results import cases, compare

from .conftest import ROOT
from .hostile import cli, one_line

PY = sys.executable
CLI = [PY, "-m", "pytest_fl_contract.cli"]
GUARD = 300  # seconds: a hang guard only; every wait below ends on an event long before it


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _until(test, what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll ``test`` until it holds (a file written, a line logged); the guard ends only a hang."""
    deadline = time.monotonic() + GUARD
    while not test():
        assert proc is None or proc.poll() is None, f"the process ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"hung: never {what}"
        time.sleep(0.02)


def _gone(pid: int, guard: float = 60) -> bool:
    """Wait until ``pid`` has exited (a pidfd says so the moment it does); False on the guard."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], guard)
        return bool(ready)
    finally:
        os.close(fd)


def _report(lane: str, cases_: list[tuple[str, str]], step: str = "s") -> str:
    """A LANE.xml-like report: cases_ is (name, outcome) in one step's suite."""
    body = {
        "passed": "",
        "failed": '<failure message="boom"/>',
        "error": '<error message="broke"/>',
        "skipped": '<skipped type="pytest.skip" message="no"/>',
        "xfailed": '<skipped type="pytest.xfail" message="known"/>',
    }
    rows = "".join(
        f'<testcase classname="{lane}.m" name="{name}">{body[outcome]}</testcase>' for name, outcome in cases_
    )
    return f'<testsuites><testsuite name="{lane}/{step}">{rows}</testsuite></testsuites>'


def _lane_of(report: str, tmp_path: Path, name: str) -> cases.LaneReport:
    path = tmp_path / f"{name}.xml"
    path.write_text(report)
    return cases.read_one(path)


def _fake_pytest(monkeypatch, writes: dict[str, tuple[str, int]]) -> None:
    """Pytest steps that write the given JUnit and exit with the given status (by step name)."""

    def fake_argv(lane, step, report):
        if step.kind == "command":
            return list(step.args)
        xml, code = writes[step.name]
        return [PY, "-c", f"import sys; open({str(report)!r}, 'w').write({xml!r}); sys.exit({code})"]

    monkeypatch.setattr(runner, "step_argv", fake_argv)


def _run(tmp_path: Path, lane: Lane, **kw) -> runner.LaneRun:
    return runner.run_lane(lane, tmp_path / "reports", progress=io.StringIO(), **kw)


# -- 1: equal nothing is not agreement; a case the other run lost is no agreement either ------


def test_class1_two_runs_that_proved_nothing_fail_compare_in_either_mode(tmp_path, capsys):
    errors = _report("a", [("t1", "error"), ("t2", "error")])
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text(errors)
    b.write_text(errors.replace('"a/s"', '"b/s"').replace('"a.m"', '"b.m"'))
    for extra in ([], ["--same-failures"]):
        code, out, _ = cli(capsys, "compare", str(a), str(b), *extra)
        assert code == 1 and "no case passed in both: the comparison shows nothing held" in out, (extra, out)


def test_class1_a_case_the_compared_run_lost_fails_the_comparison(tmp_path):
    reference = _lane_of(_report("a", [("t1", "passed"), ("t2", "failed"), ("t3", "passed")]), tmp_path, "a")
    other = _lane_of(_report("b", [("t1", "passed"), ("t3", "passed")]), tmp_path, "b")
    result = compare.compare(reference, other)
    assert [c.kind for c in result.differs] == ["disappeared"] and not result.holds(same_failures=True)
    assert not result.holds(same_failures=False)  # a regression too


def test_class1_a_compare_step_fails_when_the_other_step_lost_cases(tmp_path, monkeypatch):
    ref = _report("l", [("t1", "passed"), ("t2", "failed")], "ref")
    other = _report("l", [("t1", "passed")], "other")
    _fake_pytest(monkeypatch, {"ref": (ref, 1), "other": (other, 0)})
    lane = Lane(
        "l",
        "cpu",
        (
            Step("ref", "pytest", (), allow_failure=True),
            Step("other", "pytest", ()),
            Step("alike", "compare", ("ref", "other")),
        ),
    )
    run = _run(tmp_path, lane)
    alike = run.results[-1]
    assert alike.verdict == "failed" and "1 cases that disappeared" in alike.detail and not run.ok


# -- 2: a run that ran nothing is not a pass -------------------------------------------------

ALL_SKIPPED = _report("l", [("t1", "skipped"), ("t2", "skipped")], "s")


def test_class2_a_pytest_step_in_which_every_case_skipped_is_an_error(tmp_path, monkeypatch):
    _fake_pytest(monkeypatch, {"s": (ALL_SKIPPED, 0)})
    run = _run(tmp_path, Lane("l", "cpu", (Step("s", "pytest", ()),)))
    (result,) = run.results
    assert not run.ok and run.exit_code == 1 and result.verdict == "error"
    assert result.detail == "no case passed (2 skipped, 0 xfailed of 2): a run that ran nothing is not a pass"


def test_class2_a_real_pytest_run_whose_library_cannot_be_imported(tmp_path):
    (tmp_path / "test_lib.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef lib():\n"
        "    return pytest.importorskip('no_such_library_here')\n\n"
        "def test_a(lib):\n    pass\n\ndef test_b(lib):\n    pass\n"
    )
    step = Step("s", "pytest", (str(tmp_path / "test_lib.py"), "-q", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"))
    run = _run(tmp_path, Lane("l", "cpu", (step,), env={"PYTHONPATH": _env()["PYTHONPATH"]}))
    assert not run.ok and run.results[0].verdict == "error", run.markdown


def test_class2_merge_and_report_read_a_step_that_ran_nothing_as_an_error(tmp_path, capsys):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "l.xml").write_text(ALL_SKIPPED)
    code, _, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(tmp_path / "m.xml"))
    assert code == 1 and "lane l: step l/s: error" in err
    code, _, err = cli(capsys, "report", str(reports / "l.xml"))
    assert code == 1 and "a run that ran nothing is not a pass" in err
    assert verdict.from_cases(junit.parse_text(ALL_SKIPPED)) == "error"


# -- 3: retries never hide a failure; a case written twice is its worst entry ---------------

RETRYING_CONFTEST = """
import pytest
from _pytest.runner import runtestprotocol

# What pytest-rerunfailures does: run the protocol again after a failure, report only the last.
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(3):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if not any(r.failed for r in reports) or attempt == 2:
            break
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""
FLIPS = """
import os, pathlib
COUNT = pathlib.Path(os.environ["FLIP_COUNTER"])

def test_flips():
    n = int(COUNT.read_text()) if COUNT.exists() else 0
    COUNT.write_text(str(n + 1))
    assert n > 0, "fails on its first run only"

def test_steady():
    pass
"""


def test_class3_a_retried_failure_fails_the_step(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(RETRYING_CONFTEST)
    (suite / "test_flips.py").write_text(FLIPS)
    step = Step("s", "pytest", (str(suite), "-q", "-p", "no:cacheprovider", f"--rootdir={suite}"))
    env = {"PYTHONPATH": _env()["PYTHONPATH"], "FLIP_COUNTER": str(tmp_path / "count")}
    run = _run(tmp_path, Lane("l", "nvidia", (step,), env=env))
    assert int((tmp_path / "count").read_text()) >= 2  # it did fail, then pass
    assert not run.ok and run.results[0].verdict == "failed", run.markdown
    flips = next(c for c in junit.read(tmp_path / "reports" / "l.xml").cases if c.name == "test_flips")
    assert flips.outcome == "failed" and flips.results[0].message.startswith("fl-contract: retried: it failed before")


def test_class3_a_case_written_twice_is_its_worst_entry(tmp_path, capsys):
    twice = _report("a", [("t", "failed"), ("t", "passed"), ("u", "passed")])
    baseline = _report("a", [("t", "failed"), ("u", "passed")])
    result = compare.compare(_lane_of(baseline, tmp_path, "base"), _lane_of(twice, tmp_path, "twice"))
    assert not result.of("fixed") and [c.key.rsplit("::")[-1] for c in result.of("still_failing")] == ["t"]
    db = tmp_path / "h.sqlite"
    assert cli(capsys, "history", "add", str(tmp_path / "twice.xml"), "--db", str(db))[0] == 0
    code, out, _ = cli(capsys, "history", "case", "m::t", "--db", str(db))
    assert code == 0 and "first seen failing in run #1" in out and "last failed" in out


# -- 4: a verdict is read from cases, not from what a step says of itself -------------------

FORGED_SUMMARY = """
import json
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    from _pytest.junitxml import xml_key
    xml = session.config.stash[xml_key]
    forged = json.dumps({"outcomes": {"failed": 2}, "failures": {"sum": {"accuracy": 1}, "mean": {"accuracy": 1}}})
    xml.global_properties = [(n, forged if n == "fl_summary" else v) for n, v in xml.global_properties]
    cases = {"test_unrelated::test_unrelated": {"op": "sum", "contract": "accuracy"}}
    xml.global_properties = [(n, json.dumps(cases) if n == "fl_cases" else v) for n, v in xml.global_properties]
"""


def test_class4_a_rewritten_summary_catches_nothing(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(FORGED_SUMMARY)
    (suite / "test_unrelated.py").write_text(
        "def test_unrelated():\n    assert False, 'nothing to do with sum'\n\ndef test_fine():\n    pass\n"
    )
    step = Step(
        "s",
        "pytest",
        (str(suite), "-q", "-p", "no:cacheprovider", f"--rootdir={suite}"),
        expect="fail",
        catch=("sum", "mean"),
    )
    progress = io.StringIO()
    run = runner.run_lane(
        Lane("l", "nvidia", (step,), env={"PYTHONPATH": _env()["PYTHONPATH"]}), tmp_path / "reports", progress=progress
    )
    summary = json.loads(dict(junit.read(tmp_path / "reports" / "l" / "s.xml").suites[0].properties)["fl_summary"])
    assert set(summary["failures"]) == {"sum", "mean"}  # the forgery reached the report
    assert not run.ok and not run.results[0].ok, run.markdown
    assert "expected to fail: NOT caught for sum, mean" in progress.getvalue()


def test_class4_an_op_is_caught_by_a_failed_case_that_names_it():
    counts = junit.StepCounts(
        "s",
        tests=3,
        failed=3,
        failed_cases=[
            ("test_accuracy[cumsum-3x5-d0]", None),
            ("test_backward[softmax_backward-3x5-d1]", "softmax"),
            ("test_accuracy[log_softmax-3x5-d1]", "log_softmax"),
        ],
    )
    assert verdict.failed_ops(counts, ("sum", "softmax", "log_softmax", "mean")) == {"softmax": 1, "log_softmax": 1}


# -- 5: stale files are not results ---------------------------------------------------------


def test_class5_a_run_that_cannot_write_its_report_leaves_no_old_one(tmp_path, monkeypatch, capsys):
    lane = Lane("l", "cpu", (Step("s", "command", (PY, "-c", "pass")),))
    assert _run(tmp_path, lane).ok  # a green report from the last run
    real = junit.write

    def full_disk(report, path, *args, **kw):
        if Path(path).name == "l.xml" and Path(path).parent.name == "reports":
            raise OSError(28, "No space left on device")
        return real(report, path, *args, **kw)

    monkeypatch.setattr(junit, "write", full_disk)
    failed = _run(tmp_path, Lane("l", "cpu", (Step("s", "command", (PY, "-c", "raise SystemExit(1)")),)))
    assert failed.problem and not (tmp_path / "reports" / "l.xml").exists()
    monkeypatch.setattr(junit, "write", real)
    code, _, err = cli(
        capsys, "merge", "--reports", str(tmp_path / "reports"), "--lanes", "l", "-o", str(tmp_path / "m.xml")
    )
    assert code == 1 and "no report l.xml" in err


WAITER = (
    "import pathlib, sys, time\npathlib.Path(sys.argv[1]).write_text('started')\n"
    "while not pathlib.Path(sys.argv[2]).exists():\n    time.sleep(0.02)\nraise SystemExit(1)\n"
)


def _manifest(tmp_path: Path, command: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(f"lanes:\n  l:\n    platform: cpu\n    steps:\n      - name: s\n        command: {command}\n")
    return path


def test_class5_merge_during_a_run_reads_no_report_of_the_last_one(tmp_path, capsys):
    green = Lane("l", "cpu", (Step("s", "command", (PY, "-c", "pass")),))
    assert _run(tmp_path, green).ok
    started, go = tmp_path / "started", tmp_path / "go"
    manifest = _manifest(tmp_path, json.dumps([PY, "-c", WAITER, str(started), str(go)]))
    proc = subprocess.Popen(
        [*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "reports")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        _until(started.exists, "the step started", proc)
        code, _, err = cli(
            capsys, "merge", "--reports", str(tmp_path / "reports"), "--lanes", "l", "-o", str(tmp_path / "m.xml")
        )
        assert code == 1 and "lane l is still running" in err
    finally:
        go.write_text("")
        assert proc.wait(timeout=GUARD) == 1


def test_class5_a_step_that_empties_the_reports_keeps_its_run_alone(tmp_path):
    started, go, reports = tmp_path / "started", tmp_path / "go", tmp_path / "reports"
    script = f"import shutil; shutil.rmtree({str(reports)!r}); exec({WAITER!r})"
    manifest = _manifest(tmp_path, json.dumps([PY, "-c", script, str(started), str(go)]))
    argv = [*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(reports)]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    quick = tmp_path / "quick.yaml"
    quick.write_text('lanes:\n  l:\n    platform: cpu\n    steps:\n      - {name: s, command: ["true"]}\n')
    try:
        _until(started.exists, "the step emptied the reports", first)
        second = subprocess.run(
            [*CLI, "--manifest", str(quick), "run", "l", "--reports", str(reports)],
            capture_output=True,
            text=True,
            timeout=GUARD,
            env=_env(),
        )
        assert second.returncode == 2, second.stdout + second.stderr
        one_line(second.stderr, "lane l is already running into")
    finally:
        go.write_text("")
        assert first.wait(timeout=GUARD) == 1


def test_class5_merge_never_writes_over_a_lane_report(tmp_path, capsys):
    reports = tmp_path / "reports"
    for name in ("a", "b"):
        _run(tmp_path, Lane(name, "cpu", (Step("s", "command", (PY, "-c", "pass")),)))
    before = (reports / "a.xml").read_bytes()
    code, _, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(reports / "a.xml"))
    assert code == 2
    one_line(err, "is (or would be read as) the report of lane a")
    assert (reports / "a.xml").read_bytes() == before


def test_class5_a_lane_cannot_take_the_runners_own_names(tmp_path, capsys):
    with pytest.raises(Exception, match="the runner's own"):
        _run(tmp_path, Lane("baselines", "cpu", (Step("l", "command", (PY, "-c", "pass")),)))
    manifest = tmp_path / "m.yaml"
    manifest.write_text('lanes:\n  baselines:\n    platform: cpu\n    steps:\n      - {name: s, command: ["true"]}\n')
    code, _, err = cli(capsys, "check", str(manifest))
    assert code == 2
    one_line(err, "lane name 'baselines' is the runner's own")


def test_class5_a_compare_step_reads_only_this_runs_reports(tmp_path, monkeypatch):
    same = _report("l", [("t1", "passed"), ("t2", "failed")], "x")
    _fake_pytest(monkeypatch, {"ref": (same.replace("l/x", "l/ref"), 1), "other": (same.replace("l/x", "l/other"), 1)})
    lane = Lane(
        "l",
        "cpu",
        (
            Step("ref", "pytest", (), allow_failure=True),
            Step("other", "pytest", (), allow_failure=True),
            Step("alike", "compare", ("ref", "other")),
        ),
    )
    assert _run(tmp_path, lane).ok  # both fail t2: alike, and the files stay behind
    again = _run(tmp_path, lane, only="alike")  # the last run's files are no result of this one
    assert not again.ok and "ref has no report to compare" in again.results[0].detail


# -- 6: cancelled is not lost ----------------------------------------------------------------

INTERRUPTED = """
import pathlib, sys, time

def test_fails_first():
    assert False, "a failure that ran before the cancel"

def test_blocks():
    pathlib.Path(sys.argv[0]).parent.joinpath("blocking").write_text("")
    while True:
        time.sleep(3600)
"""


def test_class6_sigint_keeps_what_the_pytest_step_ran(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_cancel.py").write_text(
        INTERRUPTED.replace("pathlib.Path(sys.argv[0]).parent", f"pathlib.Path({str(tmp_path)!r})")
    )
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        f"lanes:\n  l:\n    platform: nvidia\n    env: {{PYTHONPATH: {json.dumps(_env()['PYTHONPATH'])}}}\n"
        f"    steps:\n      - name: s\n        pytest: [{json.dumps(str(suite))}, -p, no:cacheprovider, "
        f'"--rootdir={suite}", -p, no:randomly]\n'
    )
    proc = subprocess.Popen(
        [*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    _until((tmp_path / "blocking").exists, "the blocking case started", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 130, out + err
    found = {c.name: c for c in junit.read(tmp_path / "r" / "l.xml").cases}
    assert found["test_fails_first"].outcome == "failed"
    assert found["s"].outcome == "error" and found["s"].results[0].message == "cancelled by SIGINT"
    assert "test_fails_first" in (tmp_path / "r" / "l" / "s.log").read_text()


def test_class6_a_killed_runner_takes_the_steps_background_children_along(tmp_path):
    pid_file = tmp_path / "child.pid"
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        f"lanes:\n  l:\n    platform: cpu\n    steps:\n      - name: s\n        shell: true\n"
        f'        command: "sleep 3600 & echo $! > {pid_file}; wait"\n'
    )
    proc = subprocess.Popen(
        [*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "r")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    _until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the step started its child", proc)
    child = int(pid_file.read_text())
    proc.kill()
    proc.wait(timeout=GUARD)
    assert _gone(child), "the step's background child outlived its runner"


# -- 7: comparison blind spots -----------------------------------------------------------------


@pytest.mark.parametrize(
    "before, after, kind",
    [
        ("failed", "xfailed", "hidden"),
        ("failed", "skipped", "hidden"),
        ("error", "xfailed", "hidden"),
        ("passed", "xfailed", "new_xfails"),
        ("skipped", "xfailed", "new_xfails"),
    ],
)
def test_class7_a_failure_goes_away_only_by_passing(tmp_path, capsys, before, after, kind):
    a = tmp_path / "a.xml"
    b = tmp_path / "b.xml"
    a.write_text(_report("a", [("t", before), ("ok", "passed")]))
    b.write_text(_report("b", [("t", after), ("ok", "passed")]))
    result = compare.compare(cases.read_one(a), cases.read_one(b))
    assert [c.kind for c in result.changes] == [kind] and result.regressions and result.differs
    assert cli(capsys, "compare", str(a), str(b), "--same-failures")[0] == 1
    assert cli(capsys, "compare", str(a), str(b))[0] == 1


def test_class7_a_skip_then_an_error_in_teardown_is_an_error():
    case = junit.Case(
        "t", "m", 0.0, (junit.Result("skipped", "no", "pytest.skip"), junit.Result("error", "failed on teardown", ""))
    )
    assert case.outcome == "error"
    report = junit.Report((junit.Suite("s", (case,), declared={"tests": 2, "errors": 1, "skipped": 1}),))
    assert junit.problems(report) == []  # pytest counts it as one skip and one error: that is honest


def test_class7_a_rerun_round_that_never_ran_the_case_says_nothing_of_it(tmp_path):
    from pytest_fl_contract.lanes import rerun

    def round_without_it(report: Path, extra: dict[str, str]) -> Path:
        report.write_text(_report("l", [("other", "passed"), ("t", "skipped")]))
        return report

    result = rerun.rerun(["m::t"], 3, "l", round_without_it)
    assert result.unproven == ["m::t"] and "0 deterministic" in result.note()
    labelled = rerun.label(junit.parse_text(_report("l", [("t", "failed")])), "l", result)
    assert labelled.cases[0].results[0].message.startswith("fl-contract rerun: not re-run: none of the 3 round(s)")


def test_class7_rerun_rounds_keep_inside_the_steps_time(tmp_path, monkeypatch):
    """A clock that moves 10 s a process: the step may take 15 s, the first run took 10, so one
    re-run round fits and the other two are not started (said in the note)."""
    clock = [1000.0]
    calls = []

    def execute(argv, shell, env, timeout, log, cap, cancel=None, token=None):
        from pytest_fl_contract.lanes.supervise import Execution

        calls.append(timeout)
        clock[0] += 10
        report = Path(next(a for a in argv if a.startswith("--junitxml=")).split("=", 1)[1])
        report.write_text(_report("l", [("t", "failed"), ("u", "passed")]))
        return Execution(1, "exited", "", 10.0)

    monkeypatch.setattr(runner, "execute", execute)
    monkeypatch.setattr(
        runner,
        "time",
        type("Clock", (), {"monotonic": staticmethod(lambda: clock[0]), "strftime": staticmethod(time.strftime)}),
    )
    step = Step("s", "pytest", (), timeout=15, rerun=3)
    result = runner.run_step(Lane("l", "cpu", (step,)), step, tmp_path / "reports", io.StringIO())
    assert calls == [15, 5] and result.verdict == "failed"
    assert "2 round(s) not run (out of the step's time, or cancelled)" in result.detail


# -- 8: installed but not asked for, the plugin changes nothing --------------------------------

FOREIGN_PLATFORM = {
    "anonymous": 'def pytest_addoption(parser):\n    parser.addoption("--platform", default="web")\n',
    "group": 'def pytest_addoption(parser):\n    parser.getgroup("appium").addoption("--platform", default="web")\n',
}
SHOWS = "def test_platform(request):\n    print('PLATFORM', request.config.getoption('--platform'))\n"


@pytest.mark.parametrize("how", sorted(FOREIGN_PLATFORM))
@pytest.mark.parametrize("args", [[], ["--platform", "android"]], ids=["no-value", "android"])
def test_class8_a_foreign_platform_option_is_left_to_its_owner(pytester, run_subprocess, how, args):
    pytester.makeconftest(FOREIGN_PLATFORM[how])
    pytester.makepyfile(test_x=SHOWS)
    installed = run_subprocess("-s", "-p", "no:cacheprovider", *args, autoload=True, timeout=GUARD)
    absent = run_subprocess("-s", "-p", "no:cacheprovider", "-p", "no:fl_contract", *args, autoload=True, timeout=GUARD)
    assert installed.ret == absent.ret == 0, installed.stdout.str() + installed.stderr.str()
    assert f"PLATFORM {args[1] if args else 'web'}" in installed.stdout.str()
    assert "fl-contract" not in installed.stdout.str().replace("fl-contract-0", "")


def test_class8_asked_for_beside_a_foreign_platform_it_takes_only_its_own(pytester, run_subprocess):
    pytester.makeconftest(FOREIGN_PLATFORM["anonymous"])
    pytester.makepyfile(test_x=SHOWS)
    both = run_subprocess(
        "-s",
        "-p",
        "fl_contract",
        "--fl-platform",
        "nvidia",
        "--platform",
        "android",
        "-p",
        "no:cacheprovider",
        timeout=GUARD,
    )
    assert both.ret == 0, both.stdout.str() + both.stderr.str()
    both.stdout.fnmatch_lines(["fl-contract *: platform nvidia*", "*PLATFORM android*"])
    took = run_subprocess("-p", "fl_contract", "--platform", "nvidia", "-p", "no:cacheprovider", timeout=GUARD)
    assert took.ret == pytest.ExitCode.USAGE_ERROR
    one_line(
        took.stderr.str(),
        "--platform 'nvidia' is another plugin's or conftest's option in this run",
        "--fl-platform NAME",
    )


@pytest.mark.parametrize(
    "conftest, args, env",
    [
        ('pytest_plugins = ["pytest_fl_contract.plugin"]\n', [], {}),
        ('pytest_plugins = ["pytest_fl_contract.plugin"]\n', ["-p", "fl_contract"], {}),
        ("", [], {"PYTEST_PLUGINS": "pytest_fl_contract.plugin"}),
        ("", ["-p", "fl_contract"], {"PYTEST_PLUGINS": "pytest_fl_contract.plugin"}),
        ("", ["-p", "pytest_fl_contract.plugin", "-p", "fl_contract"], {}),
        ("", ["-p", "fl_contract", "-p", "pytest_fl_contract.plugin"], {}),
    ],
    ids=["conftest", "conftest+p", "env", "env+p", "module+p", "p+module"],
)
@pytest.mark.parametrize("autoload", [True, False], ids=["autoload", "no-autoload"])
def test_class8_the_plugin_loads_under_either_name_in_any_combination(
    pytester, run_subprocess, conftest, args, env, autoload
):
    if conftest:
        pytester.makeconftest(conftest)
    pytester.makepyfile(test_x="def test_x(fl_settings):\n    assert fl_settings.platform.name == 'nvidia'\n")
    result = run_subprocess(
        *args, "--platform", "nvidia", "-p", "no:cacheprovider", autoload=autoload, timeout=GUARD, env=env
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 0 and "already registered" not in text, text
    result.stdout.fnmatch_lines(["fl-contract *: platform nvidia (--platform)"])


# -- 9: every input through the same careful reader -------------------------------------------


def _cli(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI in its own process: a hang is a failure (the guard), not a stuck suite."""
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60, cwd=cwd, env=env or _env())


def _lane_xml(tmp_path: Path) -> Path:
    path = tmp_path / "lane.xml"
    path.write_text(_report("lane", [("t", "passed")]))
    return path


def test_class9_a_bench_that_is_a_fifo_or_a_device_is_one_line(tmp_path):
    fifo = tmp_path / "bench.json"
    os.mkfifo(fifo)
    for bench, why in ((fifo, "not a regular file (a FIFO)"), ("/dev/zero", "not a regular file (a character device)")):
        done = _cli("html", str(_lane_xml(tmp_path)), "--out", str(tmp_path / "html"), "--bench", str(bench))
        assert done.returncode == 2
        one_line(done.stderr, "cannot read the benchmark", why)


def test_class9_a_github_output_that_is_a_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    manifest = tmp_path / "m.yaml"
    manifest.write_text("lanes:\n  g:\n    platform: nvidia\n    steps:\n      - {name: s, pytest: [-q]}\n")
    done = _cli(
        "--manifest", str(manifest), "triton-cache", "g", "--github-output", env={**_env(), "GITHUB_OUTPUT": str(fifo)}
    )
    assert done.returncode == 2
    one_line(done.stderr, "--github-output: cannot append to", "not a regular file (a FIFO)")


def test_class9_a_small_gzip_bomb_costs_the_cap_not_its_expansion(tmp_path):
    import gzip

    bomb = tmp_path / "lane.xml.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        out.write(b"<testsuites>")
        for _ in range(600):
            out.write(b" " * (1 << 20))
    assert bomb.stat().st_size < 1_000_000
    # The peak is the process's own VmHWM (its address space's high-water mark, new at exec):
    # getrusage's ru_maxrss survives execve, so a probe started from a worker that had torch
    # loaded reported the worker's 490 MB, not its own.
    probe = (
        "import re, sys\nfrom pathlib import Path\nfrom pytest_fl_contract.reporting import junit\n"
        "try:\n    junit.read(Path(sys.argv[1]))\nexcept ValueError as exc:\n    print(exc)\n"
        "print(re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text())[1])\n"
    )
    done = subprocess.run([PY, "-c", probe, str(bomb)], capture_output=True, text=True, timeout=60, env=_env())
    said, peak_kb = done.stdout.splitlines()
    assert said == f"lane.xml.gz: larger than {junit.MAX_REPORT_BYTES} bytes unzipped: refused"
    assert int(peak_kb) < 400 * 1024, f"{int(peak_kb) // 1024} MB to refuse it"


def test_class9_a_corrupt_or_odd_history_database_is_one_line(tmp_path):
    db = tmp_path / "h.sqlite"
    db.write_bytes(b"not a database at all" * 100)
    done = _cli("history", "add", str(_lane_xml(tmp_path)), "--db", str(db))
    assert done.returncode == 2
    one_line(done.stderr, "history database", "not a database")
    fifo = tmp_path / "f.sqlite"
    os.mkfifo(fifo)
    done = _cli("history", "add", str(_lane_xml(tmp_path)), "--db", str(fifo))
    assert done.returncode == 2
    one_line(done.stderr, "history database", "not a regular file")


@pytest.mark.parametrize(
    "error", ["attempt to write a readonly database", "database or disk is full", "database is locked"]
)
def test_class9_a_history_database_that_refuses_writes_is_one_line(tmp_path, monkeypatch, capsys, error):
    """What SQLite says of a read-only file, a full disk or another writer, whoever runs it
    (root writes a read-only file: the error is made where the write happens)."""
    from pytest_fl_contract.results import history

    class Refusing:
        def __init__(self, db):
            self.db = db

        def __getattr__(self, name):
            return getattr(self.db, name)

        def __enter__(self):
            self.db.__enter__()
            return self

        def __exit__(self, *exc):
            return self.db.__exit__(*exc)

        def execute(self, sql, *args):
            if sql.lstrip().lower().startswith("insert"):
                raise sqlite3.OperationalError(error)
            return self.db.execute(sql, *args)

    real = sqlite3.connect
    monkeypatch.setattr(history.sqlite3, "connect", lambda *a, **kw: Refusing(real(*a, **kw)))
    code, _, err = cli(capsys, "history", "add", str(_lane_xml(tmp_path)), "--db", str(tmp_path / "h.sqlite"))
    assert code == 2
    one_line(err, "history database", error)


def test_class9_a_lone_surrogate_in_the_tags_is_text_not_an_internal_error(tmp_path):
    tags = json.dumps({"m::t": {"op": "\ud800sum", "contract": "x\udfff"}})  # JSON's escapes, as a step may write
    (tmp_path / "lane.xml").write_text(
        _report("lane", [("t", "failed"), ("u", "passed")]).replace(
            '">', f'"><properties><property name="fl_cases" value="{tags.replace(chr(34), "&quot;")}"/></properties>', 1
        )
    )
    for argv in (
        ["history", "add", str(tmp_path / "lane.xml"), "--db", str(tmp_path / "h.sqlite")],
        ["html", str(tmp_path / "lane.xml"), "--out", str(tmp_path / "html")],
        ["compare", str(tmp_path / "lane.xml"), str(tmp_path / "lane.xml")],
    ):
        done = _cli(*argv)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr, (argv, done.stderr)
        assert done.returncode in (0, 1), (argv, done.stderr)


@pytest.mark.parametrize(
    "rows", [[{"ratio": 10**400}], [{"fast": 10**400, "native": 1}]], ids=["huge-ratio", "huge-fast"]
)
def test_class9_a_number_no_float_holds_is_one_line(tmp_path, rows):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(rows))
    done = _cli("html", str(_lane_xml(tmp_path)), "--out", str(tmp_path / "html"), "--bench", str(bench))
    assert done.returncode == 2 and "internal error" not in done.stderr
    one_line(done.stderr, 'has no finite, non-negative number "ratio"')


def test_class9_names_from_a_platforms_file_are_inert_in_markdown(tmp_path, capsys):
    name = "x|y`![i](http://e/i.png)<b>"
    platforms = tmp_path / "p.yaml"
    platforms.write_text(f"platforms:\n  {json.dumps(name)}:\n    device_type: cpu\n")
    code, out, _ = cli(capsys, "--platforms-file", str(platforms), "defects", "--platform", name, "--markdown")
    assert code == 0
    head = out.splitlines()[0]
    assert "![" not in head and "<b>" not in head and "\\|" in head and "\\`" in head


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: true\n", "unsupported version True"),
        ("version: 1.0\n", "unsupported version 1.0"),
        (
            'lanes:\n  l: {platform: cpu, description: [a, b], steps: [{name: s, command: ["true"]}]}\n',
            "description must be text, got a list",
        ),
        (
            'lanes:\n  l: {platform: cpu, image: {name: x}, steps: [{name: s, command: ["true"]}]}\n',
            "image must be text, got a mapping",
        ),
        (
            'lanes:\n  l: {platform: cpu, display_name: null, steps: [{name: s, command: ["true"]}]}\n',
            "display_name must be text, got null",
        ),
        (
            'lanes:\n  l: {platform: cpu, steps: [{name: s, description: [x], command: ["true"]}]}\n',
            "description must be text, got a list",
        ),
    ],
    ids=[
        "version-true",
        "version-float",
        "description-list",
        "image-mapping",
        "display-name-null",
        "step-description-list",
    ],
)
def test_class9_manifest_fields_take_only_their_type(tmp_path, capsys, text, message):
    manifest = tmp_path / "m.yaml"
    body = text if "lanes:" in text else text + 'lanes:\n  l: {platform: cpu, steps: [{name: s, command: ["true"]}]}\n'
    manifest.write_text(body)
    code, _, err = cli(capsys, "check", str(manifest))
    assert code == 2
    one_line(err, message)


def test_class9_history_case_matches_the_key_as_written(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    (tmp_path / "lane.xml").write_text(_report("lane", [("t_1", "failed"), ("tx1", "passed"), ("T_1", "passed")]))
    assert cli(capsys, "history", "add", str(tmp_path / "lane.xml"), "--db", str(db))[0] == 0
    capsys.readouterr()
    code, out, _ = cli(capsys, "history", "case", "m::t_1", "--db", str(db))
    assert code == 0 and out.count("\n") == 1 and "m::t_1: 1 run(s), first seen failing" in out
    code, _, err = cli(capsys, "history", "case", "m::t%1", "--db", str(db))
    assert code == 2 and "no case 'm::t%1'" in err


def test_class9_a_github_matrix_over_256_jobs_is_refused(tmp_path, capsys):
    lanes = "".join(
        f'  l{i}: {{platform: cpu, runner_labels: [self-hosted, x], steps: [{{name: s, command: ["true"]}}]}}\n'
        for i in range(257)
    )
    manifest = tmp_path / "m.yaml"
    manifest.write_text("lanes:\n" + lanes)
    code, out, err = cli(capsys, "--manifest", str(manifest), "matrix")
    assert code == 2 and out == ""
    one_line(err, "257 lanes selected: a GitHub Actions matrix holds at most 256 jobs")
