"""Hostile input (issue 15), manifest and import side: every bad manifest, platforms file
and torch_fl lane file is one line and exit 2 from ``check`` - in particular everything
``run`` would crash on - and ``import`` only ever writes manifests that pass ``check``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.lanes.manifest import load
from pytest_fl_contract.util import FlContractError

from .hostile import cli, one_line

REGISTRY = load_registry(entry_points=False)
BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)


def lane(step: dict[str, Any] | None = None, **lane_keys: Any) -> dict[str, Any]:
    """A one-lane manifest whose one step is ``step`` (a harmless command by default)."""
    return {"lanes": {"l": {"platform": "cpu", **lane_keys, "steps": [step or {"name": "s", "command": ["true"]}]}}}


def step(**keys: Any) -> dict[str, Any]:
    return lane({"name": "s", "command": ["true"], **keys})


# (id, manifest: a mapping to dump, or the file's text or bytes, what the one line must say)
MANIFESTS: list[tuple[str, Any, str]] = [
    ("env-key-with-equals", step(env={"A=B": "1"}), "env name 'A=B' must be a variable name"),
    ("env-key-empty", step(env={"": "1"}), "env name '' must be a variable name"),
    ("env-key-digit-first", step(env={"1A": "1"}), "env name '1A'"),
    ("lane-env-key-space", lane(env={"A B": "1"}), "lane 'l': env name 'A B'"),
    ("env-value-nul", step(env={"A": "x\0y"}), "env values cannot hold a NUL byte"),
    ("argv-nul", step(command=["echo", "a\0b"]), "command cannot hold a NUL byte"),
    ("shell-nul", step(command="echo a\0b", shell=True), "command cannot hold a NUL byte"),
    ("pytest-args-nul", lane({"name": "s", "pytest": ["-k", "a\0"]}), "pytest cannot hold a NUL byte"),
    ("lane-pytest-args-nul", lane(pytest_args=["-q\0"]), "pytest_args cannot hold a NUL byte"),
    ("setup-nul", lane(setup=["echo\0"]), "setup cannot hold a NUL byte"),
    ("step-name-5000", lane({"name": "s" * 5000, "command": ["true"]}), "must match [a-z0-9][a-z0-9_-]{0,63}"),
    ("lane-name-65", {"lanes": {"l" * 65: lane()["lanes"]["l"]}}, "lane name 'lllll"),
    ("lane-name-newline", {"lanes": {"l\n": lane()["lanes"]["l"]}}, "lane name 'l\\n' must match"),
    ("step-name-newline", lane({"name": "s\n", "command": ["true"]}), "step name 's\\n' must match"),
    ("step-called-setup", lane({"name": "setup", "command": ["true"]}, setup=["true"]), "step 'setup': the name"),
    ("unhashable-seq-key", "lanes:\n  ? [a]\n  : 1\n", "not valid YAML: a seq cannot be a key"),
    ("unhashable-map-key", "lanes:\n  ? {a: 1}\n  : 1\n", "not valid YAML: a map cannot be a key"),
    ("unhashable-top-key", "? [lanes]\n: 1\n", "a seq cannot be a key"),
    ("shared-steps-list", {"shared_steps": ["a"], **lane()}, "shared_steps must map names to steps"),
    ("shared-step-a-list", {"shared_steps": {"a": [1]}, **lane()}, "shared step 'a' must be a mapping"),
    (
        "shared-step-bad-name",
        {"shared_steps": {"-x": {"command": ["true"]}}, **lane()},
        "shared step name '-x' must match",
    ),
    ("shared-step-bad-name", {"shared_steps": {"A!": {"command": ["true"]}}, **lane()}, "shared step name 'A!'"),
    ("use-a-list", lane({"use": ["x"]}), "step name ['x'] must match"),
    ("use-a-list-with-name", lane({"name": "s", "use": ["x"]}), "unknown shared step ['x']"),
    (
        "alias-bomb",
        BOMB + "lanes: {l: {platform: cpu, steps: [{name: s, command: [x], env: {A: *i}}]}}\n",
        "aliases expand to more than 100000 values",
    ),
    ("recursive-alias", "lanes: &x {l: *x}\n", "a recursive alias"),
    ("nested-too-deep", "lanes: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ("binary", b"lanes:\n\0\0\0\x89PNG", "a binary file (NUL byte at offset 7)"),
    ("latin-1", "lanes:\n  l\xe9:\n    platform: cpu\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 10)"),
    ("too-large", b"# " + b"x" * (4 * 1024 * 1024), "larger than 4194304 bytes"),
    ("ansi-in-yaml", "lanes: {l: \x1b[31m}\n", "not valid YAML"),
    ("output-cap-small", step(output_cap=10), "output_cap must be bytes in [1024,"),
    ("defaults-output-cap-bool", {"defaults": {"output_cap": True}, **lane()}, "defaults.output_cap must be bytes"),
    ("defaults-unknown", {"defaults": {"retries": 3}, **lane()}, "defaults may only set: output_cap, timeout"),
    (
        "timeout-nan",
        "lanes: {l: {platform: cpu, steps: [{name: s, command: [x], timeout: .nan}]}}\n",
        "timeout must be",
    ),
    (
        "timeout-inf",
        "lanes: {l: {platform: cpu, steps: [{name: s, command: [x], timeout: .inf}]}}\n",
        "timeout must be",
    ),
    ("version-list", {"version": [1], **lane()}, "unsupported version [1]"),
    ("lane-name-underscore-first", {"lanes": {"_1": lane()["lanes"]["l"]}}, "lane name '_1' must match"),
    ("platform-list", lane(platform=["cpu"]), "unknown platform ['cpu']"),
    ("unknown-key-huge", lane({"name": "s", "command": ["true"], "k" * 5000: 1}), "unknown key 'kkkk"),
]


def _write(path: Path, content: Any) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content), encoding="utf-8")


@pytest.mark.parametrize("content, message", [m[1:] for m in MANIFESTS], ids=[m[0] for m in MANIFESTS])
def test_bad_manifest_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "manifest.yaml"
    _write(path, content)
    code, out, err = cli(capsys, "check", str(path))
    assert code == 2, out + err
    line = one_line(err, message)
    assert line.startswith(f"fl-contract: error: {path}") and len(line) < 400, line


@pytest.mark.parametrize(
    "target, message",
    [
        ("/dev/zero", "not a regular file (a character device)"),
        (".", "not a regular file (a directory)"),
        ("missing.yaml", "No such file"),
    ],
    ids=["dev-zero", "a-directory", "missing"],
)
def test_manifest_that_is_not_a_file_is_one_line(tmp_path, capsys, monkeypatch, target, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "check", target)
    assert code == 2
    one_line(err, message)


def test_a_manifest_path_with_a_newline_stays_one_line(tmp_path, capsys):
    path = tmp_path / "bad\nname.yaml"
    path.write_text("lanes: {}\n")
    code, _, err = cli(capsys, "check", str(path))
    assert code == 2
    one_line(err, "bad\\nname.yaml", "'lanes' must be a non-empty mapping")


def test_what_check_passes_run_can_start(tmp_path, capsys):
    """The legal limits: a 64-character name, env names with digits and underscores, a
    step named setup where the lane has no setup - check passes them, run runs them."""
    name = "a" * 64
    manifest = {
        "lanes": {
            name: {
                "platform": "cpu",
                "env": {"_A1": "x"},
                "steps": [{"name": "setup", "command": ["sh", "-c", 'test "$_A1$B_2" = xy'], "env": {"B_2": "y"}}],
            }
        }
    }
    path = tmp_path / "m.yaml"
    _write(path, manifest)
    assert cli(capsys, "check", str(path))[0] == 0
    code, out, err = cli(capsys, "--manifest", str(path), "run", name, "--reports", str(tmp_path / "r"))
    assert code == 0, out + err


# -- platforms files (the same loader bounds) -------------------------------------------------

PLATFORM_FILES: list[tuple[str, Any, str]] = [
    ("latin-1", "platforms:\n  x\xe9: {device_type: cpu}\n".encode("latin-1"), "not UTF-8 text (byte 0xe9"),
    ("binary", b"\x7fELF\0\0\0", "a binary file (NUL byte at offset 4)"),
    ("alias-bomb", BOMB + "platforms: {x: {device_type: cpu, aliases: *i}}\n", "aliases expand to more than"),
    ("device-type-null", "platforms: {x: {device_type: null}}\n", "platforms.x.device_type: expected a device name"),
    ("device-type-empty", "platforms: {x: {device_type: ''}}\n", "expected a device name"),
    ("alias-empty", "platforms: {x: {device_type: cpu, aliases: ['']}}\n", "an alias cannot be empty"),
    ("not-yaml", "platforms: [\n", "not valid YAML"),
]


@pytest.mark.parametrize("content, message", [m[1:] for m in PLATFORM_FILES], ids=[m[0] for m in PLATFORM_FILES])
def test_bad_platforms_file_is_one_line(tmp_path, capsys, content, message):
    platforms = tmp_path / "vendor.yaml"
    _write(platforms, content)
    manifest = tmp_path / "m.yaml"
    _write(manifest, lane())
    code, _, err = cli(capsys, "--platforms-file", str(platforms), "check", str(manifest))
    assert code == 2
    one_line(err, f"platforms file {platforms}", message)


# -- import ---------------------------------------------------------------------------------


def _import(tmp_path: Path, capsys, files: dict[str, Any]) -> tuple[int, str, Path]:
    paths = []
    for rel, content in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, content)
        paths.append(str(path))
    out = tmp_path / "imported.yaml"
    code, _, err = cli(capsys, "import", *paths, "-o", str(out))
    return code, err, out


def _checked(capsys, out: Path):
    """The written manifest passes ``check`` (the promise), and is returned parsed."""
    code, stdout, err = cli(capsys, "check", str(out))
    assert code == 0, err
    return load(out, REGISTRY)


def test_import_dedupes_step_names_case_insensitively(tmp_path, capsys):
    tests = [
        {"name": "Operator Tests", "command": "a"},
        {"name": "operator tests", "command": "b"},
        {"name": "OPERATOR-TESTS", "command": "c"},
        {"name": "op_contracts", "command": "d"},
        {"name": "!!!", "command": "e"},
        {"name": "x" * 300, "command": "f"},
    ]
    code, err, out = _import(tmp_path, capsys, {"cuda.yml": {"integration_tests": tests}})
    assert code == 0, err
    names = [s.name for s in _checked(capsys, out).lanes["cuda"].steps]
    assert names == [
        "operator-tests",
        "operator-tests-2",
        "operator-tests-3",
        "op_contracts-2",
        "step-4",
        "x" * 64,
        "op_contracts",
    ]


def test_import_renames_a_step_called_setup_beside_a_setup_script(tmp_path, capsys):
    lane_file = {"setup_script": "ci/my setup.sh", "integration_tests": [{"name": "Setup", "command": "true"}]}
    code, err, out = _import(tmp_path, capsys, {"cuda.yml": lane_file})
    assert code == 0, err
    lane_ = _checked(capsys, out).lanes["cuda"]
    assert lane_.setup == ("bash 'ci/my setup.sh'",)
    assert [s.name for s in lane_.steps] == ["setup-2", "op_contracts"]


def test_import_refuses_two_files_of_one_lane(tmp_path, capsys):
    files = {"a/cuda.yml": {"integration_tests": []}, "b/cuda.yml": {"integration_tests": []}}
    code, err, out = _import(tmp_path, capsys, files)
    assert code == 2 and not out.exists()
    one_line(err, "b/cuda.yml: becomes lane 'cuda', as", "a/cuda.yml does")


def test_import_a_directory_name_with_a_newline_cannot_inject_yaml(tmp_path, capsys):
    evil = "x\n  injected:\n    platform: cpu\n    steps: [{name: pwn, command: [id]}]\n#"
    lane_file = {
        "display_name": "A\nB: c",
        "container_options": "--x\n  evil: 1",
        "integration_tests": [{"name": "t", "command": "echo 'a: b'\n#c"}],
    }
    code, err, out = _import(tmp_path, capsys, {f"{evil}/cuda.yml": lane_file})
    assert code == 0, err
    manifest = _checked(capsys, out)
    assert list(manifest.lanes) == ["cuda"]
    lane_ = manifest.lanes["cuda"]
    assert lane_.display_name == "A\nB: c" and lane_.steps[0].args[-1] == "set -euo pipefail\necho 'a: b'\n#c"
    assert "injected" not in yaml.safe_load(out.read_text())["lanes"]


@pytest.mark.parametrize(
    "lane_file, message",
    [
        ({"integration_environment": ["A=1"]}, "integration_environment must map names to strings, got list"),
        ({"integration_environment": {"A=B": "1"}}, "env name 'A=B' must be a variable name"),
        ({"integration_environment": {"A": None}}, "values must be strings or numbers"),
        ({"integration_environment": {"A": "x\0"}}, "env values cannot hold a NUL byte"),
        ({"runner_labels": "gpu"}, "runner_labels must be a list of strings"),
        ({"timeout_minutes": "soon"}, "timeout_minutes must be a positive number, got 'soon'"),
        ({"setup_script": ["a"]}, "setup_script must be a path"),
        ({"integration_tests": [{"name": "t", "command": "a\0b"}]}, "the command holds a NUL byte"),
        ({"integration_tests": "pytest"}, "integration_tests must be a list"),
        ({"integration_tests": [{"name": "t"}]}, "integration_tests[0] needs a 'command' string"),
        ("- a\n- b\n", "expected a mapping of lane settings"),
        (BOMB + "integration_tests: *i\n", "aliases expand to more than"),
        ("runner_labels: [\xe9]\n".encode("latin-1"), "not UTF-8 text"),
        ("a: [\n", "not valid YAML"),
    ],
    ids=[
        "env-list",
        "env-key-equals",
        "env-null",
        "env-nul",
        "labels-str",
        "timeout-str",
        "setup-list",
        "command-nul",
        "tests-str",
        "test-no-command",
        "not-mapping",
        "alias-bomb",
        "latin-1",
        "not-yaml",
    ],
)
def test_import_refuses_what_check_would_refuse_in_one_line(tmp_path, capsys, lane_file, message):
    code, err, out = _import(tmp_path, capsys, {"cuda.yml": lane_file})
    assert code == 2 and not out.exists()
    one_line(err, "cuda.yml", message)


def test_import_of_an_unknown_platform_file_name_is_one_line(tmp_path, capsys):
    code, err, _ = _import(tmp_path, capsys, {"quantum\n.yml": {"integration_tests": []}})
    assert code == 2
    one_line(err, "is not a known platform")


yamlish = st.text(
    st.sampled_from(list("lanes:platform steps name command env{}[],&*!?|>-'\"\n #\t\x00\x1b\xe9ab0")), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), yamlish.map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_any_bytes_are_a_manifest_or_one_clear_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "m.yaml"
    path.write_bytes(data)
    try:
        load(path, REGISTRY)
    except FlContractError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message and len(message) < 1000, message


@pytest.mark.parametrize(
    "loaded, message",
    [
        (lambda: (_ for _ in ()).throw(ImportError("line one\nline two")), "failed to load: line one line two"),
        (lambda: 42, "expected a mapping, got int"),
        ("latin-1", "not UTF-8 text (byte 0xe9"),
    ],
    ids=["raises-multiline", "returns-an-int", "returns-a-latin-1-file"],
)
def test_a_broken_platforms_entry_point_is_one_line(tmp_path, monkeypatch, loaded, message):
    from pytest_fl_contract.config import platforms

    if loaded == "latin-1":
        bad = tmp_path / "vendor.yaml"
        bad.write_bytes("platforms:\n  x\xe9: {device_type: cpu}\n".encode("latin-1"))
        loaded = lambda: str(bad)  # noqa: E731
    monkeypatch.setattr(platforms, "_entry_point_sources", lambda: [("entry point vendor (x:y)", loaded)])
    with pytest.raises(FlContractError) as caught:
        platforms.load_registry()
    assert "\n" not in str(caught.value) and message in str(caught.value)
