"""Hostile input (issue 15), plugin and markers side, plus the CLI's own edges: a bad
option, platforms file, workaround or marker is one clear line under ``-p fl_contract``,
never a traceback; the plugin's JUnit and a contract lane's are valid xunit2."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from pytest_fl_contract.lanes.manifest import Lane, Step
from pytest_fl_contract.lanes.runner import run_lane
from pytest_fl_contract.reporting import junit

from .conftest import ROOT
from .hostile import assert_all_valid, assert_valid_junit, cli, one_line
from .test_hostile_manifest import BOMB

PY = sys.executable
WK5 = "COVERS = 5\ndef install():\n    return {}\ndef uninstall():\n    pass\n"

USAGE = [  # (id, files to write, pytest args, the one ERROR line holds)
    (
        "platforms-file-latin-1",
        {"vendor.yaml": "platforms:\n  x\xe9: {device_type: cpu}\n".encode("latin-1")},
        ["--fl-platforms-file", "vendor.yaml"],
        "platforms file vendor.yaml: not UTF-8 text (byte 0xe9 at offset 14)",
    ),
    (
        "platforms-file-binary",
        {"vendor.yaml": b"\x7fELF\0\0"},
        ["--fl-platforms-file", "vendor.yaml"],
        "a binary file (NUL byte at offset 4)",
    ),
    (
        "platforms-file-alias-bomb",
        {"vendor.yaml": BOMB + "platforms: {x: {device_type: cpu, aliases: *i}}\n"},
        ["--fl-platforms-file", "vendor.yaml"],
        "aliases expand to more than",
    ),
    (
        "platforms-file-device-type-null",
        {"vendor.yaml": "platforms: {x: {device_type: null}}\n"},
        ["--fl-platforms-file", "vendor.yaml"],
        "device_type: expected a device name",
    ),
    (
        "platforms-file-a-directory",
        {"vendor.yaml/x": "x"},
        ["--fl-platforms-file", "vendor.yaml"],
        "cannot read: not a regular file (a directory)",
    ),
    ("platform-empty", {}, ["--platform", ""], "--platform is empty: give a platform name or 'auto'"),
    ("platform-blank", {}, ["--platform", "  "], "--platform is empty"),
    ("platform-unknown", {}, ["--platform", "quantum"], "unknown platform 'quantum'"),
    ("workaround-empty", {}, ["--fl-workaround", ""], "--fl-workaround is empty: give a module name"),
    (
        "workaround-covers-an-int",
        {"wk5.py": WK5},
        ["--fl-workaround", "wk5", "--fl-source-root", "."],
        "COVERS must be a list of defect ids",
    ),
]


def _write(pytester: pytest.Pytester, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize("files, args, message", [u[1:] for u in USAGE], ids=[u[0] for u in USAGE])
def test_bad_plugin_input_is_one_usage_error_line(pytester, run_subprocess, files, args, message):
    _write(pytester, files)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    platform = [] if any(a == "--platform" for a in args) else ["--platform", "nvidia"]  # cpu would start the emulator
    result = run_subprocess("-p", "fl_contract", *platform, *args, "-p", "no:cacheprovider", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    line = one_line(result.stderr.str(), message)
    assert line.startswith("ERROR: ")
    assert "Traceback" not in result.stdout.str()


MARKERS = [  # (id, decorator, the one line)
    ("known-defect-a-list", '@pytest.mark.known_defect(["x"])', "@known_defect takes exactly one defect id"),
    ("known-defect-unknown", '@pytest.mark.known_defect("nosuch")', "@known_defect: unknown defect 'nosuch'"),
    (
        "skip-platforms-reason-none",
        '@pytest.mark.skip_platforms("nvidia", reason=None)',
        "@skip_platforms needs reason=... saying why",
    ),
    ("platforms-unknown", '@pytest.mark.platforms("quantum")', "@platforms: unknown platform 'quantum'"),
    ("platforms-none", "@pytest.mark.platforms()", "@platforms needs at least one platform name"),
    ("capability-unknown", '@pytest.mark.requires_capability("teleport")', "@requires_capability takes capability"),
    ("requires-csrc-args", "@pytest.mark.requires_csrc(1)", "@requires_csrc takes no arguments"),
]


@pytest.mark.parametrize("decorator, message", [m[1:] for m in MARKERS], ids=[m[0] for m in MARKERS])
def test_bad_marker_is_one_collection_error_line(pytester, run_subprocess, decorator, message):
    pytester.makepyfile(test_m=f"import pytest\n{decorator}\ndef test_a():\n    pass\n")
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia", "-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED and "Traceback" not in out and "INTERNALERROR" not in out, out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "ERROR collecting test_m.py" in line)
    end = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    body = [line for line in lines[start + 1 : end] if line.strip()]
    assert len(body) == 1 and message in body[0], body


PLUGIN_SUITE = """
import pytest

@pytest.fixture
def broken():
    raise ValueError("fixture")

def test_pass(): pass
def test_fail(): print("\\x1b[31mred\\x00"); assert 0
def test_error(broken): pass
def test_skip(): pytest.skip("why")

@pytest.mark.skip_platforms("iluvatar", reason="not on this lane")
def test_skip_platform(): pass

@pytest.mark.known_defect("masked_2d_row_load")
def test_known_defect_shows(): assert 0

@pytest.mark.known_defect("masked_2d_row_load")
def test_known_defect_gone(): pass
"""


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
def test_the_plugins_junit_is_valid_xunit2_and_keeps_its_summary(pytester, run_subprocess, family):
    """Suite properties only (fl_summary as JSON) under the default family; under the
    opt-in xunit1 the per-case properties pytest writes are not xunit2, and what the
    runner re-writes from it is."""
    pytester.makepyfile(test_suite=PLUGIN_SUITE)
    run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "iluvatar",
        "--fl-no-workaround",
        "--junitxml=out.xml",
        "-o",
        f"junit_family={family}",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    out = pytester.path / "out.xml"
    report = junit.read(out)
    counts = junit.count(report, "lane")
    assert counts.problems == [] and junit.problems(report) == []
    assert (counts.passed, counts.failed, counts.errors, counts.skipped, counts.xfailed) == (1, 2, 1, 2, 1)
    assert counts.summary.defects["masked_2d_row_load"] == {"xfailed": 1, "xpassed": 1}
    if family == "xunit2":
        assert_valid_junit(out)
    rewritten = pytester.path / "rewritten.xml"
    junit.write(report, rewritten)
    assert_valid_junit(rewritten)
    assert junit.count(junit.read(rewritten), "lane").summary.to_json() == counts.summary.to_json()


@pytest.mark.slow
def test_a_contract_lane_writes_valid_xunit2_and_its_per_op_summary(tmp_path):
    """A real (emulated Iluvatar, no workaround) contract lane through the runner: every
    file validates and the per-op failures are read from the cases.  Iluvatar has no
    on-device cast: the cast step skips every case, and a step that ran nothing is an error
    (issue 61, class 2), never a pass."""
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    steps = (
        Step(
            "reductions",
            "pytest",
            ("-q", "-k", "(sum or argmax) and accuracy and float32 and 5x64"),
            suites=("reductions",),
            expect="fail",
        ),
        Step("cast", "pytest", ("-q",), suites=("copy",)),
    )
    the_lane = Lane("l", "iluvatar", steps, env=env, pytest_args=("--fl-emulate", "--fl-no-workaround"))
    run = run_lane(the_lane, tmp_path / "reports", progress=io.StringIO())
    reductions, cast = run.results
    assert reductions.ok and reductions.verdict == "failed", run.markdown
    assert not run.ok and not cast.ok and cast.verdict == "error", run.markdown
    assert cast.detail == "no case passed (5 skipped, 0 xfailed of 5): a run that ran nothing is not a pass"
    files = assert_all_valid(tmp_path / "reports")
    assert sorted(f.name for f in files) == ["cast.xml", "l.xml", "reductions.xml"]
    assert "- `sum`: " in run.markdown and "(accuracy " in run.markdown
    merged = junit.read(tmp_path / "reports" / "l.xml")
    assert junit.problems(merged) == [] and any(p == "fl_summary" for s in merged.suites for p, _ in s.properties)


# -- the CLI itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["mutants", "--list"], ["--manifest", "ci/manifest.yaml", "lanes"]], ids=["mutants-list", "lanes"]
)
def test_a_reader_that_goes_away_is_quiet_141(tmp_path, args):
    read, write = os.pipe()
    os.close(read)  # `| head -1` that has already gone: every write gets EPIPE
    done = subprocess.run(
        [PY, "-m", "pytest_fl_contract.cli", *args],
        stdout=write,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        text=True,
        timeout=60,
    )
    os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "missing command; one of:"),
        (["run"], "the following arguments are required: lane"),
        (["--nope"], "unrecognized arguments: --nope"),
        (["report"], "the following arguments are required: files"),
    ],
    ids=["no-command", "run-no-lane", "unknown-option", "report-no-files"],
)
def test_cli_usage_errors_are_one_line(capsys, args, message):
    code, _, err = cli(capsys, *args)
    assert code == 2
    one_line(err, message)


def test_cli_error_messages_never_span_lines():
    from pytest_fl_contract.cli import one_line as flatten

    assert flatten("a\nb\x00c\x1b") == "a b\\x00c\\x1b"
