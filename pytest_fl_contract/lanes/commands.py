"""The lane runner's ``fl-contract`` commands: lanes, check, run, report, import."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import FlContractError

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
    from ..platforms import load_registry

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


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import publish, run_lane

    loaded = manifest(args, print)
    lane = loaded.lanes.get(args.lane)
    if lane is None:
        raise FlContractError(f"unknown lane {args.lane!r}; lanes in {loaded.path}: {', '.join(loaded.lanes)}")
    if args.step and args.step not in {s.name for s in lane.steps}:
        raise FlContractError(
            f"lane {lane.name!r} has no step {args.step!r}; steps: {', '.join(s.name for s in lane.steps)}"
        )
    ok, markdown = run_lane(lane, Path(args.reports), only=args.step, fail_fast=args.fail_fast)
    publish(markdown)
    return 0 if ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    from . import junit
    from .runner import publish

    rows = []
    bad = False
    for name in args.files:
        try:
            counts = junit.count(junit.read(Path(name)), Path(name).stem)
        except (ValueError, OSError) as exc:
            raise FlContractError(str(exc)) from None
        failed = counts.failed + counts.errors
        bad |= failed > 0
        rows.append((counts, "FAIL" if failed else "ok"))
    publish(junit.summary_markdown("fl-contract report", rows))
    return 1 if bad else 0


def cmd_import(args: argparse.Namespace) -> int:
    from .migrate import to_manifest

    text, notices = to_manifest([Path(p) for p in args.files], registry(args))
    for notice in notices:
        print(f"fl-contract import: {notice}", file=sys.stderr)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


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
    run.set_defaults(fn=cmd_run)
    report = sub.add_parser("report", help="summarise existing JUnit files")
    report.add_argument("files", nargs="+")
    report.set_defaults(fn=cmd_report)
    imp = sub.add_parser("import", help="convert torch_fl .github/configs/<platform>.yml files into manifest lanes")
    imp.add_argument("files", nargs="+")
    imp.add_argument("-o", "--output", help="write the manifest here instead of stdout")
    imp.set_defaults(fn=cmd_import)
