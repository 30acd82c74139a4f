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
from typing import Any

import yaml

from ..config import safeyaml
from ..config.platforms import Registry
from ..util import FlContractError, installed_version
from .manifest import SETUP_STEP, Lane, Manifest, Step

SELF_HOSTED = "self-hosted"
# GitHub-hosted Linux runners: the only hosted labels a CPU lane (torch's Linux CPU wheel) can use.
HOSTED_LABEL = re.compile(r"ubuntu-(?:latest|slim|\d+\.\d+)(?:-arm)?\Z")
JOB_MARGIN_MINUTES = 15  # checkout, install and upload around the lane's own budget
MAX_JOB_MINUTES = {True: 360, False: 7200}  # GitHub's job limits: hosted 6 h, self-hosted 5 days
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
GITLAB_HOSTED_IMAGE = "python:3.11"  # CPU lanes on GitLab: a Debian image with Python, no tag
DIST = "pytest-fl-contract"
RUNNERS = ("all", "hosted", "self-hosted")
GITHUB_MAX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per workflow run"


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
    manifest: Manifest,
    lanes: str = "*",
    platform: str | None = None,
    runners: str = "all",
    registry: Registry | None = None,
) -> list[Lane]:
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
            [f"--lanes {lanes!r}"]
            + ([f"--platform {platform!r}"] if platform else [])
            + ([f"--runners {runners}"] if runners != "all" else [])
        )
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
        notice = (
            f"lane {lane.name}: its steps may take {budget:g} min, past the {limit}-minute job limit of "
            "its runners: the job can be stopped before the lane writes its report"
        )
    return LaneJob(
        lane.name, lane.platform, lane.runner_labels, hosted, min(wanted, limit), budget, lane.image, lane.inputs()
    ), notice


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


def check_github(jobs: list[LaneJob]) -> None:
    """Over GitHub's 256 jobs a matrix fails the workflow run before any lane starts: refused
    in one line, so it is never emitted."""
    if len(jobs) > GITHUB_MAX_JOBS:
        raise FlContractError(
            f"{len(jobs)} lanes selected: a GitHub Actions matrix holds at most {GITHUB_MAX_JOBS} "
            "jobs; split them over several matrices with --lanes or --platform"
        )


def github(jobs: list[LaneJob], torch: str) -> dict[str, Any]:
    """The ``strategy.matrix`` of the reusable workflow's lane job: ``{"include": [row, ...]}``
    (``check_github``: never more jobs than GitHub runs)."""
    check_github(jobs)
    return {
        "include": [
            {
                "lane": j.lane,
                "platform": j.platform,
                "runs_on": list(j.labels),
                "hosted": j.hosted,
                "timeout": j.timeout,
                "extras": "cpu" if j.hosted else "",
                "torch": torch if j.hosted else "",
                "image": j.image,
                "inputs": ",".join(j.inputs),
            }
            for j in jobs
        ]
    }


def _version() -> str:
    """The installed pytest-fl-contract's version: the GitLab jobs install the one that wrote them."""
    from .. import __version__

    return installed_version(DIST) or __version__  # a source tree that was never installed: its own


def _gitlab_timeout(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours}h" if hours else "", f"{rest}m" if rest else "") if part)


def gitlab(
    jobs: list[LaneJob], torch: str, manifest_arg: str | None, package: str | None, hosted_tags: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A child pipeline: one job ``lane:NAME`` per lane (the prefix keeps a lane called
    ``image`` or ``variables`` from being read as a keyword), tags from its labels (less
    GitHub's ``self-hosted``, which GitLab runners do not carry), its JUnit as the job's report."""
    pipeline: dict[str, Any] = {}
    for j in jobs:
        extras = "[cpu]" if j.hosted else ""
        spec = f"{package}{extras}" if package else f"{DIST}{extras}=={_version()}"
        install = [f"python3 -m pip install {shlex.quote(torch)} --index-url {PYTORCH_CPU_INDEX}"] if j.hosted else []
        install.append(f"python3 -m pip install {shlex.quote(spec)}")
        argv = [
            "fl-contract",
            *(["--manifest", manifest_arg] if manifest_arg else []),
            "run",
            j.lane,
            "--reports",
            "reports",
        ]
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

    head = (
        f"# generated by fl-contract matrix --format gitlab from {comment(source)}: {len(pipeline)} lane job(s);\n"
        "# run it as a child pipeline (trigger: include: artifact); a lane exits 4 (its job fails) when an "
        "input it needs is not set\n"
    )
    return head + yaml.safe_dump(pipeline, sort_keys=False, width=10_000, allow_unicode=False)
