"""``fl-contract matrix`` and ``fl-contract merge``: the manifest's lanes fanned out onto CI
runners, and their reports gathered back into one.

The manifest already says where each lane runs (``runner_labels``) and how long it may take,
so the GitHub Actions ``strategy.matrix`` and the GitLab CI child pipeline are generated from
it, never written per lane by hand (a step wired into one job and not another is the drift
this removes).  Labels are put on jobs as written; lanes on GitHub-hosted Linux labels
(``ubuntu-latest``, ``ubuntu-24.04``...) are the CPU lanes: they install the ``[cpu]`` extra
(torch's CPU build, from PyTorch's CPU index), every other lane brings its own torch /
triton / flag_gems and installs pytest-fl-contract alone.

``merge`` reads each lane's ``LANE.xml`` (and the ``LANE.exit`` status the reusable
workflow's lane job records), puts every case under its lane (classname ``LANE.``), and
writes one xunit2 report; a lane with no report, an untrusted one or a non-zero exit is
said in one line and makes the exit non-zero, so the merge job is the one status to require.
"""

from __future__ import annotations

import fnmatch
import math
import re
import shlex
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from .. import files
from ..config import safeyaml
from ..config.platforms import Registry
from ..util import FlContractError
from . import junit, verdict
from .manifest import NAME_RE, NAME_RULE, SETUP_STEP, Lane, Manifest, Step

SELF_HOSTED = "self-hosted"
# GitHub-hosted Linux runners: the only hosted labels a CPU lane (torch's Linux CPU wheel) can use.
HOSTED_LABEL = re.compile(r"ubuntu-(?:latest|slim|\d+\.\d+)(?:-arm)?\Z")
JOB_MARGIN_MINUTES = 15  # checkout, install and upload around the lane's own budget
MAX_JOB_MINUTES = {True: 360, False: 7200}  # GitHub's job limits: hosted 6 h, self-hosted 5 days
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
GITLAB_HOSTED_IMAGE = "python:3.11"  # CPU lanes on GitLab: a Debian image with Python, no tag
DIST = "pytest-fl-contract"
RUNNERS = ("all", "hosted", "self-hosted")
VERDICTS = {0: "ok", 1: "FAIL", 4: "SKIPPED (an input it needs was not set)"}


@dataclass(frozen=True)
class LaneJob:
    """One lane as a CI job."""

    lane: str
    platform: str
    labels: tuple[str, ...]
    hosted: bool  # GitHub-hosted Linux: the [cpu] extra and torch's CPU build
    timeout: int  # job minutes: the lane's own budget plus JOB_MARGIN_MINUTES
    budget: float  # minutes the lane's steps may take (timeout_minutes, else their timeouts added up)
    image: str
    inputs: tuple[str, ...]  # variables its packages: name (${VAR}); unset, the lane exits 4


def is_hosted(labels: tuple[str, ...]) -> bool:
    return bool(labels) and SELF_HOSTED not in labels and all(HOSTED_LABEL.match(label) for label in labels)


def budget_minutes(lane: Lane) -> float:
    """What ``fl-contract run`` may spend on the lane: its steps' timeouts (its setup and
    package install included), capped by its timeout_minutes."""
    from .runner import PACKAGES_TIMEOUT

    seconds = sum(step.timeout for step in lane.steps)
    if lane.setup:
        seconds += Step(SETUP_STEP, "command", ()).timeout
    if lane.packages:
        seconds += PACKAGES_TIMEOUT
    minutes = seconds / 60
    return min(minutes, lane.timeout_minutes) if lane.timeout_minutes else minutes


def _patterns(text: str) -> tuple[list[str], list[str]]:
    """``--lanes 'a*,b,!c*'``: globs to take and (``!``) to leave out; none taken means all."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    take = [item for item in items if not item.startswith("!")]
    drop = [item[1:] for item in items if item.startswith("!")]
    return take or ["*"], drop


def select(
    manifest: Manifest, lanes: str = "*", platform: str | None = None, runners: str = "all",
    registry: Registry | None = None,
) -> list[Lane]:  # fmt: skip
    """The lanes ``--lanes``, ``--platform`` and ``--runners`` pick, in manifest order; an
    empty selection is one line (a matrix of no job is an error on both CI systems)."""
    wanted = None
    if platform:
        wanted = registry.canonical(platform) if registry is not None else platform
        if wanted is None:
            known = ", ".join(registry.names) if registry is not None else ""
            raise FlContractError(f"--platform {platform!r}: unknown platform; known: {known}")
    take, drop = _patterns(lanes)
    chosen = []
    for lane in manifest.lanes.values():
        if not any(fnmatch.fnmatchcase(lane.name, p) for p in take) or any(
            fnmatch.fnmatchcase(lane.name, p) for p in drop
        ):
            continue
        if wanted and lane.platform != wanted:
            continue
        hosted = is_hosted(lane.runner_labels)
        if (runners == "hosted" and not hosted) or (runners == "self-hosted" and hosted):
            continue
        chosen.append(lane)
    if not chosen:
        how = " ".join(
            [f"--lanes {lanes!r}"] + ([f"--platform {platform!r}"] if platform else [])
            + ([f"--runners {runners}"] if runners != "all" else [])
        )  # fmt: skip
        raise FlContractError(
            f"{how} selects no lane of {safeyaml.shown(manifest.path)} (its lanes: {', '.join(manifest.lanes)})"
        )
    return chosen


def job(lane: Lane) -> tuple[LaneJob, str | None]:
    """The lane as a job, and a notice when its runners' job limit is shorter than its budget."""
    if not lane.runner_labels:
        raise FlContractError(
            f"lane {lane.name!r} has no runner_labels: no job can be placed for it "
            f"(give it runner_labels, or leave it out with --lanes '*,!{lane.name}')"
        )
    hosted = is_hosted(lane.runner_labels)
    budget = budget_minutes(lane)
    wanted = math.ceil(budget) + JOB_MARGIN_MINUTES
    limit = MAX_JOB_MINUTES[hosted]
    notice = None
    if wanted > limit:
        notice = (f"lane {lane.name}: its steps may take {budget:g} min, past the {limit}-minute job limit of "
                  "its runners: the job can be stopped before the lane writes its report")  # fmt: skip
    return LaneJob(lane.name, lane.platform, lane.runner_labels, hosted, min(wanted, limit), budget, lane.image,
                   lane.inputs()), notice  # fmt: skip


def cpu_torch(dist: str = DIST) -> str:
    """The torch pin of the installed package's ``[cpu]`` extra (``torch==2.13.0``): the CPU
    lanes install exactly it, from PyTorch's CPU index, so no pin is copied into CI files."""
    try:
        requires = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        requires = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        if re.match(r"torch(?![A-Za-z0-9_.-])", spec.strip()) and re.search(r"extra\s*==\s*[\"']cpu[\"']", marker):
            return "".join(spec.split())
    raise FlContractError(f"no torch pin in the [cpu] extra of the installed {dist}: reinstall it")


def github(jobs: list[LaneJob], torch: str) -> dict[str, Any]:
    """The ``strategy.matrix`` of the reusable workflow's lane job: ``{"include": [row, ...]}``."""
    return {"include": [{
        "lane": j.lane,
        "platform": j.platform,
        "runs_on": list(j.labels),
        "hosted": j.hosted,
        "timeout": j.timeout,
        "extras": "cpu" if j.hosted else "",
        "torch": torch if j.hosted else "",
        "image": j.image,
        "inputs": ",".join(j.inputs),
    } for j in jobs]}  # fmt: skip


def _version() -> str:
    """The installed pytest-fl-contract's version: the GitLab jobs install the one that wrote them."""
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from .. import __version__

        return __version__


def _gitlab_timeout(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours}h" if hours else "", f"{rest}m" if rest else "") if part)


def gitlab(jobs: list[LaneJob], torch: str, manifest_arg: str | None, package: str | None,
           hosted_tags: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """A child pipeline: one job ``lane:NAME`` per lane (the prefix keeps a lane called
    ``image`` or ``variables`` from being read as a keyword), tags from its labels (less
    GitHub's ``self-hosted``, which GitLab runners do not carry), its JUnit as the job's report."""
    pipeline: dict[str, Any] = {}
    for j in jobs:
        extras = "[cpu]" if j.hosted else ""
        spec = f"{package}{extras}" if package else f"{DIST}{extras}=={_version()}"
        install = [f"python3 -m pip install {shlex.quote(torch)} --index-url {PYTORCH_CPU_INDEX}"] if j.hosted else []
        install.append(f"python3 -m pip install {shlex.quote(spec)}")
        argv = ["fl-contract", *(["--manifest", manifest_arg] if manifest_arg else []), "run", j.lane,
                "--reports", "reports"]  # fmt: skip
        body: dict[str, Any] = {"stage": "test"}
        image = j.image or (GITLAB_HOSTED_IMAGE if j.hosted else "")
        if image:
            body["image"] = image
        tags = list(hosted_tags) if j.hosted else [label for label in j.labels if label != SELF_HOSTED]
        if tags:
            body["tags"] = tags
        body["timeout"] = _gitlab_timeout(j.timeout)
        body["before_script"] = install
        body["script"] = [shlex.join(argv)]
        body["artifacts"] = {"when": "always", "paths": ["reports/"], "reports": {"junit": f"reports/{j.lane}.xml"}}
        pipeline[f"lane:{j.lane}"] = body
    return pipeline


def gitlab_text(pipeline: dict[str, Any], source: str) -> str:
    from .migrate import comment

    head = (f"# generated by fl-contract matrix --format gitlab from {comment(source)}: {len(pipeline)} lane job(s);\n"
            "# run it as a child pipeline (trigger: include: artifact); a lane exits 4 (its job fails) when an "
            "input it needs is not set\n")  # fmt: skip
    return head + yaml.safe_dump(pipeline, sort_keys=False, width=10_000, allow_unicode=False)


# -- merge: the lanes' reports back into one ---------------------------------------------


@dataclass(frozen=True)
class Merged:
    report: junit.Report
    rows: list[tuple[junit.StepCounts, str]]
    failures: list[str]  # one line per lane that has no report, an untrusted one, or a failed run


def _exit_status(directory: Path, lane: str) -> int | None:
    path = directory / f"{lane}.exit"
    try:
        text = files.read_bytes(path, 64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if re.fullmatch(r"\d{1,3}", text) else -1


def _verdict(status: int | None) -> str:
    if status is None:
        return "no exit status recorded"
    if status < 0:
        return "FAIL (unreadable exit status)"
    if status > 128:
        return f"CANCELLED (exit {status})"
    return f"{VERDICTS.get(status, 'FAIL')} (exit {status})"


def lane_names(directory: Path, lanes: str | None, output: Path | None = None) -> list[str]:
    """``--lanes a,b`` (the matrix's lanes: every one must have reported), else each
    ``LANE.xml`` in the directory."""
    if lanes is not None:
        names = [name.strip() for name in lanes.replace(" ", ",").split(",") if name.strip()]
        bad = [name for name in names if not NAME_RE.match(name)]
        if bad:
            raise FlContractError(f"--lanes: {bad[0]!r} is not a lane name ({NAME_RULE})")
        if not names:
            raise FlContractError("--lanes names no lane")
        return list(dict.fromkeys(names))
    if not directory.is_dir():
        raise FlContractError(f"--reports {safeyaml.shown(directory)}: not a directory")
    skip = output.resolve() if output is not None else None
    names = sorted(p.stem for p in directory.glob("*.xml")
                   if p.is_file() and NAME_RE.match(p.stem) and p.resolve() != skip)  # fmt: skip
    if not names:
        raise FlContractError(f"no lane reports (LANE.xml) in {safeyaml.shown(directory)}")
    return names


def lane_problems(report: junit.Report) -> list[str]:
    """Why a lane's report is not a lane that got its verdicts, step by step, from its cases
    (``verdict``: the rules the runner applied) - never from an exit status alone.  A step
    is read with the expectation the runner recorded for it (``fl_step``); a report with no
    such record (not written by ``run``) is read as steps that must pass."""
    groups: dict[str, list[junit.Suite]] = {}
    records: dict[str, dict[str, Any]] = {}
    for suite in report.suites:
        record = next((r for name, value in suite.properties if name == verdict.STEP_PROPERTY
                       for r in [verdict.read_record(value)] if r), None)  # fmt: skip
        step = record["step"] if record else suite.name
        groups.setdefault(step, []).append(suite)
        if record:
            records.setdefault(step, record)
    problems = []
    for step, suites in groups.items():
        part = junit.Report(tuple(suites))
        record = records.get(step)
        expect = record["expect"] if record else "pass"
        state = verdict.from_cases(part)
        wanted = verdict.expectation(expect, state, junit.count(part, step))
        if not wanted.ok and not (record and record.get("allow_failure") is True):
            problems.append(f"step {step}: {state}" + (f" (expected to fail: {wanted.note})" if expect == "fail" else ""))
        elif record and record.get("ok") is not wanted.ok and not record.get("allow_failure"):
            problems.append(f"step {step}: recorded as {'ok' if record.get('ok') else 'failed'}, but its cases say "
                            f"{'ok' if wanted.ok else 'not'}")  # fmt: skip
    return problems


def merge(directory: Path, lanes: list[str]) -> Merged:
    """Every lane's report under its lane; a lane whose report is missing or cannot be
    trusted still gets an error case saying so, so the merged report lists every lane.
    A lane fails the merge when its report says a step did not get its verdict (read from
    the cases, whatever ``LANE.exit`` says) or when its job's exit status is non-zero."""
    parts: list[junit.Report] = []
    rows: list[tuple[junit.StepCounts, str]] = []
    failures: list[str] = []
    for lane in lanes:
        path = directory / f"{lane}.xml"
        status = _exit_status(directory, lane)
        trouble = None
        report = None
        if not path.is_file():
            trouble = (f"no report {path.name}: its job uploaded no reports/ (cancelled, timed out, or its runner "
                       "was lost)")  # fmt: skip
        else:
            try:
                report = junit.read(path)
            except (OSError, ValueError) as exc:
                trouble = junit.one_line(getattr(exc, "strerror", None) or str(exc), 300)
            else:
                found = junit.problems(report)
                trouble = f"{path.name} cannot be trusted: {found[0]}" if found else None
        steps = lane_problems(report) if report is not None and not trouble else []
        report = junit.under_lane(report, lane) if report is not None else junit.Report()
        if trouble:
            report = junit.merge([report, junit.error_suite(lane, "report", trouble, "", 0.0)])
            failures.append(f"lane {lane}: {trouble}")
        failures += [f"lane {lane}: {problem}" for problem in steps]
        if status is not None and status != 0:
            failures.append(f"lane {lane}: fl-contract run {_verdict(status)}")
        parts.append(report)
        if trouble:
            shown = f"FAIL: {trouble}"
        elif steps:
            shown = f"FAIL: {steps[0]}" + (f" (and {len(steps) - 1} more)" if len(steps) > 1 else "")
        elif status not in (None, 0):
            shown = _verdict(status)
        else:
            shown = "ok" + (" (exit 0)" if status == 0 else " (verdicts from its report)")
        rows.append((junit.count(report, lane), shown))
    return Merged(junit.merge(parts), rows, failures)
