"""``fl-contract repro`` and ``fl-contract triage``: the commands over ``triage/``.

``repro CASE... | REPORT``: re-runs the cases (every failing case of a report) under the
lane's options with the recorder loaded, writes a standalone script per failing case, and
with ``--verify`` runs each script standalone on the lane and, for an emulated lane, on the
plain CPU lane: a table of case, script, exit codes.

``triage REPORT``: the failures grouped by cause; per group a reproduction (the first of a
few candidate cases whose script fails standalone), its table, an issue draft; with
``--isolate`` each chosen case re-run alone, after the cases before it, classified.  Writes
``groups.md`` (the list of groups: what a lane summary shows), ``groups.json``, ``drafts/``
and ``repro/`` under ``--out``.  Nothing is sent anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..results import causes as groups
from ..util import FlContractError
from . import drafts, order
from .rerun import Runner, check_versions, clean_env, ident, lane_options


def _runner(args: argparse.Namespace, properties: dict[str, str]) -> Runner:
    """The re-run's runner: the packaged contracts under the lane's options, or ``--root``
    (a suite of one's own) with the caller's pytest options only."""
    extra = tuple(getattr(args, "passthrough", None) or ())
    if args.root:
        root = Path(args.root).resolve()
        if not root.is_dir():
            raise FlContractError(f"--root {args.root}: not a directory")
        return Runner(root, extra)
    why = check_versions(properties)
    if why:
        raise FlContractError(why)
    return Runner.packaged((*lane_options(properties), *extra))


def _report(path: str | None) -> Any:
    from ..results.cases import read_one

    return read_one(Path(path)) if path else None


def _properties(report: Any) -> dict[str, str]:
    """The lane's run properties: the first step that has them (a merged lane's steps each
    carry their own)."""
    if report is None:
        return {}
    for props in [report.properties, *report.step_properties.values()]:
        if props.get("fl_platform"):
            return dict(props)
    return dict(report.properties)


def capture(runner: Runner, cases: list[str], out: Path, lane: str) -> dict[str, dict[str, Any]]:
    """Re-run ``cases`` with the recorder: key -> its line (outcome, script or why)."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "captured.jsonl"
    if log.exists():
        log.unlink()
    outcomes = runner.run(
        cases,
        extra=("-p", "pytest_fl_contract.triage.capture"),
        env={"FL_TRIAGE_OUT": str(out), "FL_TRIAGE_LANE": lane},
    )
    found: dict[str, dict[str, Any]] = {}
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            found[entry["key"]] = entry
    for case in cases:
        if case not in found:
            found[case] = {
                "key": case,
                "outcome": outcomes.get(case, "missing"),
                "why": f"the re-run reported it {outcomes.get(case, 'missing')}",
            }
        elif found[case]["outcome"] not in ("failed", "xfailed") and "script" not in found[case]:
            found[case]["why"] = f"it {found[case]['outcome']} on the re-run: nothing to reproduce"
    return found


def verify(script: str, lane: str | None = None, timeout: float = 900) -> tuple[str, int]:
    """Run a script standalone (its own directory, no plugin on the command line): (output, exit)."""
    argv = [sys.executable, script, *(["--lane", lane] if lane else [])]
    try:
        done = subprocess.run(
            argv,
            cwd=str(Path(script).parent),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={k: v for k, v in clean_env().items() if k not in ("FL_TRIAGE_OUT", "FL_TRIAGE_LANE")},
        )
    except subprocess.TimeoutExpired:
        return f"no result in {timeout:g}s", 124
    return done.stdout + (done.stderr[-2000:] if done.returncode not in (0, 1) else ""), done.returncode


def _emulated(properties: dict[str, str]) -> bool:
    return properties.get("fl_emulated", "no") not in ("", "no")


def cmd_repro(args: argparse.Namespace) -> int:
    report = _report(args.report)
    if report is None and len(args.cases) == 1 and Path(args.cases[0]).exists():
        report, cases = _report(args.cases[0]), []
    else:
        cases = list(args.cases)
    if report is not None and not cases:
        cases = [ident(r.key) for r in report.rows if r.failing]
    if not cases:
        raise FlContractError("no case to reproduce: name case keys, or a report with failing cases")
    props = _properties(report)
    if not args.root and not props.get("fl_platform") and not getattr(args, "passthrough", None):
        raise FlContractError(
            "which lane? give --report LANE.xml (its options are the lane's), or the lane's pytest options after --"
        )
    out = Path(args.out)
    found = capture(_runner(args, props), cases, out, report.lane if report else "lane")
    failed = 0
    print("| case | script | lane exit | CPU lane exit |")
    print("|---|---|---|---|")
    for case in cases:
        entry = found[case]
        script = entry.get("script")
        if not script:
            failed += 1
            print(f"| {case} | none: {entry.get('why', '?')} | - | - |")
            continue
        lane_exit = cpu_exit = "-"
        if args.verify:
            lane_exit = str(verify(script)[1])
            if "LANES = {'emulated'" in Path(script).read_text(encoding="utf-8"):
                cpu_exit = str(verify(script, "cpu")[1])
        print(f"| {case} | {script} | {lane_exit} | {cpu_exit} |")
    return 1 if failed == len(cases) else 0


_SIZE = re.compile(r"(\d+(?:x\d+)+)")


def candidates(group: groups.Group, count: int) -> list[str]:
    """The cases tried as the group's reproduction: the plain accuracy-style contracts first
    (their call is the whole case), the contracts whose failure lies between calls (a
    result that changed after the device memory was filled) last; the smallest shapes first
    within each (a small script, a fast run)."""
    preferred = ("accuracy", "paths", "tiles", "dims", "forward", "enabled", "generated")
    last = ("determinism", "processes", "threads", "state")  # their failure is between calls, not in one

    def size(key: str) -> int:
        found = _SIZE.search(key)
        n = 1
        for part in found.group(1).split("x") if found else ["1000000"]:
            n *= int(part)
        return n

    def rank(key: str) -> tuple[int, int, str]:
        contract = key.split("::", 1)[0].rsplit(".", 1)[-1].removeprefix("test_")
        place = preferred.index(contract) if contract in preferred else len(preferred) + (contract in last)
        return (place, size(key), key)

    plain = [ident(k) for k in group.keys if "test_compiler" not in k]
    return sorted(plain, key=rank)[:count]


def cmd_triage(args: argparse.Namespace) -> int:
    from ..lanes import commands as lane_commands

    report = _report(args.report)
    registry = lane_commands.registry(args)
    props = _properties(report)
    lane = groups.lane_of(props, registry)
    twin = _report(args.twin).rows if args.twin else ()
    found = groups.group(report.rows, lane, registered=args.registered, twin=twin)
    out = Path(args.out)
    (out / "drafts").mkdir(parents=True, exist_ok=True)
    evidence: dict[str, drafts.Evidence] = {g.ident: drafts.Evidence() for g in found}
    if args.repro and found:
        evidence = _reproduce(args, report, props, found, out)
    if args.isolate and found:
        evidence = _isolate(args, report, props, found, evidence)
    tables: dict[str, str] = {}
    for g in found:
        defect = g.signature.defect
        if g.signature.whose != "compiler" or not defect:
            continue
        if defect not in tables:
            tables[defect] = _probe_packet(out / "probes" / defect, defect, registry, report.lane, props, args.probes)
        evidence[g.ident] = drafts.Evidence(**{**asdict(evidence[g.ident]), "probe_table": tables[defect]})
    links = {}
    for g in found:
        ev = evidence[g.ident]
        path = out / "drafts" / f"{g.ident}.md"
        path.write_text(
            drafts.render(g, ev, lane=report.lane, report=report.path, properties=props, registry=registry),
            encoding="utf-8",
        )
        links[g.ident] = (os.path.relpath(ev.script, out) if ev.script else "", os.path.relpath(path, out))
    lines = groups.markdown(
        found, {k: v for k, v in links.items() if v[0]} | {k: ("", v[1]) for k, v in links.items() if not v[0]}
    )
    lines = [ln.replace("[script](), ", "") for ln in lines]
    (out / "groups.md").write_text(
        f"## {report.lane}: failures by cause\n\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    (out / "groups.json").write_text(
        json.dumps(
            {
                "lane": report.lane,
                "report": report.path,
                "groups": [
                    {
                        **asdict(g),
                        "size": g.size,
                        "ident": g.ident,
                        "title": g.signature.title(),
                        "whose": g.signature.whose,
                        "draft": links[g.ident][1],
                        "script": links[g.ident][0],
                        "reproduces": bool(evidence[g.ident].script),
                        "findings": list(evidence[g.ident].findings),
                    }
                    for g in found
                ],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    (out / "groups.html").write_text(groups.page(report.lane, report.path, found, links), encoding="utf-8")
    print("\n".join(lines))
    print(
        f"\nwritten: {out / 'groups.md'}, {out / 'groups.html'}, {out / 'groups.json'}, {len(found)} drafts in "
        f"{out / 'drafts'}"
    )
    return 0


def _reproduce(
    args: argparse.Namespace, report: Any, props: dict[str, str], found: list[groups.Group], out: Path
) -> dict[str, drafts.Evidence]:
    """Each group's reproduction: its candidates re-run with the recorder in one process,
    then each script run standalone until one fails on the lane (and, emulated, holds on
    the CPU lane)."""
    runner = _runner(args, props)
    chosen = {g.ident: candidates(g, args.candidates) for g in found}
    every = list(dict.fromkeys(k for ks in chosen.values() for k in ks))
    captured = capture(runner, every, out / "repro", report.lane) if every else {}
    evidence = {}
    for g in found:
        tried: list[tuple[str, str]] = []
        picked = drafts.Evidence()
        for key in chosen[g.ident]:
            entry = captured.get(key, {})
            script = entry.get("script")
            if not script:
                tried.append((key, entry.get("why", "not re-run")))
                continue
            output, code = verify(script)
            if code != 1:
                tried.append(
                    (
                        key,
                        f"its script exits {code} standalone: the contract's failure is not in the "
                        "calls' values (an order, state or property check)",
                    )
                )
                continue
            tables = [("On the lane" + (" (emulated, the defect injected)" if _emulated(props) else ""), output, code)]
            if _emulated(props):
                cpu_output, cpu_code = verify(script, "cpu")
                tables.append(("On the plain CPU lane (no defect)", cpu_output, cpu_code))
            picked = drafts.Evidence(
                script, Path(script).read_text(encoding="utf-8"), key, tuple(tables), tried=tuple(tried)
            )
            break
        evidence[g.ident] = picked if picked.script else drafts.Evidence(tried=tuple(tried))
    return evidence


def _isolate(
    args: argparse.Namespace,
    report: Any,
    props: dict[str, str],
    found: list[groups.Group],
    evidence: dict[str, drafts.Evidence],
) -> dict[str, drafts.Evidence]:
    """Order and isolation of each group's cases (``--isolate N``: at most N a group, the
    representative first)."""
    runner = _runner(args, props)
    everything = [ident(r.key) for r in report.rows]
    out = dict(evidence)
    for g in found:
        keys = [ident(k) for k in g.keys]
        rep = evidence[g.ident].key
        keys = ([rep] if rep else []) + [k for k in keys if k != rep]
        findings = order.classify_all(keys[: args.isolate], everything, runner.run, window=args.window)
        out[g.ident] = drafts.Evidence(**{**asdict(evidence[g.ident]), "findings": tuple(f.line() for f in findings)})
    return out


def _probe_packet(where: Path, defect: str, registry: Any, lane: str, props: dict[str, str], run: bool) -> str:
    """The compiler defect's standalone probe packet (``triage.probes``), and with ``run``
    its tables on the lane and, emulated, on the plain CPU lane: the draft's probe section."""
    from . import probes

    entry = getattr(registry, "defects", {}).get(defect)
    platform = None
    try:
        platform = registry.get(props.get("fl_platform", ""))
    except Exception:  # a report of a platform this registry lacks: the device type is cuda's
        platform = None
    emulated = props.get("fl_emulated", "no")
    emulation = None
    if emulated not in ("", "no"):
        profile, _, rest = emulated.partition(";")
        emulation = (
            profile.strip(),
            tuple(d.strip() for d in rest.partition("defects:")[2].split(",") if d.strip() and d.strip() != "none"),
        )
    cpu_profile = None
    try:
        cpu_profile = getattr(registry.get("cpu"), "emulation_profile", None)
    except Exception:  # no cpu platform in this registry: the lane's own profile
        cpu_profile = None
    try:
        runner = probes.packet(
            where,
            defect,
            getattr(entry, "feature", "") or "",
            lane,
            getattr(platform, "device_type", None) or "cuda",
            emulation,
            cpu_profile,
        )
    except FlContractError as exc:
        return f"(no probe packet: {exc})"
    text = [
        f"The packet: `{runner}` with `probes_battery.py` beside it (`python probe.py`; exit 1 while a probe fails)."
    ]
    if run:
        for how, lane_arg in (("On the lane", None),) + ((("On the plain CPU lane", "cpu"),) if emulation else ()):
            output, code = verify(str(runner), lane_arg)
            table = [ln for ln in output.splitlines() if ln.startswith("|")]
            text += ["", f"{how} (exit {code}):", "", *(table or [f"(no table: {' '.join(output.split())[-300:]})"])]
    return "\n".join(text)


def register(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser(
        "repro",
        help="a standalone reproduction script per failing case (case keys, or a report: "
        "every failing case), written from the calls the case made",
    )
    rep.add_argument(
        "cases",
        nargs="*",
        metavar="CASE|REPORT",
        help="case keys (module::test[id], as in the lane's report), or a LANE.xml",
    )
    rep.add_argument("--report", metavar="LANE.xml", help="the lane's report: its options re-run the cases")
    rep.add_argument("--out", default="reports/repro", help="directory for the scripts (default reports/repro)")
    rep.add_argument("--root", metavar="DIR", help="the suite's root (default: the packaged contracts)")
    rep.add_argument(
        "--verify",
        action="store_true",
        help="run each script standalone: on the lane, and on the plain CPU lane for an emulated one",
    )
    rep.set_defaults(fn=cmd_repro)
    tri = sub.add_parser(
        "triage",
        help="a lane's failures grouped by cause, a reproduction and an issue draft per "
        "group (files only: nothing is sent)",
    )
    tri.add_argument("report", help="the lane's report (LANE.xml)")
    tri.add_argument("--out", default="reports/triage", help="directory for groups.md, groups.json, drafts/, repro/")
    tri.add_argument("--root", metavar="DIR", help="the suite's root (default: the packaged contracts)")
    tri.add_argument("--no-repro", dest="repro", action="store_false", help="group and draft only: re-run nothing")
    tri.add_argument("--candidates", type=int, default=4, help="cases tried per group for its reproduction (default 4)")
    tri.add_argument(
        "--isolate",
        type=int,
        default=0,
        metavar="N",
        help="re-run up to N cases a group alone and after the cases before them: alone, order, flaky",
    )
    tri.add_argument(
        "--window",
        type=int,
        default=64,
        metavar="N",
        help="with --isolate: how many of the cases before a case are replayed (default 64)",
    )
    tri.add_argument(
        "--twin",
        metavar="LANE.xml",
        help="the same suite's report where the compiler defect is not (the plain CPU lane for an "
        "emulated one): a case failing there too is not grouped under the compiler defect",
    )
    tri.add_argument(
        "--registered",
        action="store_true",
        help="also group strict xfails of registered FlagGems defects (a hardware lane's known defects)",
    )
    tri.add_argument(
        "--probes",
        action="store_true",
        help="run each compiler group's standalone probe packet (written always) into its draft: "
        "on the lane, and on the plain CPU lane for an emulated one",
    )
    tri.set_defaults(fn=cmd_triage)
