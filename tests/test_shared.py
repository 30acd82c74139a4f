"""Work a run's processes share (``hardware.shared``): made once, by a helper the session
starts before its workers or by the first process that needs it, and gone with the session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fl_contract.hardware import shared
from pytest_fl_contract.hardware.schedule import WAITED, own_time

MAKERS = '''
import os, subprocess, sys, time
from pathlib import Path

def counted(arg):
    """Appends a line per call: how many times the job was made."""
    with open(arg["log"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(arg.get("sleep", 0))
    return {"made by": os.getpid(), "arg": arg["value"]}

def child_sleeps(arg):
    """Starts a child that would outlive everyone, and says its pid."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(arg["pid"]).write_text(str(child.pid))
    child.wait()
    return None
'''


@pytest.fixture
def makers(tmp_path, monkeypatch):
    (tmp_path / "fl_makers.py").write_text(MAKERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    return tmp_path


def job(directory: Path, arg: dict, make: str = "fl_makers:counted") -> shared.Job:
    return shared.Job(str(directory / "run"), "fl-test", make, arg)


def made(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


def test_the_first_process_makes_it_and_the_rest_read_it(makers):
    log = makers / "log"
    j = job(makers, {"log": str(log), "value": 1})
    Path(j.directory).mkdir()
    first = shared.once_per_run(j)
    again = shared.once_per_run(j)
    assert first.value == again.value == {"made by": os.getpid(), "arg": 1}
    assert first.waited == 0.0 and len(made(log)) == 1


def test_a_product_of_another_job_is_made_again_not_read(makers):
    log = makers / "log"
    Path(makers / "run").mkdir()
    shared.once_per_run(job(makers, {"log": str(log), "value": 1}))
    other = shared.once_per_run(job(makers, {"log": str(log), "value": 2}))
    assert other.value["arg"] == 2 and len(made(log)) == 2


def test_a_torn_product_is_made_again(makers):
    log = makers / "log"
    j = job(makers, {"log": str(log), "value": 3})
    Path(j.directory).mkdir()
    j.path(".pkl").write_bytes(b"\x80\x04not a pickle")
    assert shared.once_per_run(j).value["arg"] == 3 and len(made(log)) == 1


def test_a_started_helper_makes_it_and_a_later_process_waits_and_reads_it(makers):
    log = makers / "log"
    j = job(makers, {"log": str(log), "value": 4, "sleep": 1.5})
    helper = shared.start(j)
    assert helper is not None
    got = shared.once_per_run(j)  # the helper holds the lock: this blocks, then reads
    assert made(log) == [str(helper.pid)] and got.value["made by"] == helper.pid
    assert got.waited > 0.5
    assert helper.wait(10) == 0


def test_stop_ends_the_helper_and_the_child_it_started(makers):
    pid_file = makers / "child.pid"
    helper = shared.start(job(makers, {"pid": str(pid_file)}, "fl_makers:child_sleeps"))
    assert helper is not None
    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert alive(child)
    shared.stop(helper)
    assert helper.poll() is not None
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the helper's child outlived the session"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_session_killed_outright_takes_the_helper_and_its_child(makers):
    pid_file = makers / "child.pid"
    j = job(makers, {"pid": str(pid_file)}, "fl_makers:child_sleeps")
    session = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from pytest_fl_contract.hardware import shared
        shared.start(shared.Job({j.directory!r}, {j.name!r}, {j.make!r}, {j.arg!r}))
        time.sleep(120)
        """),
        ]
    )
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    session.send_signal(signal.SIGKILL)
    session.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the helper's child outlived a session killed with SIGKILL"


def test_a_helper_that_cannot_make_it_leaves_it_to_the_workers(makers):
    log = makers / "log"
    broken = job(makers, {"log": str(log), "value": 5}, "fl_makers:no_such_function")
    helper = shared.start(broken)
    assert helper is not None and helper.wait(20) != 0
    fixed = shared.Job(broken.directory, broken.name, "fl_makers:counted", broken.arg)
    assert shared.once_per_run(fixed).value["arg"] == 5 and len(made(log)) == 1


def test_whole_file_selected(tmp_path):
    suite = tmp_path / "contracts" / "reductions"
    suite.mkdir(parents=True)
    target = suite / "test_processes.py"
    target.touch()
    (suite / "test_other.py").touch()
    yes = [["contracts"], ["contracts/reductions"], [str(target)], ["contracts/reductions/test_other.py", str(suite)]]
    for args in yes:
        assert shared.whole_file_selected(args, tmp_path, target), args
    no = [["contracts/reductions/test_other.py"], [f"{target}::test_fresh_process"], ["elsewhere"], []]
    for args in no:
        assert not shared.whole_file_selected(args, tmp_path, target), args
    assert not shared.whole_file_selected(["contracts"], tmp_path, target, keyword="sum")
    assert not shared.whole_file_selected(["contracts"], tmp_path, target, markexpr="slow")
    assert not shared.whole_file_selected(["contracts"], tmp_path, target, last_failed=True)
    assert not shared.whole_file_selected(
        ["contracts"], tmp_path, target, deselect=["contracts/reductions/test_processes.py::test_fresh_process[sum]"]
    )
    assert shared.whole_file_selected(
        ["contracts"], tmp_path, target, deselect=["contracts/reductions/test_other.py::x"]
    )


class Report:
    def __init__(self, when, duration, waited=None):
        self.when, self.duration = when, duration
        if waited is not None:
            setattr(self, WAITED, waited)


@given(st.floats(0, 100), st.floats(0, 100))
def test_a_cases_own_time_leaves_out_its_wait_on_shared_work(duration, waited):
    assert own_time(Report("setup", duration, waited)) == max(duration - waited, 0.0)
    assert own_time(Report("call", duration, waited)) == duration
    assert own_time(Report("setup", duration)) == duration


def test_the_wait_reaches_the_controller_as_a_report_attribute_and_never_junit(pytester):
    """A case that records a wait in its set-up: the controller's record leaves it out, and
    the JUnit report stays xunit2 (no per-case properties)."""
    pytester.makeconftest("""
        import pytest
        from pytest_fl_contract.hardware.schedule import Schedule, record_wait

        def pytest_configure(config):
            config.pluginmanager.register(Schedule(config, "t"), "sched")

        @pytest.fixture
        def waits(request):
            import time
            time.sleep(0.3)
            record_wait(request.node, 0.3)
    """)
    pytester.makepyfile(test_w="def test_w(waits):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "1", "--junitxml=out.xml", "-p", "cacheprovider")
    result.assert_outcomes(passed=1)
    assert "<properties>" not in (pytester.path / "out.xml").read_text()
    import json

    recorded = json.loads((pytester.path / ".pytest_cache" / "v" / "fl_contract" / "durations" / "t").read_text())
    assert recorded["test_w.py::test_w"] < 0.25, recorded


def test_a_session_that_takes_the_whole_file_starts_its_job_before_the_workers(pytester, makers):
    """``start_for``: the controller starts the job's helper when the run takes every case of
    the file, the cases read its product (made once, by the helper, not by a worker), and a
    run narrowed to one case starts nothing."""
    log = makers / "log"
    pytester.makeconftest(f"""
        import os
        from pathlib import Path
        import pytest
        from pytest_fl_contract.hardware import shared

        KEY = pytest.StashKey[object]()

        def describe(directory):
            return shared.Job(str(directory), "fl-test", "fl_makers:counted", {{"log": {str(log)!r}, "value": 7, "sleep": 1}})

        def pytest_sessionstart(session):
            session.config.stash[KEY] = shared.start_for(session, Path(__file__).with_name("test_p.py"), describe)
            if not hasattr(session.config, "workerinput"):
                Path({str(makers / "started")!r}).write_text(str(session.config.stash[KEY] is not None))

        def pytest_sessionfinish(session):
            shared.stop(session.config.stash.get(KEY, None))

        @pytest.fixture
        def product(request, tmp_path_factory):
            base = tmp_path_factory.getbasetemp()
            directory = base.parent if hasattr(request.config, "workerinput") else base
            return shared.once_per_run(describe(directory)).value
    """)
    pytester.makepyfile(
        test_p="""
        import os
        def test_a(product):
            assert product["arg"] == 7 and product["made by"] != os.getpid()
        def test_b(product):
            assert product["arg"] == 7 and product["made by"] != os.getpid()
        """
    )
    pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "test_p.py").assert_outcomes(passed=2)
    assert (makers / "started").read_text() == "True" and len(made(log)) == 1
    pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "1", "test_p.py::test_a", "-p", "no:cacheprovider"
    ).assert_outcomes(failed=1)
    assert (makers / "started").read_text() == "False"
