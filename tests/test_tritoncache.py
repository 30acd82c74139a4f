"""`fl-contract triton-cache LANE`: the Triton and FlagGems cache directories a GPU lane's CI
job carries between runs (resolved as Triton and FlagGems resolve them), the key they are
kept under (it changes with every version that changes the kernels, and with nothing else),
and the command's lines on stdout and in `$GITHUB_OUTPUT`; a lane that compiles nothing
(CPU, emulated) has no cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path

import pytest

from pytest_fl_contract import __version__
from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.hardware import tritoncache
from pytest_fl_contract.hardware.tritoncache import (
    DISTS,
    PREFIX,
    TritonCache,
    cache_dirs,
    cache_key,
    fingerprint,
    flaggems_dir,
    interpreted,
    lane_plan,
    plan,
    triton_dir,
)
from pytest_fl_contract.lanes.manifest import Step, load
from pytest_fl_contract.util import FlContractError

from .conftest import ROOT
from .hostile import cli, one_line
from .test_matrix import CPU_LANES, MANIFEST
from .test_workflow import outputs

HOME = {"HOME": "/home/ci"}
FLC = "/home/ci/.cache/fl-contract"  # the packaged suites' pytest cache: the durations record

# -- the directories ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "/home/ci/.triton/cache"),
        ({"TRITON_HOME": "/opt/th"}, "/opt/th/.triton/cache"),
        ({"TRITON_CACHE_DIR": "/scratch/tc"}, "/scratch/tc"),
        ({"TRITON_CACHE_DIR": "/scratch/tc", "TRITON_HOME": "/opt/th"}, "/scratch/tc"),  # the cache dir wins
        ({"TRITON_CACHE_DIR": "~/tc"}, "~/tc"),  # Triton expands no ~ in either variable
        ({"TRITON_HOME": ""}, ".triton/cache"),  # empty home: the working directory's, as Triton has it
    ],
)
def test_triton_dir_is_resolved_as_triton_resolves_it(env, expected):
    assert triton_dir({**HOME, **env}) == expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "/home/ci/.flaggems"),
        ({"FLAGGEMS_CACHE_DIR": "/scratch/fg"}, "/scratch/fg"),
        ({"FLAGGEMS_CACHE_DIR": "/scratch/fg", "TRITON_CACHE_DIR": "/x", "TRITON_HOME": "/y"}, "/scratch/fg"),
    ],
)
def test_flaggems_dir_is_resolved_as_flaggems_resolves_it(env, expected):
    assert flaggems_dir({**HOME, **env}) == expected


def test_home_is_read_from_the_environment_given():
    assert triton_dir({"HOME": "/elsewhere/"}) == "/elsewhere/.triton/cache"
    assert flaggems_dir({"HOME": "/"}) == "/.flaggems"
    assert triton_dir({}) == os.path.join(os.path.expanduser("~"), ".triton", "cache")  # no HOME: the user's


@pytest.mark.parametrize("name", ["TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR"])
def test_a_cache_variable_set_but_empty_is_refused(name):
    """Triton cannot compile with an empty TRITON_CACHE_DIR; FlagGems would write into the
    working directory: neither is a directory to carry."""
    with pytest.raises(FlContractError, match=f"{name} is set but empty"):
        cache_dirs({**HOME, name: ""})


def test_cache_dirs_are_absolute_and_each_carried_once():
    assert cache_dirs(HOME, cwd="/w") == ("/home/ci/.triton/cache", "/home/ci/.flaggems", FLC)
    relative = {**HOME, "TRITON_CACHE_DIR": "cache/../tc", "FLAGGEMS_CACHE_DIR": "~/fg", "FL_CONTRACT_CACHE": "r"}
    assert cache_dirs(relative, cwd="/w") == ("/w/tc", "/w/~/fg", "/w/r")  # where the steps, started in /w, write
    inside = {**HOME, "FL_CONTRACT_CACHE": "/c/fl"}
    assert cache_dirs({**inside, "TRITON_CACHE_DIR": "/c", "FLAGGEMS_CACHE_DIR": "/c"}, cwd="/w") == ("/c",)
    assert cache_dirs({**inside, "TRITON_CACHE_DIR": "/c/t", "FLAGGEMS_CACHE_DIR": "/c"}, cwd="/w") == ("/c",)
    assert cache_dirs({**inside, "TRITON_CACHE_DIR": "/c", "FLAGGEMS_CACHE_DIR": "/c/fg"}, cwd="/w") == ("/c",)
    assert cache_dirs({**inside, "TRITON_CACHE_DIR": "/c", "FLAGGEMS_CACHE_DIR": "/cc"}, cwd="/w") == ("/c", "/cc")
    assert cache_dirs({**HOME, "XDG_CACHE_HOME": "/x"}, cwd="/w")[-1] == "/x/fl-contract"


def test_the_durations_record_is_where_the_packaged_suites_keep_it():
    from pytest_fl_contract.config.suites import cache_dir

    assert cache_dirs(HOME)[-1] == str(cache_dir(HOME)) == FLC


def test_a_directory_no_ci_output_can_carry_is_refused():
    with pytest.raises(FlContractError, match="line break"):
        cache_dirs({**HOME, "TRITON_CACHE_DIR": "/c\nkey=forged"})


@pytest.mark.skipif(find_spec("triton") is None, reason="triton is not installed")
def test_the_directory_is_the_one_triton_itself_uses(tmp_path):
    """Triton's own knobs, in a fresh interpreter (Triton reads HOME when it is imported)."""
    variants = [
        {},
        {"TRITON_HOME": str(tmp_path / "th")},
        {"TRITON_CACHE_DIR": str(tmp_path / "tc")},
        {"TRITON_HOME": str(tmp_path / "th"), "TRITON_CACHE_DIR": str(tmp_path / "tc")},
    ]
    script = textwrap.dedent("""\
        import json, os, sys
        from triton import knobs
        seen = []
        for variant in json.loads(sys.argv[1]):
            for name in ("TRITON_HOME", "TRITON_CACHE_DIR"):
                os.environ.pop(name, None)
            os.environ.update(variant)
            seen.append(knobs.cache.dir)
        print(json.dumps(seen))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_HOME", "TRITON_CACHE_DIR")}
    env["HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(variants)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [triton_dir({"HOME": env["HOME"], **v}) for v in variants]


# -- the key ----------------------------------------------------------------------------------

VERSIONS = {
    "torch": "2.13.0",
    "triton": "3.7.1",
    "flag_gems": "5.0.2",
    "flag-gems": "5.0.2",
    "pytest-fl-contract": "0.1.0",
}


def versions(**changed: str | None):
    table = {**VERSIONS, **changed}
    return lambda dist: table.get(dist)


def test_fingerprint_is_the_versions_python_and_machine():
    import platform

    found = fingerprint(versions())
    assert found == {
        "torch": "2.13.0",
        "triton": "3.7.1",
        "pytorch-triton": "-",
        "pytorch-triton-rocm": "-",
        "flag_gems": "5.0.2",
        "flag-gems": "5.0.2",
        "pytest-fl-contract": "0.1.0",
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "machine": platform.machine(),
    }
    missing = fingerprint(lambda dist: None)  # nothing installed: tolerated, and this package is its own version
    assert missing == {
        **{dist: "-" for dist in DISTS},
        "pytest-fl-contract": __version__,
        "python": found["python"],
        "machine": found["machine"],
    }


def test_the_key_is_readable_and_stable():
    found = fingerprint(versions())
    key = cache_key("nvidia", "nvidia", found)
    assert key.startswith(f"{PREFIX}nvidia-") and len(key) == len(f"{PREFIX}nvidia-") + 16
    assert key == cache_key("nvidia", "nvidia", dict(reversed(list(found.items()))))  # order does not count
    assert key == cache_key("nvidia", "nvidia", fingerprint(versions()))
    assert cache_key("nvidia-b", "nvidia", found).startswith(f"{PREFIX}nvidia-b-")


@pytest.mark.parametrize("fact", [*DISTS, "python", "machine"])
def test_the_key_changes_with_each_fact_and_only_with_it(fact):
    found = fingerprint(versions())
    key = cache_key("nvidia", "nvidia", found)
    assert cache_key("nvidia", "nvidia", {**found, fact: found[fact] + ".1"}) != key
    assert cache_key("nvidia", "nvidia", {**found, fact: found[fact]}) == key


@pytest.mark.parametrize("dist", ["torch", "triton", "flag_gems", "flag-gems", "pytest-fl-contract"])
def test_an_upgrade_of_any_package_is_a_new_key(dist):
    key = cache_key("nvidia", "nvidia", fingerprint(versions()))
    assert cache_key("nvidia", "nvidia", fingerprint(versions(**{dist: "99.0"}))) != key
    gone = cache_key("nvidia", "nvidia", fingerprint(versions(**{dist: None})))
    assert (gone == key) if dist == "pytest-fl-contract" else (gone != key)  # a source tree: its own version


def test_the_key_changes_with_the_platform():
    found = fingerprint(versions())
    assert cache_key("x", "nvidia", found) != cache_key("x", "amd", found)


def test_flaggems_under_either_distribution_name_counts():
    only_dash = {**VERSIONS, "flag_gems": None}
    found = fingerprint(lambda dist: only_dash.get(dist))
    assert found["flag-gems"] == "5.0.2" and found["flag_gems"] == "-"
    assert cache_key("n", "nvidia", found) != cache_key("n", "nvidia", {**found, "flag-gems": "5.4.0"})


def test_plan_reads_this_environment(monkeypatch):
    monkeypatch.setattr(tritoncache, "installed_version", versions())
    got = plan("nvidia", "nvidia", {**HOME, "TRITON_CACHE_DIR": "/tc"}, cwd="/w")
    assert got == TritonCache(
        ("/tc", "/home/ci/.flaggems", FLC), cache_key("nvidia", "nvidia", fingerprint(versions()))
    )
    assert plan("nvidia", "nvidia", HOME).paths == ("/home/ci/.triton/cache", "/home/ci/.flaggems", FLC)


def test_nothing_heavy_is_imported():
    """The key comes from package metadata: torch, triton and flag_gems stay unimported."""
    script = (
        "import sys\nfrom pytest_fl_contract.cli import main\n"
        f"code = main(['--manifest', {str(MANIFEST)!r}, 'triton-cache', 'nvidia'])\n"
        "assert code == 0, code\n"
        "print(sorted({'torch', 'triton', 'flag_gems'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


# -- which lanes have a cache --------------------------------------------------------------------


def shipped():
    return load(MANIFEST, load_registry([]))


def test_cpu_and_emulated_lanes_of_the_shipped_manifest_have_none_gpu_lanes_have_one():
    lanes = shipped().lanes
    assert {name for name, lane in lanes.items() if lane_plan(lane, HOME) is None} == set(CPU_LANES)
    assert interpreted(lanes["cpu"]) == "platform cpu: Triton's interpreter compiles nothing"
    assert "--fl-emulate" in str(interpreted(lanes["iluvatar-emulated"]))
    assert lane_plan(lanes["iluvatar"], HOME, cwd="/w") == TritonCache(
        ("/home/ci/.triton/cache", "/home/ci/.flaggems", FLC), cache_key("iluvatar", "iluvatar")
    )


def test_a_lane_compiles_unless_every_step_is_interpreted():
    lane = shipped().lanes["nvidia"]
    emulated = Step("e", "pytest", ("--fl-emulate",))
    compare = Step("c", "compare", ("e", "f"))
    assert interpreted(replace(lane, steps=(emulated, compare))) is not None
    assert interpreted(replace(lane, steps=(Step("p", "pytest", ("-q",)), compare))) is None
    assert interpreted(replace(lane, steps=(Step("p", "pytest", ("-q",)),), pytest_args=("--fl-emulate",))) is not None
    assert interpreted(replace(lane, steps=(emulated, Step("b", "command", ("bench",))))) is None  # a command may
    assert interpreted(replace(lane, steps=(Step("p", "pytest", ()),), env={"TRITON_INTERPRET": "1"})) is not None
    step_env = Step("p", "pytest", (), env={"TRITON_INTERPRET": "1"})
    assert interpreted(replace(lane, steps=(step_env,))) is not None


def test_the_flaggems_a_lane_installs_for_itself_is_in_its_key():
    """A lane with packages: runs the FlagGems its spec names, not this environment's."""
    lane = replace(shipped().lanes["nvidia"], packages=("${FL_FLAGGEMS_54}",))
    keys = [lane_plan(lane, {**HOME, "FL_FLAGGEMS_54": spec}) for spec in ("flag_gems==5.4.0", "flag_gems==5.4.1")]
    assert keys[0] is not None and keys[1] is not None and keys[0].key != keys[1].key
    assert keys[0].key != cache_key("nvidia", "nvidia") and keys[0].key.startswith(f"{PREFIX}nvidia-")
    plain = lane_plan(shipped().lanes["nvidia"], HOME)
    assert plain is not None and plain.key == cache_key("nvidia", "nvidia")


def test_the_lane_and_step_env_of_the_manifest_name_the_directories():
    """A manifest env: that moves the cache moves what is carried: each compiling step's
    environment, as `fl-contract run` gives it."""
    lane = replace(
        shipped().lanes["nvidia"],
        env={"TRITON_CACHE_DIR": "/lane-tc"},
        steps=(
            Step("a", "pytest", ()),
            Step("b", "pytest", (), env={"FLAGGEMS_CACHE_DIR": "/step-fg"}),
            Step("c", "pytest", ("--fl-emulate",), env={"TRITON_CACHE_DIR": "/interpreted"}),  # compiles nothing
        ),
    )
    got = lane_plan(lane, HOME, cwd="/w")
    assert got is not None and got.paths == ("/lane-tc", "/home/ci/.flaggems", FLC, "/step-fg")


# -- the command ----------------------------------------------------------------------------------


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "tc"))
    monkeypatch.setenv("FLAGGEMS_CACHE_DIR", str(tmp_path / "fg"))
    monkeypatch.setenv("FL_CONTRACT_CACHE", str(tmp_path / "tc" / "fl"))  # inside Triton's: carried with it
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    return tmp_path


def test_a_gpu_lane_prints_its_cache_as_github_outputs(capsys, cache_env):
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia")
    assert code == 0 and err == ""
    key = cache_key("nvidia", "nvidia")
    assert out == f"cache=true\npath<<EOF\n{cache_env / 'tc'}\n{cache_env / 'fg'}\nEOF\nkey={key}\n"


def test_one_directory_is_one_line(capsys, cache_env, monkeypatch):
    monkeypatch.setenv("FLAGGEMS_CACHE_DIR", str(cache_env / "tc" / "fg"))
    code, out, _ = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia")
    assert code == 0 and out.splitlines()[:2] == ["cache=true", f"path={cache_env / 'tc'}"]


@pytest.mark.parametrize("lane", ["cpu", "iluvatar-emulated", "flaggems-suite-fg54"])
def test_a_cpu_or_emulated_lane_has_no_cache(capsys, cache_env, lane):
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", lane)
    assert code == 0 and out == "cache=false\n"
    one_line(err, f"lane {lane}: no cache to carry", "compiles nothing")


def test_github_output_gets_the_same_lines_appended(capsys, cache_env, monkeypatch):
    target = cache_env / "github_output"
    target.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(target))
    code, out, _ = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia", "--github-output")
    assert code == 0 and target.read_text() == "earlier=1\n" + out
    assert outputs(target) == {
        "earlier": "1",
        "cache": "true",
        "path": f"{cache_env / 'tc'}\n{cache_env / 'fg'}",
        "key": cache_key("nvidia", "nvidia"),
    }
    code, out, _ = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "cpu", "--github-output")
    assert code == 0 and out == "cache=false\n" and target.read_text().endswith("\ncache=false\n")


def test_github_output_unset_is_one_line_and_nothing_printed(capsys, cache_env, monkeypatch):
    for value in (None, ""):
        if value is not None:
            monkeypatch.setenv("GITHUB_OUTPUT", value)
        code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia", "--github-output")
        assert code == 2 and out == ""
        one_line(err, "--github-output: GITHUB_OUTPUT is not set")


def test_github_output_that_cannot_be_written_is_one_line(capsys, cache_env, monkeypatch):
    monkeypatch.setenv("GITHUB_OUTPUT", str(cache_env / "no" / "such" / "file"))
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia", "--github-output")
    assert code == 2 and out == ""
    one_line(err, "--github-output: cannot append to")


def test_an_unknown_lane_is_one_line(capsys, cache_env):
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nope")
    assert code == 2 and out == ""
    one_line(err, "fl-contract: error: unknown lane 'nope'; lanes in", "nvidia")


def test_the_manifest_found_is_said_on_stderr_once_the_lane_is(capsys, cache_env, monkeypatch):
    monkeypatch.chdir(cache_env)  # no ci/manifest.yaml here: the packaged one
    code, out, err = cli(capsys, "triton-cache", "nope")
    assert code == 2 and out == ""
    one_line(err, "unknown lane 'nope'")
    code, out, err = cli(capsys, "triton-cache", "nvidia")
    assert code == 0 and out.startswith("cache=true\n")
    one_line(err, "fl-contract: manifest:", "packaged with pytest-fl-contract")


def test_a_malformed_manifest_is_one_line(capsys, cache_env):
    bad = cache_env / "manifest.yaml"
    bad.write_text("lanes:\n  x:\n    platform: nvidia\n    steps: [{name: s, bogus: 1}]\n")
    code, out, err = cli(capsys, "--manifest", str(bad), "triton-cache", "x")
    assert code == 2 and out == ""
    one_line(err, f"{bad}:4: lane 'x' step 's': unknown key 'bogus'")
    code, out, err = cli(capsys, "--manifest", str(cache_env / "missing.yaml"), "triton-cache", "x")
    assert code == 2 and out == ""
    one_line(err, "cannot read the manifest")


def test_an_empty_cache_variable_is_one_line(capsys, cache_env, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    code, out, err = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "nvidia")
    assert code == 2 and out == ""
    one_line(err, "TRITON_CACHE_DIR is set but empty")


def test_the_lane_is_required(capsys):
    code, out, err = cli(capsys, "triton-cache")
    assert code == 2 and out == ""
    one_line(err, "lane")


def test_relative_directories_are_the_working_directorys(capsys, cache_env, monkeypatch):
    monkeypatch.chdir(cache_env)
    monkeypatch.setenv("TRITON_CACHE_DIR", "rel/tc")
    code, out, _ = cli(capsys, "--manifest", str(MANIFEST), "triton-cache", "amd")
    assert code == 0 and f"\n{Path(cache_env, 'rel', 'tc')}\n" in out
