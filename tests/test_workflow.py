"""The reusable workflow (`.github/workflows/fl-contract-lanes.yml`) and its caller: checked
by actionlint (with shellcheck on the run: scripts) and check-jsonschema's vendored GitHub
workflow schema, its job graph (setup -> lanes -> merge), and run end to end as the jobs
would run it: each step's own bash script, parsed from the file, with the env the job gives
it, in a workspace laid out like the caller's checkout, the artifacts passed on as
upload/download-artifact would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml

from pytest_fl_contract.reporting import junit

from .conftest import ROOT
from .hostile import assert_valid_junit
from .test_matrix import BIN, MANIFEST, schema_check, tool

WORKFLOWS = ROOT / ".github" / "workflows"
REUSABLE = WORKFLOWS / "fl-contract-lanes.yml"
CALLER = WORKFLOWS / "cpu-lanes.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
JOIN_LANES = re.compile(r"join\(fromJSON\(needs\.setup\.outputs\.matrix\)\.include\.\*\.(\w+), ','\)\Z")


def workflow(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    if True in doc:  # YAML 1.1 reads the key `on` as a boolean
        doc["on"] = doc.pop(True)
    return doc


def step(job: dict[str, Any], key: str) -> dict[str, Any]:
    """The step with this id, or whose `uses` starts with it."""
    found = [s for s in job["steps"] if s.get("id") == key or s.get("uses", "").startswith(key)]
    assert len(found) == 1, f"{key}: {len(found)} steps"
    return found[0]


def evaluate(text: str, contexts: dict[str, Any]) -> str:
    """The expressions the workflow's env uses, as GitHub evaluates them: `a.b`, `a || b`,
    and the merge job's join over the matrix; anything else fails the test (the workflow
    grew an expression this runner cannot stand in for)."""

    def value(expr: str) -> Any:
        joined = JOIN_LANES.match(expr)
        if joined:
            return ",".join(row[joined.group(1)] for row in contexts["needs"]["setup"]["outputs"]["matrix"]["include"])
        result: Any = ""
        for term in (t.strip() for t in expr.split("||")):
            if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[\w-]+)+", term):
                pytest.fail(f"unsupported expression in the workflow: {expr!r}")
            result = contexts
            for part in term.split("."):
                result = result.get(part, "") if isinstance(result, dict) else ""
            if result:
                return result
        return result

    def shown(match: re.Match[str]) -> str:
        result = value(match.group(1))
        return json.dumps(result) if isinstance(result, bool) else str(result)

    return EXPR.sub(shown, str(text))


def inputs(**given: str) -> dict[str, str]:
    """The reusable workflow's inputs: its defaults, then what the caller gives."""
    declared = workflow(REUSABLE)["on"]["workflow_call"]["inputs"]
    return {**{name: str(spec.get("default", "")) for name, spec in declared.items()}, **given}


def run_step(
    job: dict[str, Any], key: str, contexts: dict[str, Any], cwd: Path, tmp: Path
) -> subprocess.CompletedProcess:
    """One `run:` step as the runner runs `shell: bash`: the job's env and the step's env
    evaluated, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files, `bash --noprofile --norc -eo
    pipefail` on the script; fl-contract from this environment (what the install step put
    on PATH on a runner)."""
    the_step = step(job, key)
    assert the_step.get("shell") == "bash"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_"))}
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env.update(GITHUB_OUTPUT=str(tmp / "output"), GITHUB_STEP_SUMMARY=str(tmp / "summary.md"))
    for scope in (job.get("env", {}), the_step.get("env", {})):
        env.update({name: evaluate(text, contexts) for name, text in scope.items()})
    script = tmp / "step.sh"
    script.write_text(the_step["run"])
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def outputs(path: Path) -> dict[str, str]:
    """A step's outputs as the runner reads `$GITHUB_OUTPUT`: `name=value` lines and
    `name<<DELIMITER` blocks (the lines up to DELIMITER, joined by newlines)."""
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        name, heredoc, delimiter = line.partition("<<")
        if heredoc and "=" not in name:
            block = []
            for body in lines:
                if body == delimiter:
                    break
                block.append(body)
            else:
                pytest.fail(f"{name}<<{delimiter}: the block never ends (the runner fails the step)")
            found[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            found[name] = value
    return found


class Run:
    """The workflow run by hand: setup, then any lane jobs, then merge, each in its own dir."""

    def __init__(self, tmp: Path, manifest_text: str, **given: str) -> None:
        self.tmp = tmp
        self.doc = workflow(REUSABLE)
        self.jobs = self.doc["jobs"]
        self.checkout = tmp / "checkout"  # the caller's repository, as actions/checkout lays it
        (self.checkout / "ci").mkdir(parents=True)
        (self.checkout / "ci" / "manifest.yaml").write_text(manifest_text)
        (self.checkout / "test_defect.py").write_text("def test_the_defect_shows():\n    assert 1 + 1 == 3\n")
        self.contexts: dict[str, Any] = {"inputs": inputs(manifest="ci/manifest.yaml", **given), "secrets": {}}
        self.downloaded = tmp / "merge"
        self.downloaded.mkdir()

    def workspace(self, name: str) -> tuple[Path, Path]:
        work, scratch = self.tmp / name, self.tmp / f"{name}.runner"
        shutil.copytree(self.checkout, work)
        scratch.mkdir()
        return work, scratch

    def setup(self) -> tuple[subprocess.CompletedProcess, list[dict[str, Any]]]:
        work, scratch = self.workspace("setup")
        done = run_step(self.jobs["setup"], "matrix", self.contexts, work, scratch)
        raw = outputs(scratch / "output").get("matrix")
        matrix = json.loads(raw) if raw else None
        self.contexts["needs"] = {"setup": {"outputs": {"matrix": matrix}}}
        return done, (matrix or {}).get("include", [])

    def lane(self, row: dict[str, Any]) -> tuple[subprocess.CompletedProcess, str]:
        """The lane job: its run step, then upload-artifact's path handed to the merge job's
        download (merge-multiple: every lane's files in one directory)."""
        work, scratch = self.workspace(f"lane-{row['lane']}")
        done = run_step(self.jobs["lanes"], "lane", {**self.contexts, "matrix": row}, work, scratch)
        upload = step(self.jobs["lanes"], "actions/upload-artifact")
        download = step(self.jobs["merge"], "actions/download-artifact")
        assert download["with"]["merge-multiple"] is True
        target = self.downloaded / download["with"]["path"]
        shutil.copytree(work / upload["with"]["path"], target, dirs_exist_ok=True)
        summary = scratch / "summary.md"
        return done, summary.read_text() if summary.is_file() else ""

    def merge(self) -> tuple[subprocess.CompletedProcess, Path, str]:
        scratch = self.tmp / "merge.runner"
        scratch.mkdir()
        done = run_step(self.jobs["merge"], "merge", self.contexts, self.downloaded, scratch)
        merged = self.downloaded / step(self.jobs["merge"], "actions/upload-artifact")["with"]["path"]
        return done, merged, (scratch / "summary.md").read_text()


# -- static checks ------------------------------------------------------------------------


def test_workflows_pass_actionlint_with_shellcheck(tmp_path):
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert REUSABLE in files and CALLER in files
    tool("shellcheck")  # on actionlint's PATH: the run: scripts are shellchecked too
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    lint = [tool("actionlint"), "-no-color"]
    done = subprocess.run([*lint, *map(str, files)], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    # the checker is live: a wrong `needs` and an unquoted variable are caught
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = REUSABLE.read_text().replace("needs: setup\n", "needs: setupx\n")
    broken.write_text(text.replace('> "reports/$LANE.exit"', "> reports/$LANE.exit"))
    done = subprocess.run([*lint, str(broken)], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert 'needs job "setupx" which does not exist' in done.stdout and "SC2086" in done.stdout


def test_workflows_match_the_vendored_github_workflow_schema(tmp_path):
    schema_check("vendor.github-workflows", *sorted(WORKFLOWS.glob("*.yml")))
    broken = tmp_path / "broken.yml"
    broken.write_text(REUSABLE.read_text().replace("    timeout-minutes: 15\n", "    timeout_minutes: 15\n", 1))
    with pytest.raises(AssertionError, match="timeout_minutes"):
        schema_check("vendor.github-workflows", broken)


def test_job_graph_is_setup_then_lanes_then_merge():
    doc = workflow(REUSABLE)
    assert list(doc["on"]) == ["workflow_call"]
    assert doc["on"]["workflow_call"]["inputs"]["manifest"] == {
        "description": "the lane manifest, relative to the caller's repository root",
        "type": "string",
        "required": True,
    }
    jobs = doc["jobs"]
    needs = {name: job.get("needs", []) for name, job in jobs.items()}
    assert needs == {"setup": [], "lanes": "setup", "merge": ["setup", "lanes"]}
    setup, lanes, merge = jobs["setup"], jobs["lanes"], jobs["merge"]
    assert setup["outputs"] == {"matrix": "${{ steps.matrix.outputs.matrix }}"} and setup["runs-on"] == "ubuntu-latest"
    assert lanes["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.setup.outputs.matrix) }}"}
    assert lanes["runs-on"] == "${{ matrix.runs_on }}" and lanes["timeout-minutes"] == "${{ matrix.timeout }}"
    # reports/ goes up whatever the lane did; the merge job runs whatever the lanes did
    upload = step(lanes, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    assert merge["if"] == "always() && needs.setup.result == 'success'" and merge["runs-on"] == "ubuntu-latest"
    download = step(merge, "actions/download-artifact")
    assert upload["with"]["name"] == "fl-contract-reports-${{ matrix.lane }}"
    assert download["with"]["pattern"] == "fl-contract-reports-*"
    assert 'fl-contract --manifest "$MANIFEST" run "$LANE" --reports reports' in step(lanes, "lane")["run"]
    assert 'fl-contract merge --reports lane-reports --lanes "$LANES"' in step(merge, "merge")["run"]
    assert 'fl-contract --manifest "$MANIFEST" matrix --format github' in step(setup, "matrix")["run"]
    # expressions reach scripts through env only: nothing a caller passes is spliced into bash
    for job in jobs.values():
        for s in job["steps"]:
            assert "${{" not in s.get("run", ""), s


def test_lane_jobs_restore_and_save_the_triton_cache_around_the_run():
    """The cache key step after the install and before the run; restore before, save after
    whatever the verdict (not when cancelled); both only where the lane has a cache
    (cache=true: never a CPU lane, never with triton_cache: false)."""
    doc = workflow(REUSABLE)
    assert doc["on"]["workflow_call"]["inputs"]["triton_cache"]["type"] == "boolean"
    assert doc["on"]["workflow_call"]["inputs"]["triton_cache"]["default"] is True
    lanes = doc["jobs"]["lanes"]
    names = [s.get("id") or s.get("uses") or s.get("name") for s in lanes["steps"]]
    order = [
        "Install pytest-fl-contract",
        "triton",
        "actions/cache/restore@v4",
        "lane",
        "actions/cache/save@v4",
        "actions/upload-artifact@v4",
    ]
    assert [names.index(name) for name in order] == sorted(names.index(name) for name in order), names
    key_step = step(lanes, "triton")
    assert key_step["if"] == "inputs.triton_cache" and key_step["continue-on-error"] is True
    assert key_step["run"] == 'fl-contract --manifest "$MANIFEST" triton-cache "$LANE" --github-output'
    assert key_step["env"] == {"LANE": "${{ matrix.lane }}", "MANIFEST": "${{ inputs.manifest }}"}
    restore, save = step(lanes, "actions/cache/restore"), step(lanes, "actions/cache/save")
    key = "${{ steps.triton.outputs.key }}-${{ github.run_id }}-${{ github.run_attempt }}"
    assert restore["if"] == "steps.triton.outputs.cache == 'true'"
    assert restore["with"] == {
        "path": "${{ steps.triton.outputs.path }}",
        "key": key,
        "restore-keys": "${{ steps.triton.outputs.key }}-",
    }
    assert save["if"] == "!cancelled() && steps.triton.outputs.cache == 'true'"
    assert save["with"] == {"path": "${{ steps.triton.outputs.path }}", "key": key}


def test_the_triton_cache_step_gives_gpu_lanes_a_cache_and_cpu_lanes_none(tmp_path, monkeypatch):
    """The key step's script as the job runs it, for a GPU lane and a CPU lane of the shipped
    manifest: its outputs, read back as the runner reads $GITHUB_OUTPUT."""
    from pytest_fl_contract.hardware.tritoncache import cache_key

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("FLAGGEMS_CACHE_DIR", str(tmp_path / "flaggems"))
    monkeypatch.setenv("FL_CONTRACT_CACHE", str(tmp_path / "fl-contract"))
    run = Run(tmp_path, MANIFEST.read_text(), lanes="nvidia,cpu")
    done, rows = run.setup()
    assert done.returncode == 0, done.stderr
    got = {}
    for row in rows:
        work, scratch = run.workspace(f"triton-{row['lane']}")
        done = run_step(run.jobs["lanes"], "triton", {**run.contexts, "matrix": row}, work, scratch)
        assert done.returncode == 0, done.stderr
        got[row["lane"]] = outputs(scratch / "output")
    assert got == {
        "cpu": {"cache": "false"},
        "nvidia": {
            "cache": "true",
            "path": f"{tmp_path / 'triton'}\n{tmp_path / 'flaggems'}\n{tmp_path / 'fl-contract'}",
            "key": cache_key("nvidia", "nvidia"),
        },
    }


def test_the_caller_uses_the_reusable_workflow_with_declared_inputs():
    caller = workflow(CALLER)
    declared = workflow(REUSABLE)["on"]["workflow_call"]["inputs"]
    (job,) = caller["jobs"].values()
    assert job["uses"] == "./.github/workflows/fl-contract-lanes.yml"
    assert set(job["with"]) <= set(declared)
    assert {name for name, spec in declared.items() if spec.get("required")} <= set(job["with"])
    assert job["with"]["runners"] == "hosted" and job["with"]["package"] == "."


def test_every_matrix_key_the_workflow_reads_is_in_every_row(capsys):
    from .hostile import cli

    code, out, _ = cli(capsys, "--manifest", str(MANIFEST), "matrix")
    assert code == 0
    rows = json.loads(out)["include"]
    read = set(re.findall(r"\bmatrix\.(\w+)", REUSABLE.read_text())) - {"outputs"}
    assert read >= {"lane", "runs_on", "timeout", "hosted", "extras", "torch"}
    for row in rows:
        assert read <= set(row), row["lane"]


# -- end to end ---------------------------------------------------------------------------


def test_cpu_lane_end_to_end_as_the_jobs_run_it(tmp_path):
    """setup -> the cpu lane's job (its compiler_probes step: seconds) -> merge, all three
    steps' scripts taken from the workflow file, as the caller of this repository runs them."""
    run = Run(tmp_path, MANIFEST.read_text(), lanes="cpu", runners="hosted", run_args="--step compiler_probes")
    done, rows = run.setup()
    assert done.returncode == 0, done.stderr
    assert [row["lane"] for row in rows] == ["cpu"] and rows[0]["runs_on"] == ["ubuntu-latest"]
    done, summary = run.lane(rows[0])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fl-contract lane `cpu` (platform cpu): passed" in summary and "| compiler_probes | ok: passed" in summary
    reports = run.downloaded / "lane-reports"
    assert (reports / "cpu.exit").read_text() == "0\n" and (reports / "cpu" / "compiler_probes.log").is_file()
    done, merged, summary = run.merge()
    assert done.returncode == 0, done.stderr
    assert "| cpu | ok (exit 0) |" in summary
    assert_valid_junit(merged)
    cases = [case for suite in JUnitXml.fromfile(str(merged)) for case in suite]
    assert cases and all(case.classname.startswith("cpu.") for case in cases)
    assert junit.problems(junit.read(merged)) == []


VERDICTS = textwrap.dedent("""\
    lanes:
      good:
        platform: cpu
        runner_labels: [ubuntu-latest]
        steps: [{name: s, command: ['true']}]
      caught:
        platform: nvidia
        runner_labels: [ubuntu-latest]
        steps: [{name: defect, pytest: [test_defect.py, -q, -p, no:cacheprovider], expect: fail}]
      broken:
        platform: nvidia
        runner_labels: [self-hosted, nvidia]
        steps: [{name: s, command: ['false']}]
      needs-wheel:
        platform: cpu
        runner_labels: [ubuntu-latest]
        packages: ["${FL_FLAGGEMS_54}"]
        steps: [{name: s, command: ['true']}]
      lost:
        platform: cpu
        runner_labels: [ubuntu-latest]
        steps: [{name: s, command: ['true']}]
""")


def test_each_lane_job_fails_exactly_when_its_run_does_and_merge_says_which(tmp_path):
    run = Run(tmp_path, VERDICTS)
    done, rows = run.setup()
    assert done.returncode == 0, done.stderr
    by_lane = {row["lane"]: row for row in rows}
    assert list(by_lane) == ["good", "caught", "broken", "needs-wheel", "lost"]
    jobs = {}
    for lane in ("good", "caught", "broken", "needs-wheel"):  # `lost`: its runner never came back
        jobs[lane], summary = run.lane(by_lane[lane])
        assert f"fl-contract lane `{lane}`" in summary
    exits = {lane: done.returncode for lane, done in jobs.items()}
    assert exits == {"good": 0, "caught": 0, "broken": 1, "needs-wheel": 4}  # an expected failure is a pass
    skipped = [line for line in jobs["needs-wheel"].stdout.splitlines() if line.startswith("::error")]
    assert skipped == [
        "::error title=lane needs-wheel skipped::an input it needs is not set (see the summary): "
        "a skipped lane is never green"
    ]  # FL_FLAGGEMS_54 unset: red, never green
    assert not any("::error" in done.stdout for lane, done in jobs.items() if lane != "needs-wheel")
    done, merged, summary = run.merge()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [  # each from the lane's report, and again from its job's exit
        "fl-contract: lane broken: step s: failed",
        "fl-contract: lane broken: fl-contract run FAIL (exit 1)",
        "fl-contract: lane needs-wheel: step s: not run",
        "fl-contract: lane needs-wheel: fl-contract run SKIPPED (an input it needs was not set) (exit 4)",
        "fl-contract: lane lost: no report lost.xml: its job uploaded no reports/ (cancelled, timed out, or its "
        "runner was lost)",
    ]
    assert "| caught | ok (exit 0) |" in summary and "| good | ok (exit 0) |" in summary
    assert_valid_junit(merged)
    lanes = {case.classname.split(".")[0] for suite in JUnitXml.fromfile(str(merged)) for case in suite}
    assert lanes == set(by_lane)


def test_the_setup_job_fails_on_an_empty_selection(tmp_path):
    run = Run(tmp_path, MANIFEST.read_text(), lanes="nomatch*")
    done, rows = run.setup()
    assert done.returncode == 2 and rows == []
    assert done.stderr.strip().startswith("fl-contract: error: --lanes 'nomatch*' selects no lane of ci/manifest.yaml")
    assert not outputs(tmp_path / "setup.runner" / "output")  # no matrix, so no lane job and no merge


# -- the README's fan-out ------------------------------------------------------------------


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^### One job per lane.*?(?=^### )", text, re.S | re.M)
    assert section, "README lost its fan-out section"
    return section.group(0)


def test_readme_fan_out_snippets_pass_the_checkers(tmp_path):
    caller_block, gitlab_block = re.findall(r"```yaml\n(.*?)```", readme_section(), re.S)
    caller = tmp_path / ".github" / "workflows" / "caller.yml"
    caller.parent.mkdir(parents=True)
    caller.write_text("name: lanes\non: [push]\n" + caller_block)
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    done = subprocess.run(
        [tool("actionlint"), "-no-color", str(caller)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    schema_check("vendor.github-workflows", caller)
    (job,) = workflow(caller)["jobs"].values()
    assert job["uses"].endswith("/pytest-fl-contract/.github/workflows/fl-contract-lanes.yml@TAG")
    assert set(job["with"]) <= set(workflow(REUSABLE)["on"]["workflow_call"]["inputs"])
    parent = tmp_path / ".gitlab-ci.yml"
    parent.write_text(gitlab_block)
    schema_check("vendor.gitlab-ci", parent)
    assert (
        "matrix --format gitlab > fl-contract-lanes.yml"
        in yaml.safe_load(gitlab_block)["fl-contract-matrix"]["script"][1]
    )


def test_readme_torch_fl_commands_fan_a_torch_fl_checkout_out(tmp_path):
    """The README's first two torch_fl commands, exactly, in a checkout holding
    `.github/configs/<platform>.yml` files: the import feeds `matrix` unchanged."""
    from .test_migrate import ILUVATAR

    block = re.search(r"<!-- torch-fl-fan-out[^>]*-->\s*```\n(.*?)```", readme_section(), re.S)
    assert block, "README lost its torch-fl-fan-out block"
    commands = block.group(1).splitlines()
    assert len(commands) == 3 and commands[0].startswith("fl-contract import")
    configs = tmp_path / ".github" / "configs"
    configs.mkdir(parents=True)
    (configs / "iluvatar.yml").write_text(ILUVATAR)
    (configs / "cuda.yml").write_text("runner_labels: [self-hosted, h200]\nintegration_tests: []\n")
    (tmp_path / "ci").mkdir()
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(commands[:2])],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["include"]
    assert [(row["lane"], row["runs_on"]) for row in rows] == [
        ("cuda", ["self-hosted", "h200"]),
        ("iluvatar", ["self-hosted", "iluvatar"]),
    ]
