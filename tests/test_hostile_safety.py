"""Hostile input (issue 27): an installed plugin that stays out of the way, verdicts nothing
can fake, a runner no step can hang or escape.  Each test names the issue's item it holds
to; each failed on the main of that day (the plugin broke a foreign suite, a broken
environment turned an expect-fail lane green, a FIFO hung the runner, ...)."""

from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_fl_contract.lanes import runner
from pytest_fl_contract.lanes.manifest import Lane, Step
from pytest_fl_contract.reporting import junit

from .conftest import ROOT
from .hostile import assert_all_valid, cli, one_line

PY = sys.executable
CLI = [PY, "-m", "pytest_fl_contract.cli"]

# -- 1 and 15: installed but not asked for, the plugin changes nothing --------------------

FOREIGN = """
import sys
import pytest

def test_pass():
    assert not {"torch", "triton", "flag_gems", "pytest_fl_contract.session"} & set(sys.modules)

def test_fail():
    assert 1 == 2

@pytest.mark.skip(reason="not here")
def test_skip():
    pass
"""


def _comparable(text: str) -> str:
    """pytest's output with its timings and its list of installed plugins taken out."""
    text = re.sub(r"in \d+\.\d+s( \([0-9:]+\))?", "in Ns", text)
    return "\n".join(line for line in text.splitlines() if not line.startswith("plugins:"))


@pytest.mark.parametrize(
    "env", [{}, {"GEMS_VENDOR": "nvidia", "CUDA_VISIBLE_DEVICES": "0"}], ids=["no-accelerator", "an-accelerator-named"]
)
def test_item1_a_foreign_suite_runs_as_if_the_plugin_were_not_installed(pytester, run_subprocess, env):
    """Autoload on (as ``pip install`` leaves it): same exit, same output, no header line,
    no import of torch / triton / flag_gems, with and without a vendor named."""
    pytester.makepyfile(test_foreign=FOREIGN)
    quiet = ("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")  # a reordering plugin, if installed, stays out
    installed = run_subprocess(*quiet, autoload=True, timeout=120, env=env)
    absent = run_subprocess(*quiet, "-p", "no:fl_contract", autoload=True, timeout=120, env=env)
    assert installed.ret == absent.ret == pytest.ExitCode.TESTS_FAILED
    assert _comparable(installed.stdout.str()) == _comparable(absent.stdout.str())
    assert installed.stderr.str() == absent.stderr.str()
    assert "fl-contract" not in _comparable(installed.stdout.str()) and "1 passed" in installed.stdout.str()


@pytest.mark.parametrize(
    "how, args, env, ini",
    [
        ("-p fl_contract", ["-p", "fl_contract", "--platform", "nvidia"], {}, ""),
        ("-p pytest_fl_contract.plugin", ["-p", "pytest_fl_contract.plugin", "--platform", "nvidia"], {}, ""),
        ("FL_PLATFORM", [], {"FL_PLATFORM": "nvidia"}, ""),
        ("ini fl_platform", [], {}, "[pytest]\nfl_platform = nvidia\n"),
        ("--platform", ["--platform", "nvidia"], {}, ""),
    ],
    ids=["-p-fl_contract", "-p-module-item15", "env", "ini", "--platform"],
)
def test_item1_the_plugin_is_active_when_a_run_asks_for_it(pytester, run_subprocess, how, args, env, ini):
    """Naming a platform or loading the plugin by name (either of its names: the module name
    used to crash with "Plugin already registered" under autoload) makes it active."""
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    if ini:
        pytester.makefile(".ini", pytest=ini)
    result = run_subprocess("-p", "no:cacheprovider", *args, autoload=True, timeout=120, env=env)
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    assert "fl-contract 0" in out and "platform nvidia" in out and "already registered" not in out + result.stderr.str()


def test_item1_a_fixture_of_the_inactive_plugin_says_how_to_activate_it(pytester, run_subprocess):
    pytester.makepyfile(test_a="def test_a(fl_settings):\n    pass\n")
    result = run_subprocess("-p", "no:cacheprovider", autoload=True, timeout=120)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "fl-contract is installed but not active in this run" in result.stdout.str()


# -- 2: an expected failure holds only for a failed contract case ---------------------------


def _lane(tmp_path: Path, *steps: Step, platform: str = "nvidia") -> tuple[runner.LaneRun, str, dict[str, junit.Case]]:
    progress = io.StringIO()
    run = runner.run_lane(Lane("l", platform, tuple(steps)), tmp_path / "reports", progress=progress)
    assert_all_valid(tmp_path / "reports")
    cases = {c.name: c for c in junit.read(tmp_path / "reports" / "l.xml").cases}
    return run, progress.getvalue(), cases


def _suite(tmp_path: Path, name: str, body: str, conftest: str = "", **kw) -> Step:
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"test_{name}.py").write_text(textwrap.dedent(body))
    if conftest:
        (folder / "conftest.py").write_text(textwrap.dedent(conftest))
    return Step(name, "pytest", (str(folder), "-q", "-p", "no:cacheprovider", f"--rootdir={folder}"), **kw)


def test_item2_cases_that_all_error_are_not_a_caught_defect(tmp_path):
    step = _suite(
        tmp_path,
        "errors",
        """
        import pytest
        @pytest.fixture
        def flag_gems():
            raise ImportError("no flag_gems")
        def test_a(flag_gems): pass
        def test_b(flag_gems): pass
    """,
        expect="fail",
    )
    run, progress, _ = _lane(tmp_path, step)
    assert not run.ok and run.exit_code == 1
    assert "expected to fail: NOT caught: 2 case(s) errored" in progress


def test_item2_a_changed_exit_status_is_not_a_verdict(tmp_path):
    """A conftest that sets ``session.exitstatus`` turns neither a passing suite into a
    caught defect nor a failing one into a pass."""
    red = _suite(
        tmp_path,
        "red",
        "def test_a(): pass\n",
        expect="fail",
        conftest="""
        def pytest_sessionfinish(session):
            session.exitstatus = 1
    """,
    )
    green = _suite(
        tmp_path,
        "green",
        "def test_a(): assert 0\n",
        conftest="""
        def pytest_sessionfinish(session):
            session.exitstatus = 0
    """,
    )
    run, progress, cases = _lane(tmp_path, red, green)
    assert not run.ok
    assert run.results[0].verdict == "error" and "exit 1, but none of the 1 case(s)" in run.results[0].detail
    assert run.results[1].verdict == "error" and "exit 0, but its JUnit report holds 1 failed" in run.results[1].detail
    assert "NOT caught" in progress


def test_item2_a_failed_case_is_a_caught_defect_and_the_summary_names_it(tmp_path):
    run, progress, _ = _lane(
        tmp_path, _suite(tmp_path, "caught", "def test_a(): assert 0\ndef test_b(): pass\n", expect="fail")
    )
    assert run.ok and run.exit_code == 0
    assert "expected to fail: defect caught: 1 failed" in progress


@pytest.mark.parametrize(
    "script",
    [
        f"{PY} -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; exit $?",
        "sh -c 'kill -SEGV $$'; exit $?",
    ],
    ids=["child-segfaults", "exit-139"],
)
def test_item2_a_signal_reported_by_a_shell_is_a_crash(tmp_path, script):
    run, _, cases = _lane(tmp_path, Step("s", "command", ("bash", "-c", script)), platform="cpu")
    assert not run.ok
    result = cases["s"].results[0]
    assert result.kind == "error" and result.message.startswith("crashed: exit 139") and "SIGSEGV" in result.message


def test_item2_a_command_that_is_not_found_is_an_error_and_cannot_expect_failure(tmp_path, capsys):
    run, _, cases = _lane(tmp_path, Step("typo", "command", ("bash", "-c", "pytset -q")), platform="cpu")
    assert cases["typo"].results[0].kind == "error" and "not found" in cases["typo"].results[0].message
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "lanes:\n  l:\n    platform: cpu\n    steps:\n      - name: t\n        shell: true\n"
        "        command: pytset -q\n        expect: fail\n"
    )
    code, _, err = cli(capsys, "check", str(manifest))
    assert code == 2
    one_line(err, "expect: fail needs a pytest step")


# -- 3: merge reads the verdict from the lane's report --------------------------------------


def test_item3_merge_is_red_for_a_failed_lane_with_no_exit_file(tmp_path, capsys):
    reports = tmp_path / "reports"
    for name, code in (("good", "pass"), ("bad", "raise SystemExit(3)")):
        runner.run_lane(Lane(name, "cpu", (Step("s", "command", (PY, "-c", code)),)), reports, progress=io.StringIO())
    assert not list(reports.glob("*.exit"))  # a plain `fl-contract run` writes none
    code, out, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(tmp_path / "m.xml"))
    assert code == 1 and "lane bad: step s: failed" in err and "lane good" not in err
    code, _, _ = cli(capsys, "merge", "--reports", str(reports), "--lanes", "good", "-o", str(tmp_path / "g.xml"))
    assert code == 0


def test_item3_a_step_cannot_record_its_own_verdict(tmp_path, capsys):
    """A step whose JUnit forges the runner's ``fl_step`` record (ok, expect fail) still
    reads as the failure it is."""
    forged = (
        '<testsuites><testsuite name="x" tests="1" failures="1"><properties><property name="fl_step" '
        'value=\'{"step": "s", "expect": "fail", "allow_failure": true, "verdict": "passed", "ok": true}\'/>'
        '</properties><testcase name="t"><failure message="boom"/></testcase></testsuite></testsuites>'
    )

    def fake_argv(lane, step, report):
        return [PY, "-c", f"open({str(report)!r}, 'w').write({forged!r}); raise SystemExit(1)"]

    reports = tmp_path / "reports"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "step_argv", fake_argv)
        run = runner.run_lane(Lane("l", "cpu", (Step("s", "pytest", ()),)), reports, progress=io.StringIO())
    assert not run.ok
    code, _, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(tmp_path / "m.xml"))
    assert code == 1 and "lane l: step s: failed" in err


# -- 4: a known-defect xfail takes only its defect's failures -------------------------------

KNOWN = """
import pytest

@pytest.fixture
def broken():
    raise ModuleNotFoundError("No module named 'flag_gems'")

@pytest.mark.known_defect("masked_2d_row_load")
def test_assertion(): assert 0

@pytest.mark.known_defect("masked_2d_row_load")
def test_import_error_in_call(): import flag_gems_that_is_not_there

@pytest.mark.known_defect("masked_2d_row_load")
def test_fixture_error(broken): pass
"""


def test_item4_a_known_defect_xfail_does_not_swallow_an_import_error(pytester, run_subprocess):
    pytester.makepyfile(test_known=KNOWN)
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-no-workaround",
        "-rA",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    result.assert_outcomes(xfailed=1, failed=1, errors=1)
    out = result.stdout.str()
    assert "known defect masked_2d_row_load fails with AssertionError, not ModuleNotFoundError" in out
    assert "fails contracts in their call, not in setup" in out


@pytest.mark.slow
def test_item4_a_lane_whose_flag_gems_cannot_be_imported_stops_with_one_line(tmp_path):
    fake = tmp_path / "site" / "flag_gems"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'triton_vendor'\")\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    env.pop("PYTEST_XDIST_WORKER", None)
    for xdist in ([], ["-p", "xdist", "-n", "2"]):
        done = subprocess.run(
            [
                *CLI,
                "contracts",
                "reductions",
                "--",
                "--platform",
                "cpu",
                "-q",
                "-p",
                "no:randomly",
                "-k",
                "accuracy",
                *xdist,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-2000:]
        assert "xfailed" not in done.stdout and "INTERNALERROR" not in done.stdout
        stop = [line for line in done.stdout.splitlines() if "Interrupted: cannot import flag_gems" in line]
        assert len(stop) == 1 and "ModuleNotFoundError: No module named 'triton_vendor'" in stop[0]
        assert re.search(r"\b[12] errors? in", done.stdout), done.stdout[-500:]


# -- 6: a FIFO anywhere is one line, never a block ------------------------------------------


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _cli_subprocess(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})}
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{fifo}"],
        ["--platforms-file", "{fifo}", "defects", "--platform", "nvidia"],
        ["report", "{fifo}"],
        ["import", "{fifo}"],
    ],
    ids=["manifest", "platforms-file", "report", "import"],
)
def test_item6_a_fifo_given_as_an_input_is_one_line(tmp_path, argv):
    fifo = _fifo(tmp_path / "cuda.yml")
    done = _cli_subprocess(*[a.format(fifo=fifo) for a in argv], timeout=30)
    assert done.returncode == 2, done.stderr
    one_line(done.stderr, "not a regular file (a FIFO)")


def test_item6_a_fifo_as_the_plugins_platforms_file_is_one_usage_line(pytester, run_subprocess):
    _fifo(pytester.path / "vendor.yaml")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "nvidia",
        "--fl-platforms-file",
        "vendor.yaml",
        "-p",
        "no:cacheprovider",
        timeout=60,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    one_line(result.stderr.str(), "not a regular file (a FIFO)")


def test_item6_a_fifo_as_the_step_summary_is_one_line(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("lanes:\n  l:\n    platform: cpu\n    steps:\n      - {name: s, command: [true]}\n")
    fifo = _fifo(tmp_path / "summary")
    done = _cli_subprocess(
        "--manifest",
        str(manifest),
        "run",
        "l",
        "--reports",
        str(tmp_path / "r"),
        env={"GITHUB_STEP_SUMMARY": str(fifo)},
        timeout=60,
    )
    assert done.returncode == 0
    one_line(done.stderr, "cannot append the summary to $GITHUB_STEP_SUMMARY", "not a regular file (a FIFO)")


def test_item6_fifos_a_step_makes_in_the_reports_never_block_the_runner(tmp_path):
    """A step that makes FIFOs at its own JUnit path, at LANE.xml and at a later step's log:
    the run ends, every step is in LANE.xml, the FIFOs replaced by files."""
    reports = tmp_path / "reports"
    mk = f"import os; d = {str(reports)!r}; [os.mkfifo(p) for p in (d + '/l/s.xml', d + '/l.xml', d + '/l/later.log')]"

    def fake_argv(lane, step, report):
        return [PY, "-c", mk] if step.name == "s" else [PY, "-c", "print('later ran')"]

    box: dict[str, object] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "step_argv", fake_argv)
        lane = Lane("l", "cpu", (Step("s", "pytest", ()), Step("later", "command", ())))
        thread = threading.Thread(target=lambda: box.update(run=runner.run_lane(lane, reports, progress=io.StringIO())))
        thread.start()
        thread.join(60)
    assert not thread.is_alive(), "the runner blocked on a FIFO"
    run = box["run"]
    assert [r.verdict for r in run.results] == ["error", "passed"]  # type: ignore[attr-defined]
    assert "not a regular file" in run.results[0].detail  # type: ignore[attr-defined]
    assert (reports / "l.xml").is_file() and (reports / "l" / "later.log").read_text().strip() == "later ran"
    assert {c.name for c in junit.read(reports / "l.xml").cases} == {"s", "later"}


# -- 7 and 8: nothing a step starts survives it, or the runner ------------------------------

# Every generation holds the FIFO ``alive`` open for writing: the test's read end sees its end of
# file when the last of them is gone - an event, where a look at /proc can miss a process that
# is between two forks.
ESCAPER = """
import os, sys, time
marker, alive = sys.argv[1], sys.argv[2]
held = os.open(alive, os.O_WRONLY)
os.write(held, b"x")
def generation():
    while True:
        if os.fork():
            os._exit(0)  # the parent leaves at once: its child is an orphan
        os.setsid()
        time.sleep(0.003)
if os.fork() == 0:
    os.environ.pop("FL_CONTRACT_STEP_TOKEN", None)  # drops the step's environment too
    generation()
time.sleep(0.2)
"""


def _gone(pid: int, guard: float = 60) -> bool:
    """Whether ``pid`` has exited, waiting on a pidfd (the moment it does; the guard ends a hang)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], guard)[0])
    finally:
        os.close(fd)


def _alive_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmdline and state not in "ZX":
                found.append(int(entry))
    return found


@pytest.mark.parametrize("attempt", range(3))
def test_item7_a_process_that_forks_and_setsids_away_does_not_outlive_its_step(tmp_path, attempt):
    marker, alive = f"escaper-{os.getpid()}-{attempt}", tmp_path / "alive"
    os.mkfifo(alive)
    reader = os.open(alive, os.O_RDONLY | os.O_NONBLOCK)  # open first: the escaper's open does not block
    try:
        step = Step("s", "command", (PY, "-c", ESCAPER, marker, str(alive)))
        run, _, cases = _lane(tmp_path, step, platform="cpu")
        seen = b""
        while True:  # every generation gone: end of file (the guard ends only a hang)
            assert select.select([reader], [], [], 60)[0], "an escaper outlived its step"
            chunk = os.read(reader, 4096)
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(reader)
    assert seen == b"x"  # the escaper did start, and held the FIFO
    assert _alive_with(marker) == []
    assert "process(es) it left behind" in run.results[0].detail
    assert "process(es) it left behind" in cases["s"].system_out  # the case records what was killed


SLEEPER_MANIFEST = """
lanes:
  l:
    platform: cpu
    steps:
      - name: sleeper
        command: [{py}, -c, "import sys, time; print('started', flush=True); time.sleep(120)", {marker}]
      - name: after
        command: [true]
"""


def _start_run(tmp_path: Path, marker: str) -> subprocess.Popen:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(SLEEPER_MANIFEST.format(py=json.dumps(PY), marker=marker))
    proc = subprocess.Popen(
        [*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    log = tmp_path / "r" / "l" / "sleeper.log"
    deadline = time.monotonic() + 300  # a hang guard: the wait ends when the step has said it started
    while not (log.exists() and "started" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "the sleeper step never started"
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGQUIT", "SIGUSR1", "SIGALRM"])
def test_item8_signals_besides_term_cancel_the_run_and_keep_the_reports(tmp_path, sig):
    marker = f"sleeper-{os.getpid()}-{sig}"
    proc = _start_run(tmp_path, marker)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + getattr(signal, sig), err
    assert _alive_with(marker) == []
    cases = {c.name: c for c in junit.read(tmp_path / "r" / "l.xml").cases}
    assert cases["sleeper"].results[0].message == f"cancelled by {sig}"
    assert cases["after"].results[0].kind == "skipped"
    assert "started" in (tmp_path / "r" / "l" / "sleeper.log").read_text()


def test_item8_a_killed_runner_takes_its_step_along_and_the_next_run_says_so(tmp_path):
    marker = f"sleeper-{os.getpid()}-kill"
    proc = _start_run(tmp_path, marker)
    sleepers = _alive_with(marker)
    proc.kill()
    proc.wait(60)
    assert sleepers and all(_gone(pid) for pid in sleepers), "the step outlived the runner killed by SIGKILL"
    assert "started" in (tmp_path / "r" / "l" / "sleeper.log").read_text()  # the log was not sitting in a buffer
    (tmp_path / "m.yaml").write_text(
        "lanes:\n  l:\n    platform: cpu\n    steps:\n      - {name: s, command: [true]}\n"
    )
    done = subprocess.run(
        [*CLI, "--manifest", str(tmp_path / "m.yaml"), "run", "l", "--reports", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "the last run of lane l" in done.stdout and "did not finish" in done.stdout and "'sleeper'" in done.stdout


# -- 9: reports ------------------------------------------------------------------------------


def test_item9_a_deeply_nested_summary_property_is_a_problem_not_an_internal_error(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.xml"
    path.write_text(
        f'<testsuites><testsuite name="s" tests="1"><properties><property name="fl_summary" '
        f'value="{deep}"/></properties><testcase name="t"/></testsuite></testsuites>'
    )
    code, _, err = cli(capsys, "report", str(path))
    assert code == 1
    one_line(err, "malformed fl_summary property: nested too deeply")


def test_item9_a_utf16_document_with_entities_is_refused_by_the_parser(tmp_path, capsys):
    text = (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<testsuites><testsuite name="s" tests="1"><testcase name="&b;"/></testsuite></testsuites>'
    )
    path = tmp_path / "u16.xml"
    path.write_bytes(text.encode("utf-16"))
    code, _, err = cli(capsys, "report", str(path))
    assert code == 2
    one_line(err, "declares a DTD or entities (refused)")


def test_item9_lane_xml_keeps_what_the_step_output_cap_keeps(tmp_path):
    step = Step("loud", "command", (PY, "-c", "print('x' * 300_000); raise SystemExit(1)"), output_cap=1024 * 1024)
    run, _, cases = _lane(tmp_path, step, platform="cpu")
    assert len(cases["loud"].results[0].text) > 300_000
    assert len(junit.read(tmp_path / "reports" / "l" / "loud.xml").cases[0].results[0].text) > 300_000


def test_item9_a_failed_write_keeps_the_old_report_whole(tmp_path, monkeypatch):
    from pytest_fl_contract import files

    target = tmp_path / "l.xml"
    target.write_bytes(b"old")

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        files.write_atomic(target, b"new" * 1000)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["l.xml"]


def test_item9_two_runs_of_one_lane_into_one_directory(tmp_path):
    marker = f"sleeper-{os.getpid()}-twice"
    first = _start_run(tmp_path, marker)
    try:
        second = subprocess.run(
            [*CLI, "--manifest", str(tmp_path / "m.yaml"), "run", "l", "--reports", str(tmp_path / "r")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        one_line(second.stderr, "lane l is already running into", "give this run another --reports")
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 143


# -- 10 to 16: inputs read as written, messages that name the problem ------------------------


def test_item10_double_dash_is_argparse_s_outside_contracts(tmp_path, capsys):
    good, bad = tmp_path / "good.xml", tmp_path / "failing.xml"
    junit.write(junit.single_case("l", "s", 0.1, None), good)
    junit.write(junit.single_case("l", "s", 0.1, junit.Result("failure", "boom")), bad)
    code, out, _ = cli(capsys, "report", str(good), "--", str(bad))
    assert code == 1 and "| failing | FAIL |" in out


MANIFEST_AS_WRITTEN = """
version: 1
shared_steps:
  base: &base
    command: [true]
    env: {VERSION: 2.10, OCTAL: 010, CLOCK: 12:30, FLAG: true}
lanes:
  123:
    platform: cpu
    steps:
      - name: s
        <<: *base
        timeout: 30
"""


def test_items11_12_16_values_names_and_merge_keys_as_written(tmp_path, capsys):
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.lanes.manifest import load

    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST_AS_WRITTEN)
    lane = load(path, load_registry()).lanes["123"]
    step = lane.steps[0]
    assert step.env == {"VERSION": "2.10", "OCTAL": "010", "CLOCK": "12:30", "FLAG": "true"}
    assert step.args == ("true",) and step.timeout == 30
    assert cli(capsys, "check", str(path))[0] == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("lanes:\n  -x:\n    platform: cpu\n    steps: [{name: s, command: [true]}]\n", "lane name '-x' must match"),
        (
            "lanes:\n  l:\n    platform: cpu\n    steps: [{name: s, command: [true], env: {A: null}}]\n",
            "env 'A' has no value (YAML null)",
        ),
        (
            "lanes:\n  l:\n    platform: cpu\n    steps: [{name: s, command: [true]}, {name: s, command: [true]}]\n",
            "duplicate step name",
        ),
    ],
    ids=["lane-named-like-an-option", "env-null", "duplicate-step"],
)
def test_item13_16_manifest_refusals_name_the_problem(tmp_path, capsys, text, message):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    code, _, err = cli(capsys, "check", str(path))
    assert code == 2
    one_line(err, message)


def test_item16_a_huge_manifest_is_refused_for_its_size_not_for_aliases(tmp_path, capsys):
    lanes = "".join(f"  l{i}:\n    platform: cpu\n    steps: [{{name: s, command: [true]}}]\n" for i in range(10_000))
    path = tmp_path / "m.yaml"
    path.write_text("lanes:\n" + lanes)
    code, _, err = cli(capsys, "check", str(path))
    assert code == 2
    line = one_line(err, "holds more than")
    assert "alias" not in line


def test_item16_an_alias_clash_names_both_owners(tmp_path, capsys):
    path = tmp_path / "vendor.yaml"
    path.write_text("platforms:\n  cuda: {device_type: cuda}\n")
    code, _, err = cli(capsys, "--platforms-file", str(path), "defects", "--platform", "nvidia")
    assert code == 2
    one_line(err, "alias 'cuda' is the name of platform 'cuda' itself")


def test_item13_a_package_variable_cannot_smuggle_an_option(tmp_path, monkeypatch):
    monkeypatch.setenv("FL_TEST_SPEC", "-r/dev/null")
    lane = Lane("l", "cpu", (Step("s", "command", ("true",)),), packages=("${FL_TEST_SPEC}",))
    run = runner.run_lane(lane, tmp_path / "reports", progress=io.StringIO())
    assert not run.ok and [r.verdict for r in run.results] == ["error", "not run"]
    assert "expands to '-r/dev/null', which is not a pip spec" in run.results[0].detail


def test_item13_a_pip_that_installs_nothing_fails_the_install(tmp_path):
    """What the package step runs after pip: an empty lane directory is a failed install."""
    step = runner.package_step(Lane("l", "cpu", (), packages=("x",)), str(tmp_path), {})
    check = step.env["FL_CHECK_INSTALLED"]
    done = subprocess.run([PY, "-c", check, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1 and "pip installed nothing" in done.stderr
    (tmp_path / "x-1.dist-info").mkdir()
    assert subprocess.run([PY, "-c", check, str(tmp_path)]).returncode == 0


def test_item14_text_from_tests_cannot_add_markdown_structure():
    from collections import Counter

    from pytest_fl_contract.reporting.outcomes import Summary

    summary = Summary()
    summary.skips["why\n## Fake heading\n| a | b |\n![img](http://example.invalid/x.png) <img src=x>"] += 1
    summary.failures["op`\n# x"] = Counter({"contract\n| c |": 1})
    text = "\n".join(summary.markdown("step\n# h"))
    assert not any(line.startswith(("#", "|")) for line in text.splitlines())
    assert not re.search(r"(?<!\\)(!\[|<img|\|)", text) and "\\|" in text


def test_item15_a_closed_stdout_or_stderr_changes_neither_exit_nor_json(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "lanes:\n  l:\n    platform: cpu\n    runner_labels: [ubuntu-latest]\n    steps: [{name: s, command: [true]}]\n"
    )
    done = subprocess.run(
        " ".join([*CLI, "--manifest", str(manifest), "run", "l", "--reports", str(tmp_path / "r"), ">&-"]),
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "l.xml").is_file()
    done = subprocess.run(
        " ".join([*CLI, "--manifest", str(manifest), "matrix", "2>&-"]),
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["include"][0]["lane"] == "l"


def test_item16_importing_many_same_named_tests_is_linear():
    """19,000 same-named tests took 225 s (a quadratic search for a free name): the look-ups
    ``unique`` makes now grow with the number of names, not its square."""
    from pytest_fl_contract.lanes.migrate import unique

    class Counting(set):
        lookups = 0

        def __contains__(self, item):
            Counting.lookups += 1
            return super().__contains__(item)

    taken, tried = Counting(), {}
    names = [unique("t", taken, tried) for _ in range(5000)]
    assert len(set(names)) == 5000 and Counting.lookups < 3 * 5000


# -- 18: an expected-fail lane's counts do not move between runs -------------------------------


def test_item18_emulated_heap_garbage_does_not_depend_on_where_memory_was_allocated():
    """The heap pattern the emulator reads past a tensor is keyed on the distance from that
    tensor, not on its address (which moves from run to run), and every case starts on the
    default pattern (a poison left by one case never decides another's)."""
    np = pytest.importorskip("numpy")
    from pytest_fl_contract.emulation.device import DEVICE, garbage

    seen = []
    saved = DEVICE.storages
    try:
        for base in (0x7F0000001000, 0x5550000A3000):
            DEVICE.storages = [(base, 4096), (base + (1 << 20), 64)]
            seen.append(garbage(np.arange(base + 4096, base + 4096 + 64 * 4, 4), np.float32))
    finally:
        DEVICE.storages = saved
    assert np.array_equal(seen[0], seen[1]) and len(set(seen[0].tolist())) > 1
