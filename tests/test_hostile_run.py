"""Hostile input (issue 15), runner and report side, with real subprocesses: whatever a
step prints, leaves running, writes over or is cancelled with, ``run`` ends with a merged
LANE.xml holding one case per step, no process of a step alive, output capped, and every
XML file valid xunit2 (pytest's junit-10.xsd); ``report`` fails what it cannot trust."""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fl_contract.lanes import runner
from pytest_fl_contract.lanes.manifest import Lane, Step
from pytest_fl_contract.lanes.runner import run_lane
from pytest_fl_contract.lanes.supervise import capped
from pytest_fl_contract.reporting import junit

from .conftest import ROOT
from .hostile import assert_all_valid, assert_valid_junit, cli, one_line

PY = sys.executable


def sh(name: str, script: str, **kw) -> Step:
    return Step(name, "command", ("sh", "-c", script), **kw)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that never comes in a container is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def lane_run(tmp_path: Path, *steps: Step, **kw):
    """Run a lane in process; check every XML it wrote against the schema; return the run,
    the progress text and the merged report's cases by name."""
    progress = io.StringIO()
    the_lane = kw.pop("lane", None) or Lane("l", "cpu", tuple(steps))
    run = run_lane(the_lane, tmp_path / "reports", progress=progress, **kw)
    files = assert_all_valid(tmp_path / "reports")
    assert tmp_path / "reports" / "l.xml" in files
    merged = junit.read(tmp_path / "reports" / "l.xml")
    assert junit.problems(merged) == []
    cases = {case.name: case for case in merged.cases}
    assert "Traceback" not in progress.getvalue()
    return run, progress.getvalue(), cases


def result(case: junit.Case) -> junit.Result:
    assert case.results, f"{case.name} passed"
    return case.results[0]


# -- what a step prints -----------------------------------------------------------------------

OUTPUT = [  # (id, script, outcome, what the case's text holds, what it must not)
    ("ansi-colour", r"printf '\033[31mFAILED\033[0m\n'; exit 1", "failed", "FAILED", "\x1b"),
    ("nul-and-ff", r"printf 'a\000b\377c\n'; exit 1", "failed", "a\\x00b\ufffdc", "\x00"),
    ("c0-controls", r"printf 'x\001\013\014\033y\n'; exit 2", "failed", "x\\x01\\x0b\\x0c", "\x01"),
    ("osc-title", r"printf '\033]0;title\007done\n'; exit 3", "failed", "done", "\x07"),
    ("utf8-surrogate", r"printf 'p\355\240\200q\n'; exit 1", "failed", "p\ufffd", "\ud800"),
    ("crash-after-colour", r"printf '\033[1mboom\n'; kill -SEGV $$", "error", "boom", "\x1b"),
]


@pytest.mark.parametrize("script, outcome, held, absent", [o[1:] for o in OUTPUT], ids=[o[0] for o in OUTPUT])
def test_what_a_step_prints_never_breaks_the_report(tmp_path, script, outcome, held, absent):
    run, _, cases = lane_run(tmp_path, sh("red", script), sh("after", "true"))
    assert not run.ok and run.exit_code == 1
    case = cases["red"]
    assert case.outcome == outcome and held in result(case).text and absent not in result(case).text
    assert cases["after"].outcome == "passed"


def test_a_pytest_step_with_colour_that_crashes_keeps_its_output(tmp_path):
    test = tmp_path / "test_crash.py"
    test.write_text(
        "import os, signal\ndef test_x():\n    print('\\x1b[31mred\\x00')\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    step = Step("crash", "pytest", (str(test), "--color=yes", "-s", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"))
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run, _, cases = lane_run(tmp_path, lane=Lane("l", "cpu", (step,), env=env))
    case = cases["crash"]
    assert case.outcome == "error" and result(case).message == "crashed: -11 SIGSEGV"
    assert "red\\x00" in result(case).text and "\x1b" not in result(case).text


# -- what a step leaves running ---------------------------------------------------------------

# A child that would live an hour: a runner that waited for it would time the passing steps out
# (an error, not a pass), so the outcome says it did not wait - no clock is read to say so.
LEFT = [  # (id, script writing its child's pid to {pid}, timeout, outcome, message)
    ("background-child", "sleep 3600 & echo $! > {pid}; echo started", 60, "passed", "killed 1 process(es)"),
    ("subshell-child", "(sleep 3600 >/dev/null 2>&1 & echo $! > {pid}); echo ok", 60, "passed", "killed 1 process(es)"),
    ("own-session-daemon", "setsid sleep 3600 </dev/null >/dev/null 2>&1 & echo $! > {pid}", 60, "passed", "killed 1"),
    ("timeout-with-child", "sleep 3600 & echo $! > {pid}; wait", 0.5, "error", "timed out after 0.5s"),
    ("closed-stdout-runs-on", "echo $$ > {pid}; exec >&- 2>&-; sleep 3600", 0.5, "error", "timed out after 0.5s"),
]


def gone(pid: int, guard: float = 60) -> bool:
    """Whether ``pid`` has exited, waiting for it on a pidfd (the moment it does); the guard
    ends only a hang."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], guard)[0])
    finally:
        os.close(fd)


@pytest.mark.parametrize("script, timeout, outcome, message", [x[1:] for x in LEFT], ids=[x[0] for x in LEFT])
def test_no_process_of_a_step_outlives_it(tmp_path, script, timeout, outcome, message):
    pid_file = tmp_path / "child.pid"
    run, progress, cases = lane_run(
        tmp_path, sh("bg", script.format(pid=pid_file), timeout=timeout), sh("later", "echo later")
    )
    assert cases["later"].outcome == "passed"  # the lane went on
    assert cases["bg"].outcome == outcome
    assert message in (result(cases["bg"]).message if outcome == "error" else progress)
    pid = int(pid_file.read_text())
    assert gone(pid), f"{pid} outlived its step"


def test_a_command_that_cannot_start_is_an_error_case(tmp_path):
    run, _, cases = lane_run(tmp_path, Step("ghost", "command", ("/nonexistent/tool", "x")))
    assert cases["ghost"].outcome == "error" and result(cases["ghost"]).message.startswith("cannot start: ")


@pytest.mark.parametrize(
    "script, message",
    [("kill -SEGV $$", "crashed: -11 SIGSEGV"), ("kill -KILL $$", "crashed: -9 SIGKILL"), ("sleep 5", "timed out")],
    ids=["segv", "sigkill", "timeout"],
)
def test_crashes_and_timeouts_are_error_cases_not_failures(tmp_path, script, message):
    run, progress, cases = lane_run(tmp_path, sh("s", script, timeout=0.5))
    assert result(cases["s"]).kind == "error" and result(cases["s"]).message.startswith(message)
    assert "| s | FAIL: error," in run.markdown and "| 0 | 0 | 1 | 0 |" in run.markdown  # errors column, not failed


# -- output cap -------------------------------------------------------------------------------


def test_output_is_capped_in_bytes_head_and_tail_and_logged_whole(tmp_path):
    script = "printf 'HEAD'; head -c 3000000 /dev/zero | tr '\\0' x; printf 'TAIL\\n'; exit 1"
    run, _, cases = lane_run(tmp_path, sh("flood", script), output_cap=2048)
    text = result(cases["flood"]).text
    assert text.startswith("HEADxxx") and text.endswith("xxTAIL\n")
    assert "bytes of output cut by fl-contract (output cap 2048 bytes)" in text and len(text) < 2300
    assert (tmp_path / "reports" / "l" / "flood.log").stat().st_size == 3000009
    assert (tmp_path / "reports" / "l.xml").stat().st_size < 5000


def test_output_cap_from_the_manifest_and_the_command_line(tmp_path, capsys):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "defaults: {output_cap: 1024}\nlanes: {l: {platform: cpu, steps: [{name: s, "
        "command: [sh, -c, 'seq 1 100000; exit 1']}]}}\n"
    )
    code, out, err = cli(capsys, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "a"))
    assert code == 1 and "Traceback" not in err
    text = result(junit.read(tmp_path / "a" / "l.xml").cases[0]).text
    assert text.startswith("1\n2\n") and text.endswith("99999\n100000\n") and len(text) < 1200
    cli(capsys, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "b"), "--output-cap", "4k")
    assert 4000 < len(result(junit.read(tmp_path / "b" / "l.xml").cases[0]).text) < 4300
    assert_all_valid(tmp_path)


def test_capped_keeps_short_output_whole_and_escapes_it():
    assert capped(b"ok\x1b[0m\n", 1024) == "ok\n"
    assert capped(b"\x00" * 3000, 1024).count("\\x00") == 1024


# -- cancelling -------------------------------------------------------------------------------


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "sigint"])
def test_cancel_keeps_every_step_and_kills_the_running_one(tmp_path, sig, code):
    pid_file = tmp_path / "child.pid"
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        textwrap.dedent(f"""
        lanes:
          l:
            platform: cpu
            steps:
              - {{name: first, command: [echo, one]}}
              - {{name: long, command: "trap '' TERM; sleep 30 & echo $! > {pid_file}; echo waiting; wait", shell: true}}
              - {{name: later, command: [echo, two]}}
    """)
    )
    proc = subprocess.Popen(
        [PY, "-m", "pytest_fl_contract.cli", "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "r" / "l" / "long.log"
    deadline = time.monotonic() + 300  # a hang guard: the wait ends when the step has said it waits
    while not (log.exists() and "waiting" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "the step never said it was waiting"
        time.sleep(0.02)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == code, out + err
    one_line(err, f"cancelled by {sig.name}: 1 step(s) not run")
    assert_all_valid(tmp_path / "r")
    cases = {c.name: c for c in junit.read(tmp_path / "r" / "l.xml").cases}
    assert list(cases) == ["first", "long", "later"]
    assert cases["first"].outcome == "passed"
    assert result(cases["long"]).kind == "error" and result(cases["long"]).message == f"cancelled by {sig.name}"
    assert "waiting" in result(cases["long"]).text
    assert result(cases["later"]).message == f"not run: cancelled by {sig.name}"
    assert f"CANCELLED BY {sig.name}" in out
    assert gone(int(pid_file.read_text()))


# -- per-step XML that is hostile ---------------------------------------------------------------

PASSING = '<testsuite name="pytest" tests="1" failures="0" errors="0"><testcase classname="m" name="t" time="0.1"/></testsuite>'
STEP_XML = [  # (id, what the fake pytest step writes, exit code, outcome of the step's added case, message)
    ("time-abc", PASSING.replace('time="0.1"', 'time="abc"'), 0, "error", "time 'abc' is not a number"),
    ("no-cases", '<testsuite name="pytest" tests="0" failures="0" errors="0"/>', 0, "error", "no test cases"),
    ("counts-disagree", PASSING.replace('tests="1"', 'tests="5"'), 0, "error", "says tests=5 but its cases give 1"),
    (
        "suite-level-error",
        PASSING.replace("<testcase", '<error message="setup"/><testcase'),
        0,
        "error",
        "suite-level <error>: setup",
    ),
    (
        "bad-summary",
        PASSING.replace("<testcase", '<properties><property name="fl_summary" value="{[" /></properties><testcase'),
        0,
        "error",
        "malformed fl_summary property",
    ),
    ("garbage", "<testsuite><oops", 1, "error", "malformed JUnit XML s.xml"),
    (
        "entities",
        '<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite name="x" tests="0"/>',
        0,
        "error",
        "declares a DTD or entities",
    ),
    ("wrong-root", "<html/>", 0, "error", "root element <html>"),
    ("valid", PASSING, 0, "passed", ""),
]


@pytest.mark.parametrize("xml, code, outcome, message", [x[1:] for x in STEP_XML], ids=[x[0] for x in STEP_XML])
def test_a_pytest_steps_own_xml_cannot_lose_the_lane(tmp_path, monkeypatch, xml, code, outcome, message):
    def fake_argv(the_lane, step, report):
        if step.kind == "command":
            return list(step.args)
        return [PY, "-c", f"import sys; open({str(report)!r}, 'w').write({xml!r}); sys.exit({code})"]

    monkeypatch.setattr(runner, "step_argv", fake_argv)
    run, _, cases = lane_run(tmp_path, Step("s", "pytest", ()), sh("after", "true"))
    assert cases["after"].outcome == "passed"
    added = cases.get("s")
    if outcome == "passed":
        assert run.ok and cases["t"].outcome == "passed"
    else:
        assert not run.ok and added is not None and result(added).kind == "error"
        assert message in result(added).message, result(added).message


def test_a_later_step_cannot_spoil_an_earlier_steps_case(tmp_path):
    earlier = tmp_path / "reports" / "l" / "first.xml"
    run, _, cases = lane_run(
        tmp_path,
        sh("first", "echo fine"),
        sh("vandal", f"printf '<garbage' > {earlier}; mkdir -p {earlier.parent / 'third.xml'}"),
        sh("third", "echo three"),
    )
    assert cases["first"].outcome == "passed" and cases["vandal"].outcome == "passed"
    assert cases["third"].outcome == "passed"  # the runner clears its own report path before a step
    assert (tmp_path / "reports" / "l" / "third.xml").is_file()
    assert list(cases) == ["first", "vandal", "third"]
    assert junit.read(earlier).cases[0].outcome == "passed"  # rewritten from what the runner holds


def test_a_step_that_wrecks_the_report_directory_still_gets_its_case(tmp_path):
    lane_dir = tmp_path / "reports" / "l"
    run, _, cases = lane_run(
        tmp_path, sh("first", "true"), sh("wrecker", f"rm -rf {lane_dir}; touch {lane_dir}"), sh("after", "echo after")
    )
    assert list(cases) == ["first", "wrecker", "after"] and cases["first"].outcome == "passed"
    assert result(cases["wrecker"]).message == "cannot write wrecker.xml: Not a directory"
    assert result(cases["after"]).kind == "error" and "after" in result(cases["after"]).text


def test_a_bug_in_the_step_runner_is_an_error_case_not_a_lost_lane(tmp_path):
    def exploding(lane, step, reports, progress, cancel=None, token=None):
        if step.name == "bad":
            raise TypeError("boom")
        return runner.run_step(lane, step, reports, progress, cancel=cancel)

    run, _, cases = lane_run(tmp_path, sh("bad", "true"), sh("good", "true"), step_runner=exploding)
    assert result(cases["bad"]).message == "fl-contract runner error: TypeError: boom"
    assert cases["good"].outcome == "passed" and run.exit_code == 1


# -- refused before anything runs -------------------------------------------------------------


def _manifest(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text("lanes: {l: {platform: cpu, steps: [{name: s, command: [sh, -c, 'true']}]}}\n")
    return path


@pytest.mark.parametrize(
    "prepare, args, message",
    [
        (lambda t: (t / "file").write_text("x"), ["--reports", "file"], "--reports file: not a directory"),
        (lambda t: (t / "r" / "l.xml").mkdir(parents=True), ["--reports", "r"], "r/l.xml: it is a directory"),
        (lambda t: (t / "r").mkdir() or (t / "r" / "l").write_text("x"), ["--reports", "r"], "cannot create"),
        (lambda t: None, ["--output-cap", "lots"], "--output-cap 'lots': expected a number of bytes"),
        (lambda t: None, ["--output-cap", "12"], "must be between 1024 and"),
        (lambda t: None, ["--step", "nope"], "lane 'l' has no step 'nope'"),
    ],
    ids=[
        "reports-is-a-file",
        "lane-xml-is-a-dir",
        "lane-dir-is-a-file",
        "cap-not-a-number",
        "cap-too-small",
        "unknown-step",
    ],
)
def test_run_refuses_in_one_line(tmp_path, capsys, monkeypatch, prepare, args, message):
    monkeypatch.chdir(tmp_path)
    prepare(tmp_path)
    code, out, err = cli(capsys, "--manifest", str(_manifest(tmp_path)), "run", "l", *args)
    assert code == 2, out + err
    one_line(err, message)


def test_an_unwritable_step_summary_is_one_line_not_a_lost_lane(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))
    code, out, err = cli(capsys, "--manifest", str(_manifest(tmp_path)), "run", "l", "--reports", str(tmp_path / "r"))
    assert code == 0 and "passed" in out
    one_line(err, "cannot append the summary to $GITHUB_STEP_SUMMARY")
    assert_all_valid(tmp_path / "r")


# -- report ------------------------------------------------------------------------------------

CASE = '<testcase classname="m" name="t" time="0.100"/>'
OTHER = CASE.replace('name="t"', 'name="u"')
REPORTS = [  # (id, file content, exit code, the one line on stderr, or None)
    ("empty-testsuites", "<testsuites/>", 1, "no test cases"),
    ("empty-testsuites-whitespace", "<testsuites>\n  </testsuites>", 1, "no test cases"),
    (
        "counts-without-cases",
        '<testsuite name="x" tests="5" failures="3" errors="0"/>',
        1,
        "no test cases: a report that ran nothing is not a pass (and 2 more)",
    ),
    (
        "suite-level-error",
        f'<testsuite name="x" tests="1" errors="0" failures="0"><error message="boom"/>{CASE}</testsuite>',
        1,
        "suite-level <error>: boom",
    ),
    (
        "suite-level-failure",
        f'<testsuite name="x" tests="1" errors="0" failures="0">{CASE}<failure message="f"/></testsuite>',
        1,
        "suite-level <failure>: f",
    ),
    (
        "tests-too-few",
        f'<testsuite name="x" tests="1" failures="0" errors="0">{CASE}{OTHER}</testsuite>',
        1,
        "says tests=1 but its cases give 2",
    ),
    (
        "failures-hidden",
        f'<testsuite name="x" tests="1" failures="0" errors="0">'
        f'{CASE[:-2]}><failure message="no"/></testcase></testsuite>',
        1,
        "says failures=0",
    ),
    (
        "root-disagrees",
        f'<testsuites tests="9"><testsuite name="x" tests="1" failures="0" errors="0">{CASE}</testsuite></testsuites>',
        1,
        "the root says tests=9",
    ),
    (
        "time-abc",
        f'<testsuite name="x" tests="1" failures="0" errors="0">{CASE.replace("0.100", "abc")}</testsuite>',
        1,
        "time 'abc' is not a number",
    ),
    ("time-negative", f'<testsuite name="x" tests="1" time="-3">{CASE}</testsuite>', 1, "time '-3' is not a duration"),
    ("count-not-a-number", f'<testsuite name="x" tests="one">{CASE}</testsuite>', 1, "tests='one' is not a count"),
    (
        "bad-summary",
        f'<testsuite name="x"><properties><property name="fl_summary" value="[]"/></properties>{CASE}</testsuite>',
        1,
        "malformed fl_summary property",
    ),
    ("malformed", "<testsuite><oops", 2, "malformed JUnit XML bad.xml: ParseError"),
    ("wrong-root", "<html><body/></html>", 2, "root element <html>, not <testsuites>"),
    (
        "billion-laughs",
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        "<testsuite>&b;</testsuite>",
        2,
        "declares a DTD or entities (refused)",
    ),
    ("binary", b"\x89PNG\r\n\x1a\n\0\0", 2, "malformed JUnit XML bad.xml"),
    ("empty-file", "", 2, "malformed JUnit XML bad.xml"),
    (
        "double-entry-is-fine",
        '<testsuite name="x" tests="1" failures="1" errors="1">'
        '<testcase classname="m" name="t"><failure message="call"/></testcase>'
        '<testcase classname="m" name="t"><error message="teardown"/></testcase></testsuite>',
        1,
        None,
    ),
    (
        "passing",
        f'<testsuites><testsuite name="x" tests="1" failures="0" errors="0" skipped="0">{CASE}</testsuite>'
        "</testsuites>",
        0,
        None,
    ),
]


@pytest.mark.parametrize("content, code, message", [r[1:] for r in REPORTS], ids=[r[0] for r in REPORTS])
def test_report_fails_what_it_cannot_trust_in_one_line(tmp_path, capsys, content, code, message):
    path = tmp_path / "bad.xml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    got, out, err = cli(capsys, "report", str(path))
    assert got == code, out + err
    if message is None:
        assert err == ""
    else:
        line = one_line(err, message)
        assert line.startswith("fl-contract: error: malformed" if code == 2 else f"fl-contract: {path}:"), line


@pytest.mark.parametrize(
    "target, message",
    [(".", "not a regular file (a directory)"), ("missing.xml", "No such file")],
    ids=["a-directory", "missing"],
)
def test_report_of_what_is_not_a_file_is_one_line(tmp_path, capsys, monkeypatch, target, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "report", target)
    assert code == 2
    one_line(err, "cannot read", message)


# -- every XML we write validates -------------------------------------------------------------

hostile_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(name=hostile_text, message=hostile_text, output=hostile_text, seconds=st.floats(allow_nan=True))
def test_any_text_makes_valid_xunit2(tmp_path_factory, name, message, output, seconds):
    case = junit.Case(
        name,
        name,
        seconds if seconds == seconds and 0 <= seconds < 1e12 else 0.0,
        (junit.Result("failure", message, message, output),),
        output,
        output,
    )
    report = junit.Report((junit.Suite(name, (case,), ((name, message),)),))
    path = tmp_path_factory.mktemp("xsd") / "any.xml"
    junit.write(report, path, name=name)
    assert_valid_junit(path)
    back = junit.read(path)
    assert junit.problems(back) == [] and back.cases[0].outcome == "failed"


def test_pytests_own_xunit2_validates_against_the_schema_we_use(tmp_path):
    """The schema is the one pytest's output satisfies: errors, failures, skips, xfails."""
    (tmp_path / "test_all.py").write_text(
        textwrap.dedent("""
        import pytest
        @pytest.fixture
        def broken():
            raise ValueError("setup")
        def test_error(broken): pass
        def test_fail(): assert 0
        def test_skip(): pytest.skip("why")
        @pytest.mark.xfail(strict=True)
        def test_xpass(): pass
        @pytest.mark.xfail
        def test_xfail(): assert 0
    """)
    )
    subprocess.run(
        [
            PY,
            "-m",
            "pytest",
            "-p",
            "no:fl_contract",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--junitxml={tmp_path / 'out.xml'}",
            str(tmp_path / "test_all.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert_valid_junit(tmp_path / "out.xml")
    assert junit.problems(junit.read(tmp_path / "out.xml")) == []
