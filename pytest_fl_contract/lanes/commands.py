"""The lane runner's ``fl-contract`` commands: lanes, check, run, report, import, matrix, merge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import files
from ..config.safeyaml import shown
from ..util import FlContractError, md_text

DEFAULT_MANIFEST = "ci/manifest.yaml"


def locate(requested: str | None) -> tuple[Path, str]:
    """The manifest to use and why: ``--manifest`` when given, else ``./ci/manifest.yaml``
    when the working directory has one, else the one packaged with pytest-fl-contract."""
    if requested:
        return Path(requested), "--manifest"
    local = Path(DEFAULT_MANIFEST)
    if local.is_file():
        return local, "found in the working directory"
    from importlib import metadata, resources

    packaged = resources.files("pytest_fl_contract.ci").joinpath("manifest.yaml")
    return Path(str(packaged)), f"packaged with pytest-fl-contract {metadata.version('pytest-fl-contract')}"


def registry(args: argparse.Namespace):
    from ..config.platforms import load_registry

    return load_registry(args.platforms_file)


def manifest(args: argparse.Namespace, say=None):
    """Load the manifest; ``say`` (a print function) is told which one and why, unless the
    caller named it."""
    from .manifest import load

    path, why = locate(args.manifest)
    if say is not None and not args.manifest:
        say(f"manifest: {path} ({why})")
    return load(path, registry(args))


def _stderr(line: str) -> None:
    print(f"fl-contract: {line}", file=sys.stderr)


def cmd_lanes(args: argparse.Namespace) -> int:
    for lane in manifest(args, _stderr).lanes.values():
        steps = ", ".join(s.name + (" (expect fail)" if s.expect == "fail" else "") for s in lane.steps)
        print(f"{lane.name:<34} {lane.platform:<10} {steps}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    loaded = manifest(args, _stderr)
    steps = sum(len(lane.steps) for lane in loaded.lanes.values())
    print(f"{loaded.path}: ok, {len(loaded.lanes)} lanes, {steps} steps")
    return 0


def output_cap(text: str) -> int:
    """``--output-cap BYTES`` (also 64k, 2M): the bytes of a step's output its case keeps."""
    from .manifest import MAX_OUTPUT_CAP, MIN_OUTPUT_CAP

    units = {"k": 1024, "m": 1024 * 1024}
    raw = text.strip().lower()
    try:
        value = int(raw[:-1]) * units[raw[-1]] if raw and raw[-1] in units else int(raw)
    except ValueError:
        raise FlContractError(f"--output-cap {text!r}: expected a number of bytes (e.g. 65536, 64k, 2m)") from None
    if not MIN_OUTPUT_CAP <= value <= MAX_OUTPUT_CAP:
        raise FlContractError(f"--output-cap {text!r}: must be between {MIN_OUTPUT_CAP} and {MAX_OUTPUT_CAP} bytes")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    from ..reporting.publish import publish
    from .runner import run_lane, signal_name

    reports = Path(args.reports)
    if reports.exists() and not reports.is_dir():
        raise FlContractError(f"--reports {shown(reports)}: not a directory")
    cap = output_cap(args.output_cap) if args.output_cap is not None else None
    loaded = manifest(args, print)
    lane = loaded.lanes.get(args.lane)
    if lane is None:
        raise FlContractError(f"unknown lane {args.lane!r}; lanes in {shown(loaded.path)}: {', '.join(loaded.lanes)}")
    if args.step and args.step not in {s.name for s in lane.steps}:
        raise FlContractError(
            f"lane {lane.name!r} has no step {args.step!r}; steps: {', '.join(s.name for s in lane.steps)}"
        )
    if args.rerun_failures < 0:
        raise FlContractError(f"--rerun-failures {args.rerun_failures}: a count of re-runs, 0 or more")
    run = run_lane(
        lane, reports, only=args.step, fail_fast=args.fail_fast, output_cap=cap, rerun_failures=args.rerun_failures
    )
    trouble = publish(run.markdown)
    for line in (trouble, run.problem):
        if line:
            _stderr(line)
    if run.skipped:
        _stderr(f"lane {lane.name} skipped: {run.skipped} (exit {run.exit_code}: it ran nothing)")
    if run.cancelled:
        not_started = sum(r.verdict == "not run" for r in run.results)
        _stderr(
            f"cancelled by {signal_name(run.cancelled)}: {not_started} step(s) not run; "
            f"every step is in {shown(run.report)}"
        )
    return run.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    """Summarise JUnit files; a file that cannot be trusted as a verdict (no cases, counts
    that disagree with its cases, suite-level errors) or shows nothing held (no case passed:
    ``verdict.ran_nothing``) fails with one line saying why."""
    from ..reporting import junit
    from ..reporting.publish import publish
    from . import verdict

    rows = []
    bad = False
    complaints = []
    for name in args.files:
        path = Path(name)
        try:
            report = junit.read(path)
        except OSError as exc:
            raise FlContractError(f"{shown(name)}: cannot read: {exc.strerror}") from None
        except ValueError as exc:
            raise FlContractError(str(exc)) from None
        counts = junit.count(report, path.stem)
        trouble = junit.problems(report) + counts.problems
        nothing = verdict.ran_nothing(counts) if report.cases else None
        trouble += [nothing] if nothing else []
        failed = counts.failed + counts.errors
        bad |= failed > 0 or bool(trouble)
        rows.append((counts, "FAIL" if failed or trouble else "ok"))
        if trouble:
            more = f" (and {len(trouble) - 1} more)" if len(trouble) > 1 else ""
            complaints.append(f"{shown(name)}: {trouble[0]}{more}")
    publish(junit.summary_markdown("fl-contract report", rows))
    for line in complaints:
        _stderr(line)
    return 1 if bad else 0


def cmd_import(args: argparse.Namespace) -> int:
    from .migrate import to_manifest

    text, notices = to_manifest([Path(p) for p in args.files], registry(args))
    for notice in notices:
        print(f"fl-contract import: {notice}", file=sys.stderr)
    if args.output:
        try:
            files.write_atomic(args.output, text.encode("utf-8"))
        except OSError as exc:
            raise FlContractError(f"-o {shown(args.output)}: cannot write: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    """The selected lanes as CI jobs: GitHub's strategy.matrix (one JSON line, for
    ``$GITHUB_OUTPUT``) or a GitLab child pipeline; the lanes chosen are listed on stderr."""
    import json

    from . import matrix
    from .manifest import label_problem

    for tag in args.hosted_tag:
        problem = label_problem(tag)
        if problem:
            raise FlContractError(f"--hosted-tag {tag!r} {problem}")
    path, why = locate(args.manifest)
    loaded = manifest(args)  # which one is said below, once it is good: a refusal stays one line
    lanes = matrix.select(loaded, args.lanes, args.platform, args.runners, registry(args))
    jobs = []
    notices = []
    for lane in lanes:
        job, notice = matrix.job(lane)
        jobs.append(job)
        notices += [notice] if notice else []
    if args.format == "github":  # a refusal stays one line
        matrix.check_github(jobs)
    for notice in notices:
        _stderr(notice)
    torch = matrix.cpu_torch() if any(j.hosted for j in jobs) else ""
    _stderr(f"matrix: {len(jobs)} of the {len(loaded.lanes)} lanes of {shown(path)} ({why})")
    for j in jobs:
        needs = f", needs {', '.join(j.inputs)}" if j.inputs else ""
        brings = "hosted: the [cpu] extra" if j.hosted else "brings its own torch"
        _stderr(f"matrix: {j.lane} on [{', '.join(j.labels)}] ({brings}), {j.timeout} min{needs}")
    if args.format == "github":
        print(json.dumps(matrix.github(jobs, torch), separators=(",", ":")))
    else:
        manifest_arg = None if why.startswith("packaged") else str(path)  # the packaged one: every job finds it
        pipeline = matrix.gitlab(jobs, torch, manifest_arg, args.package, tuple(args.hosted_tag))
        sys.stdout.write(matrix.gitlab_text(pipeline, str(path)))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Every lane's LANE.xml in one xunit2 report, lane in classname; exit 1 when a lane
    has no report, an untrusted one, or a non-zero ``LANE.exit`` (the lane job's status)."""
    from ..reporting import junit
    from ..reporting.publish import publish
    from ..results import scoreboard
    from . import merge

    directory = Path(args.reports)
    output = Path(args.output)
    if output.is_dir():
        raise FlContractError(f"--output {shown(output)}: is a directory")
    merge.check_output(directory, output)
    lanes = merge.lane_names(directory, args.lanes, output)
    merged = merge.merge(directory, lanes)
    try:
        junit.write(merged.report, output, name="fl-contract lanes")
    except OSError as exc:
        raise FlContractError(f"--output {shown(output)}: cannot write: {exc.strerror}") from None
    state = "every lane got its verdict" if not merged.failures else f"{len(merged.failures)} problem(s)"
    trouble = publish(
        junit.summary_markdown(
            f"fl-contract lanes: {len(lanes)} merged into {md_text(output.name)}, {state}", merged.rows
        )
        + scoreboard.report_lines(merged.report, str(output), output.stem)
    )
    for line in ([trouble] if trouble else []) + merged.failures:
        _stderr(line)
    return 1 if merged.failures else 0


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("lanes", help="list the manifest's lanes").set_defaults(fn=cmd_lanes)
    check = sub.add_parser("check", help="validate a manifest")
    check.add_argument("path", nargs="?", help="manifest to check (default: --manifest)")
    check.set_defaults(fn=cmd_check)
    run = sub.add_parser("run", help="run a lane's steps; writes reports/LANE/STEP.xml and reports/LANE.xml")
    run.add_argument("lane")
    run.add_argument("--step", help="run only this step")
    run.add_argument("--reports", default="reports", help="report directory (default reports/)")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first step that does not get its verdict")
    run.add_argument(
        "--output-cap",
        metavar="BYTES",
        help="bytes of each step's output its JUnit case keeps, head and tail (default: the manifest's "
        "defaults.output_cap, else 64k); the step's .log keeps all of it",
    )
    run.add_argument(
        "--rerun-failures",
        type=int,
        default=0,
        metavar="N",
        help="re-run each failing case N times in fresh processes and label it deterministic or "
        "nondeterministic (it stays a failure either way)",
    )
    run.set_defaults(fn=cmd_run)
    report = sub.add_parser("report", help="summarise existing JUnit files")
    report.add_argument("files", nargs="+")
    report.set_defaults(fn=cmd_report)
    imp = sub.add_parser("import", help="convert torch_fl .github/configs/<platform>.yml files into manifest lanes")
    imp.add_argument("files", nargs="+")
    imp.add_argument("-o", "--output", help="write the manifest here instead of stdout")
    imp.set_defaults(fn=cmd_import)
    mat = sub.add_parser(
        "matrix", help="the lanes as CI jobs: a GitHub Actions matrix (JSON) or a GitLab child pipeline"
    )
    mat.add_argument(
        "--format",
        choices=("github", "gitlab"),
        default="github",
        help="github: strategy.matrix JSON on one line (default); gitlab: child-pipeline YAML",
    )
    mat.add_argument(
        "--lanes",
        default="*",
        metavar="GLOBS",
        help="lanes to take, comma-separated globs; !GLOB leaves lanes out (e.g. '*,!*-fg54')",
    )
    mat.add_argument("--platform", help="only the lanes of this platform (torch_fl names are aliases)")
    from .matrix import RUNNERS

    mat.add_argument(
        "--runners",
        choices=RUNNERS,
        default="all",
        help="hosted: lanes on GitHub-hosted ubuntu-* labels (the CPU lanes); self-hosted: the others",
    )
    mat.add_argument(
        "--package",
        metavar="NAME_OR_PATH",
        help="gitlab: what the jobs pip install (a name or a path, no version; the [cpu] extra is "
        "added for CPU lanes; default: pytest-fl-contract==this version)",
    )
    mat.add_argument(
        "--hosted-tag",
        action="append",
        default=[],
        metavar="TAG",
        help="gitlab: tag for the CPU (GitHub-hosted label) lanes' jobs (default: none, any runner)",
    )
    mat.set_defaults(fn=cmd_matrix)
    mer = sub.add_parser("merge", help="merge the lanes' LANE.xml reports into one (lane in classname)")
    mer.add_argument("--reports", default="reports", help="directory holding LANE.xml and LANE.exit (default reports/)")
    mer.add_argument(
        "--lanes",
        metavar="NAMES",
        help="lanes that must have reported, comma-separated (default: every LANE.xml there)",
    )
    mer.add_argument(
        "-o", "--output", default="fl-contract-lanes.xml", help="merged report (default fl-contract-lanes.xml)"
    )
    mer.set_defaults(fn=cmd_merge)
