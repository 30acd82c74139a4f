"""The lane runner with real subprocesses: every way a step can end becomes the right
JUnit case and the right exit code; nothing is lost."""

from __future__ import annotations

import io
import os
import re
import sys
import textwrap
from pathlib import Path

from junitparser import Error, Failure, JUnitXml

from pytest_fl_contract.cli import main
from pytest_fl_contract.lanes.manifest import Lane, Step
from pytest_fl_contract.lanes.runner import run_lane

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent


def command(name: str, code: str, **kw) -> Step:
    return Step(name, "command", (PY, "-c", textwrap.dedent(code)), **kw)


def lane(*steps: Step, name: str = "lane-a") -> Lane:
    return Lane(name, "cpu", tuple(steps))


def run(tmp_path: Path, the_lane: Lane, **kw):
    progress = io.StringIO()
    run = run_lane(the_lane, tmp_path / "reports", progress=progress, **kw)
    merged = JUnitXml.fromfile(str(tmp_path / "reports" / f"{the_lane.name}.xml"))
    cases = {case.name: case for suite in merged for case in suite}
    return run.ok, run.markdown, progress.getvalue(), merged, cases


def test_pass_fail_and_all_steps_run_after_a_failure(tmp_path):
    ok, md, progress, merged, cases = run(
        tmp_path,
        lane(
            command("fails", "import sys; print('boom'); sys.exit(3)"),
            command("passes", "print('fine')"),
        ),
    )
    assert not ok
    assert cases["passes"].result == []
    failure = cases["fails"].result[0]
    assert isinstance(failure, Failure) and failure.message == "exit 3" and "boom" in failure.text
    assert "[lane-a] fails: start" in progress and "[lane-a] passes: end passed, exit 0" in progress
    assert "| fails | FAIL: failed, exit 3 |" in md


def test_segfault_is_an_error_case_named_by_signal(tmp_path):
    ok, _, progress, _, cases = run(
        tmp_path,
        lane(
            command(
                "crash",
                """
        import os, signal
        print("about to crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
            )
        ),
    )
    assert not ok
    error = cases["crash"].result[0]
    assert isinstance(error, Error) and error.message == "crashed: -11 SIGSEGV" and "about to crash" in error.text
    assert "crashed: -11 SIGSEGV" in progress


def test_timeout_kills_the_step_and_keeps_its_output(tmp_path):
    ok, _, progress, _, cases = run(
        tmp_path,
        lane(
            command("hangs", "import time; print('waiting', flush=True); time.sleep(60)", timeout=1.5),
        ),
    )
    assert not ok
    result = cases["hangs"].result[0]
    assert result.message == "timed out after 1.5s" and "waiting" in result.text


def _pytest_step(tmp_path: Path, name: str, body: str, **kw) -> Step:
    test = tmp_path / f"test_{name}.py"
    test.write_text(textwrap.dedent(body))
    return Step(name, "pytest", (str(test), "-q", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"), **kw)


def test_pytest_steps_merge_into_one_lane_file_without_duplicate_suites(tmp_path):
    ok, md, _, merged, cases = run(
        tmp_path,
        lane(
            _pytest_step(tmp_path, "good", "def test_a(): pass\ndef test_b(): pass\n"),
            _pytest_step(tmp_path, "bad", "def test_c(): assert False\n"),
        ),
    )
    assert not ok
    names = [suite.name for suite in merged]
    assert names == ["lane-a/good", "lane-a/bad"]
    assert merged.tests == 3 and merged.failures == 1
    assert all(case.classname.startswith("lane-a.") for case in cases.values())
    assert (tmp_path / "reports" / "lane-a" / "good.xml").exists()


def test_no_tests_is_an_error_not_a_pass(tmp_path):
    ok, _, _, _, cases = run(tmp_path, lane(_pytest_step(tmp_path, "empty", "x = 1\n")))
    assert not ok
    assert isinstance(cases["empty"].result[0], Error)
    assert cases["empty"].result[0].message == "no tests ran (pytest exit 5)"


def test_step_that_writes_no_xml_and_one_that_writes_garbage(tmp_path, monkeypatch):
    from pytest_fl_contract.lanes import runner

    def fake_argv(the_lane, step, report):
        write = "" if step.name == "noxml" else f"open({str(report)!r}, 'w').write('<testsuite><oops')"
        return [PY, "-c", f"print('ran {step.name}'); {write}"]

    monkeypatch.setattr(runner, "step_argv", fake_argv)
    steps = [Step("noxml", "pytest", ()), Step("garbage", "pytest", ())]
    ok, _, _, _, cases = run(tmp_path, lane(*steps))
    assert not ok
    assert (
        cases["noxml"].result[0].message == "no JUnit report (exit 0)" and "ran noxml" in cases["noxml"].result[0].text
    )
    assert cases["garbage"].result[0].message.startswith("malformed JUnit XML garbage.xml")


def test_expected_failure_and_allowed_failure(tmp_path):
    ok, md, progress, _, _ = run(
        tmp_path,
        lane(
            command("caught", "raise SystemExit(1)", expect="fail"),
            command("flaky", "raise SystemExit(1)", allow_failure=True),
        ),
    )
    assert ok
    assert "expected to fail: defect caught" in progress and "(failure allowed)" in progress
    ok, _, progress, _, _ = run(tmp_path, lane(command("missed", "pass", expect="fail")))
    assert not ok and "NOT caught" in progress


def test_fail_fast_and_only(tmp_path):
    steps = (command("one", "raise SystemExit(1)"), command("two", "pass"))
    ok, _, progress, _, cases = run(tmp_path, lane(*steps), fail_fast=True)
    assert not ok and set(cases) == {"one", "two"}  # nothing lost: the step not run is reported
    assert cases["two"].result[0].message == "not run: --fail-fast after one"
    assert "[lane-a] two: not run (--fail-fast after one)" in progress
    ok, _, _, _, cases = run(tmp_path, lane(*steps), only="two")
    assert ok and set(cases) == {"two"}


def test_summary_goes_to_github_step_summary(tmp_path, monkeypatch):
    target = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        f"lanes:\n  l1:\n    platform: cpu\n    steps:\n      - name: s\n        command: [{PY!r}, -c, 'pass']\n"
    )
    assert main(["--manifest", str(manifest), "run", "l1", "--reports", str(tmp_path / "r")]) == 0
    assert "fl-contract lane `l1` (platform cpu): passed" in target.read_text()


def test_report_command_summarises_existing_files(tmp_path, capsys):
    run(tmp_path, lane(command("fails", "raise SystemExit(1)"), command("ok", "pass")))
    assert main(["report", str(tmp_path / "reports" / "lane-a.xml")]) == 1
    out = capsys.readouterr().out
    assert "| lane-a | FAIL |" in out
    bad = tmp_path / "bad.xml"
    bad.write_text("<nope")
    assert main(["report", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("fl-contract: error: malformed JUnit XML bad.xml")


def test_pytest_step_runs_the_plugin_with_lane_platform(tmp_path):
    step = _pytest_step(
        tmp_path,
        "plat",
        """
        def test_platform(fl_settings):
            assert fl_settings.platform.name == "nvidia"
    """,
    )
    env_path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    the_lane = Lane("gpu-lane", "nvidia", (step,), env={"PYTHONPATH": env_path})
    ok, md, _, merged, cases = run(tmp_path, the_lane)
    assert ok, md
    suite = next(iter(merged))
    props = {p.name: p.value for p in suite.properties()}
    assert props["fl_platform"] == "nvidia"
    assert cases["test_platform"].classname.startswith("gpu-lane.")


def test_lane_setup_runs_first_and_its_failure_stops_the_lane(tmp_path):
    marker = tmp_path / "set-up"
    good = Lane(
        "lane-a",
        "cpu",
        (command("check", f"import os; assert os.path.exists({str(marker)!r})"),),
        setup=(f"touch {marker}",),
    )
    ok, _, progress, _, cases = run(tmp_path, good)
    assert ok and list(cases) == ["setup", "check"]
    bad = Lane("lane-a", "cpu", (command("check", "pass"),), setup=("echo broken; exit 7",))
    ok, md, _, _, cases = run(tmp_path, bad)
    assert not ok and "broken" in cases["setup"].result[0].text
    assert cases["check"].result[0].message == "not run: the lane's setup failed"


def test_lane_timeout_bounds_the_steps(tmp_path):
    slow = Lane(
        "lane-a",
        "cpu",
        (command("slow", "import time; time.sleep(30)"), command("later", "pass")),
        timeout_minutes=0.03,
    )
    ok, _, progress, _, cases = run(tmp_path, slow)
    assert not ok
    # what is left of the lane's 1.8 s when the step starts (less on a loaded machine), never more
    said = re.fullmatch(r"timed out after ([0-9.]+)s", cases["slow"].result[0].message)
    assert said and 0 < float(said.group(1)) <= 1.8
    assert cases["later"].result[0].message == "not run: lane timeout of 0.03 min reached"
