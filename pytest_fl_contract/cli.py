"""``fl-contract``: lanes, check, run, report, import, platform, mutants.

Bad input is one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .errors import FlContractError

DEFAULT_MANIFEST = "ci/manifest.yaml"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        raise FlContractError(message)


def _registry(args: argparse.Namespace):
    from .platforms import load_registry

    return load_registry(args.platforms_file)


def _manifest(args: argparse.Namespace):
    from .manifest import load

    return load(args.manifest, _registry(args))


def cmd_lanes(args: argparse.Namespace) -> int:
    for lane in _manifest(args).lanes.values():
        steps = ", ".join(s.name + (" (expect fail)" if s.expect == "fail" else "") for s in lane.steps)
        print(f"{lane.name:<34} {lane.platform:<10} {steps}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    steps = sum(len(lane.steps) for lane in manifest.lanes.values())
    print(f"{manifest.path}: ok, {len(manifest.lanes)} lanes, {steps} steps")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import publish, run_lane

    manifest = _manifest(args)
    lane = manifest.lanes.get(args.lane)
    if lane is None:
        raise FlContractError(f"unknown lane {args.lane!r}; lanes in {manifest.path}: {', '.join(manifest.lanes)}")
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
            xml = junit.read(Path(name))
        except (ValueError, OSError) as exc:
            raise FlContractError(str(exc)) from None
        counts = junit.count(xml, Path(name).stem)
        failed = counts.failed + counts.errors
        bad |= failed > 0
        rows.append((counts, "FAIL" if failed else "ok"))
    publish(junit.summary_markdown("fl-contract report", rows))
    return 1 if bad else 0


def cmd_import(args: argparse.Namespace) -> int:
    from .migrate import to_manifest

    text, notices = to_manifest([Path(p) for p in args.files], _registry(args))
    for notice in notices:
        print(f"fl-contract import: {notice}", file=sys.stderr)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_platform(args: argparse.Namespace) -> int:
    from .platforms import detect

    detection = detect(_registry(args))
    print(f"{detection.platform} ({detection.how})")
    return 0


def cmd_mutants(args: argparse.Namespace) -> int:
    from .mutants import main as mutants_main

    return mutants_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fl-contract", description="FlagGems contract lanes")
    parser.add_argument("--version", action="version", version=f"fl-contract {__version__}")
    parser.add_argument("--manifest", default=DEFAULT_MANIFEST, help=f"lane manifest (default {DEFAULT_MANIFEST})")
    parser.add_argument("--platforms-file", action="append", default=[], help="extra platform registry file")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
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
    sub.add_parser("platform", help="print the detected platform and how").set_defaults(fn=cmd_platform)
    mutants = sub.add_parser("mutants", help="run the contracts against each defect mutant")
    mutants.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    mutants.add_argument("--jobs", type=int, default=0, help="mutants in parallel (default: CPU count)")
    mutants.add_argument("--list", action="store_true", help="list the mutants and exit")
    mutants.set_defaults(fn=cmd_mutants)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if getattr(args, "path", None):
            args.manifest = args.path
        if not getattr(args, "fn", None):
            raise FlContractError("missing command; one of: lanes, check, run, report, import, platform, mutants")
        return args.fn(args)
    except FlContractError as exc:
        print(f"fl-contract: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fl-contract: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        print(f"fl-contract: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
