"""``fl-contract``: the lane runner's commands (``lanes/``), platform detection, the
compiler probes (``probes.py``) and the opt-in mutant zoo (``testing/``).

Bad input is one line on stderr and a non-zero exit, never a traceback; a reader that
goes away (``fl-contract mutants --list | head -1``) ends us quietly with 141, as SIGPIPE
would.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import __version__
from .lanes import commands as lane_commands
from .results import commands as result_commands
from .triage import commands as triage_commands
from .util import FlContractError, md_code, md_text
from .util import one_line as util_one_line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other bad input
        raise FlContractError(message)


def cmd_platform(args: argparse.Namespace) -> int:
    from .config.platforms import detect

    detection = detect(lane_commands.registry(args))
    print(f"{detection.platform} ({detection.how})")
    return 0


def defect_lines(platform: Any, covers: set[str], markdown: bool = False) -> list[str]:
    """The platform's known defects as a lane engineer reads them: whose (the vendor's
    compiler or FlagGems), which ops (and FlagGems versions, from the op rows), whether the
    workaround covers it, where it was seen."""
    from .registry import ROWS

    rows = []
    for d in platform.defects:
        versions = ROWS.defect_reach(d.id) if d.flag_gems else {}
        where = ("; " if d.flag_gems else ", ").join(
            f"{op} ({', '.join(versions[op]) if versions.get(op) else 'every version'})" if d.flag_gems else op
            for op in ROWS.reach(d)
        )
        seen = f" (seen: {'; '.join(d.seen)})" if d.seen else ""
        rows.append(
            (
                d.id,
                "FlagGems" if d.flag_gems else "compiler",
                where or "-",
                "yes" if d.id in covers else "no",
                " ".join(d.description.split()) + seen,
            )
        )
    if markdown:  # every name may come from a platforms file: inert in the table (util.md_text)
        head = ["| defect | whose | ops (FlagGems versions) | workaround covers | what |", "|---|---|---|---|---|"]
        return head + [
            f"| {md_code(r[0])} | {r[1]} | {md_text(r[2], 2000)} | {r[3]} | {md_text(r[4], 2000)} |" for r in rows
        ]
    return [f"{r[0]}: {r[1]}; ops {r[2]}; workaround covers it: {r[3]}\n    {r[4]}" for r in rows]


def cmd_defects(args: argparse.Namespace) -> int:
    """The registry's known defects of one platform (default: this machine's)."""
    from .config.platforms import detect
    from .config.settings import DEFAULT_WORKAROUND

    registry = lane_commands.registry(args)
    platform = registry.get(args.platform) if args.platform else registry.get(detect(registry).platform)
    print(
        f"**{md_text(platform.name)}: known defects**\n"
        if args.markdown
        else f"{util_one_line(platform.name)}: {len(platform.defects)} known defects"
    )
    for line in defect_lines(platform, set(registry.covered_by(DEFAULT_WORKAROUND)), args.markdown):
        print(line)
    return 0


def cmd_contracts(args: argparse.Namespace) -> int:
    """Run the packaged contract suites: no checkout, no path, the caller's config untouched.
    An interrupt (Ctrl-C, or ``timeout -s INT`` at a CI step's limit) reaches pytest with the
    process group; this waits for it to write its summary and the JUnit report of what ran,
    instead of leaving without them.  A second interrupt ends pytest (terminate, then kill)."""
    import subprocess

    from .config.suites import pytest_argv

    child = subprocess.Popen(pytest_argv(args.suites, args.passthrough))
    interrupts = 0
    while True:
        try:
            code = child.wait()
            return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts >= 2 and child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()


def cmd_probe(args: argparse.Namespace) -> int:
    """The compiler probe battery on this lane's device, as a table for a vendor bug report."""
    from .probes.catalogue import command

    return command(args, lane_commands.registry(args))


def github_output_lines(name: str, values: Sequence[str]) -> list[str]:
    """``name=value``, or GitHub's multi-line form (``name<<EOF``, a line each, ``EOF``) for
    several (paths: absolute, so none is the line ``EOF``)."""
    return [f"{name}={values[0]}"] if len(values) == 1 else [f"{name}<<EOF", *values, "EOF"]


def cmd_triton_cache(args: argparse.Namespace) -> int:
    """What a GPU lane's job carries between runs: Triton's and FlagGems' cache directories
    and its durations record, and the key to save them under (``hardware.tritoncache``); ``cache=false`` for a lane
    that compiles nothing.  ``--github-output`` appends the same lines to ``$GITHUB_OUTPUT``."""
    from .config.safeyaml import shown
    from .hardware.tritoncache import interpreted, lane_plan

    target = os.environ.get("GITHUB_OUTPUT") if args.github_output else None
    if args.github_output and not target:
        raise FlContractError(
            "--github-output: GITHUB_OUTPUT is not set (not a GitHub Actions step); "
            "leave the option out to print the lines only"
        )
    path, why = lane_commands.locate(args.manifest)
    loaded = lane_commands.manifest(args)  # which one is said once the lane is found: a refusal stays one line
    lane = loaded.lanes.get(args.lane)
    if lane is None:
        raise FlContractError(f"unknown lane {args.lane!r}; lanes in {shown(loaded.path)}: {', '.join(loaded.lanes)}")
    if not args.manifest:
        print(f"fl-contract: manifest: {shown(path)} ({why})", file=sys.stderr)
    cache = lane_plan(lane)
    if cache is None:
        print(f"fl-contract: lane {lane.name}: no cache to carry: {interpreted(lane)}", file=sys.stderr)
        lines = ["cache=false"]
    else:
        lines = ["cache=true", *github_output_lines("path", cache.paths), f"key={cache.key}"]
    text = "".join(f"{line}\n" for line in lines)
    if target:
        from . import files

        try:  # a FIFO or a socket there is refused, never opened and waited on
            files.append_text(target, text)
        except OSError as exc:
            raise FlContractError(f"--github-output: cannot append to {shown(target)}: {exc.strerror}") from None
    sys.stdout.write(text)
    return 0


def cmd_mutants(args: argparse.Namespace) -> int:
    from .testing.run import main as mutants_main

    return mutants_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fl-contract", description="FlagGems contract lanes")
    parser.add_argument("--version", action="version", version=f"fl-contract {__version__}")
    parser.add_argument(
        "--manifest",
        default=None,
        help=f"lane manifest (default: ./{lane_commands.DEFAULT_MANIFEST}, else the packaged one)",
    )
    parser.add_argument("--platforms-file", action="append", default=[], help="extra platform registry file")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    lane_commands.register(sub)
    result_commands.register(sub)
    triage_commands.register(sub)
    sub.add_parser("platform", help="print the detected platform and how").set_defaults(fn=cmd_platform)
    defects = sub.add_parser(
        "defects", help="the known defects of a platform: whose, which ops and versions, covered or not"
    )
    defects.add_argument(
        "--platform", default=None, metavar="NAME", help="a registry platform (default: this machine's)"
    )
    defects.add_argument("--markdown", action="store_true", help="a Markdown table")
    defects.set_defaults(fn=cmd_defects)
    contracts = sub.add_parser("contracts", help="run the packaged contract suites (pytest args after --)")
    contracts.add_argument("suites", nargs="*", metavar="SUITE", help="reductions, copy, probes (default: all)")
    contracts.set_defaults(fn=cmd_contracts)
    probe = sub.add_parser("probe", help="run the compiler probes on this lane's device and print the table")
    probe.add_argument(
        "--platform",
        default=None,
        metavar="NAME|auto",
        help="platform of this lane (default: FL_PLATFORM, else auto-detected)",
    )
    probe.add_argument(
        "--emulate",
        action="store_true",
        help="emulate the platform on this CPU: Triton's interpreter with its registry defects injected",
    )
    probe.add_argument("--profile", default=None, metavar="NAME", help="device profile for the emulator")
    probe.add_argument(
        "--inject",
        action="append",
        default=[],
        metavar="DEFECT",
        help="inject this defect under the emulator (repeatable)",
    )
    probe.add_argument("--only", action="append", default=[], metavar="PROBE", help="run only this probe (repeatable)")
    probe.add_argument("--markdown", action="store_true", help="print a Markdown table (for a bug report)")
    probe.add_argument(
        "--mutants",
        action="store_true",
        help="run each probe's mutant kernel (its feature broken in source): all must be caught",
    )
    probe.set_defaults(fn=cmd_probe)
    triton = sub.add_parser(
        "triton-cache",
        help="a lane's Triton and FlagGems caches and durations record, and the CI "
        "cache key to carry them between runs (cache=false: the lane compiles nothing)",
    )
    triton.add_argument("lane", help="a lane of the manifest (--manifest)")
    triton.add_argument(
        "--github-output",
        action="store_true",
        help="also append the lines to $GITHUB_OUTPUT (the step's outputs: cache, path, key)",
    )
    triton.set_defaults(fn=cmd_triton_cache)
    mutants = sub.add_parser("mutants", help="run the contracts against each defect mutant")
    mutants.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    mutants.add_argument("--jobs", type=int, default=0, help="mutants in parallel (default: CPU count)")
    mutants.add_argument("--list", action="store_true", help="list the mutants and exit")
    mutants.add_argument(
        "--every-killer",
        action="store_true",
        help="run every contract of the mutated op (no -x): which contracts kill each mutant, "
        "and the mutants only one contract kills",
    )
    mutants.add_argument(
        "--search", action="store_true", help="search each mutant's whole selection, not its recorded killer first"
    )
    mutants.add_argument(
        "--record-killers",
        action="store_true",
        help="search (as --search) and record each mutant's first killing case in the "
        "package's killers.json, which later runs try first",
    )
    mutants.set_defaults(fn=cmd_mutants)
    return parser


def one_line(text: str) -> str:
    """An error message as one printable line (``util.one_line``, long enough for a list of names)."""
    return util_one_line(text, 4000, collapse=False)


def _quiet_stdout() -> None:
    """stdout's reader is gone: point it at /dev/null so the final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


_GLOBAL_VALUES = ("--manifest", "--platforms-file")  # global options that take a value


def _command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (the first word that is not a global option or its value)."""
    words = iter(argv)
    for word in words:
        if word in _GLOBAL_VALUES:
            next(words, None)
        elif word == "--" or not word.startswith("-"):
            return None if word == "--" else word
    return None


def _standard_streams() -> None:
    """Run with stdin, stdout or stderr closed (``run >&-``, ``matrix 2>&-``), the first
    file we open would take that number and a print meant for stderr would land in the JSON
    on stdout: each closed one is opened on /dev/null first, as daemons do."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115 - the process's own stream


def main(argv: list[str] | None = None) -> int:
    _standard_streams()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv and _command(argv) in (
        "contracts",
        "repro",
        "triage",
    ):  # pytest's own arguments; elsewhere '--' is argparse's
        passthrough = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    try:
        args = parser.parse_args(argv)
        args.passthrough = passthrough
        if getattr(args, "path", None):
            args.manifest = args.path
        if not getattr(args, "fn", None):
            names = ", ".join(sorted(parser._subparsers._group_actions[0].choices or ()))  # type: ignore[union-attr, arg-type]
            raise FlContractError(f"missing command; one of: {names}")
        code = args.fn(args)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except FlContractError as exc:
        print(f"fl-contract: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fl-contract: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        print(f"fl-contract: internal error: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
