"""``fl-contract mutants``: every mutant of the zoo in its own process (in parallel, only the
contracts of the mutated op, stopping at the first kill), and who killed what.

Each mutant first runs the case that killed it last time, after the case that ran before it
(``killers.json``, written by ``--record-killers``); only where they no longer fail, or no
longer exist, does it search its whole selection.  A recorded killer is a hint, never a
verdict: the case must fail against the mutant in this run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..registry import ROWS
from ..reporting import junit
from ..util import FlContractError
from .zoo import MUTANTS, Mutant, get

PLUGIN = "pytest_fl_contract.testing.mutants"
KILLERS = Path(__file__).with_name("killers.json")  # mutant -> node ids, relative to the suites' parent


@dataclass(frozen=True)
class Verdict:
    mutant: str
    status: str  # killed | survived | error
    killers: tuple[str, ...]
    seconds: float
    detail: str = ""
    nodes: tuple[str, ...] = ()  # the case before and the killing case, relative to the suites' parent
    tries: int = 1  # 2: the recorded killer did not kill it, the search did


def recorded_killers(path: Path = KILLERS) -> dict[str, tuple[str, ...]]:
    """The committed killers (a node id or a list of them per mutant); none (a full search
    each) where the file is missing or malformed."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for name, nodes in data.items():
        nodes = [nodes] if isinstance(nodes, str) else nodes
        if (
            isinstance(name, str)
            and isinstance(nodes, list)
            and nodes
            and all(isinstance(n, str) and "::" in n for n in nodes)
        ):
            out[name] = tuple(nodes)
    return out


def _argv(mutant: Mutant, contracts: Path, workdir: Path, every: bool, killer: tuple[str, ...] = ()) -> list[str]:
    """pytest's arguments for one mutant's contract run (``-m pytest`` and the program left out):
    its op's selection, or only the cases of ``killer`` in order (node ids under the suites'
    parent)."""
    op = mutant.select.split()[0]
    select, stop = (op if op in ROWS.names() else mutant.select, []) if every else (mutant.select, ["-x"])
    suite = contracts if mutant.suite == "reductions" else contracts.parent / mutant.suite  # contracts: reductions/
    where = [str(contracts.parent / node) for node in killer] if killer else [str(suite), "-k", select]
    return [
        *where,
        "-p",
        "fl_contract",
        "-p",
        PLUGIN,
        "--platform",
        "cpu",
        "--fl-mutant",
        mutant.name,
        *mutant.args,
        *stop,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--junitxml={workdir / (mutant.name + '.xml')}",
        f"--fl-killer-file={workdir / (mutant.name + '.killer')}",
        "-o",
        "addopts=",
    ]


def _tries(
    mutant: Mutant,
    contracts: Path,
    workdir: Path,
    every: bool,
    killers: dict[str, tuple[str, ...]],
    search: bool = True,
) -> list[list[str]]:
    """The argvs to run in turn until one fails a case: the recorded killer, then the search
    (unless ``search`` is off: only the killer, as ``minimal`` tries them)."""
    whole = _argv(mutant, contracts, workdir, every)
    killer = () if every else killers.get(mutant.name, ())
    if not killer or not all((contracts.parent / node.split("::", 1)[0]).is_file() for node in killer):
        return [whole]
    return [_argv(mutant, contracts, workdir, every, killer), *([whole] if search else [])]


def _verdict(
    mutant: Mutant, code: int, workdir: Path, contracts: Path, output: str, seconds: float, tries: int = 1
) -> Verdict:
    report, killer = workdir / f"{mutant.name}.xml", workdir / f"{mutant.name}.killer"
    killers: list[str] = []
    if report.exists():
        for case in junit.read(report).cases:
            if case.outcome in ("failed", "error"):
                killers.append(f"{case.classname.rsplit('.', 1)[-1].removeprefix('test_')}:{case.name}")
    if code == 1 and killers:
        nodes = []
        for node in killer.read_text().split("\n") if killer.exists() else []:
            file, sep, rest = node.partition("::")
            if sep and Path(file).is_relative_to(contracts.parent):
                nodes.append(f"{Path(file).relative_to(contracts.parent).as_posix()}{sep}{rest}")
        return Verdict(mutant.name, "killed", tuple(killers), seconds, nodes=tuple(nodes), tries=tries)
    if code == 0:
        return Verdict(mutant.name, "survived", (), seconds, tries=tries)
    tail = output.strip().splitlines()[-3:]
    return Verdict(mutant.name, "error", (), seconds, f"pytest exit {code}: {' | '.join(tail)}", tries=tries)


def run_one(
    mutant: Mutant,
    contracts: Path,
    workdir: Path,
    every: bool = False,
    killers: dict[str, tuple[str, ...]] | None = None,
    search: bool = True,
) -> Verdict:
    """One mutant's contract runs, each in a process of its own: killed at the first failing
    contract (-x); with ``every``, every contract of the mutated op runs and each that fails
    is a killer."""
    start, code, output = time.monotonic(), 0, ""
    tries = _tries(mutant, contracts, workdir, every, killers or {}, search)
    for argv in tries:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *argv], capture_output=True, text=True, cwd=workdir, timeout=900
        )
        code, output = done.returncode, done.stdout + done.stderr
        if code == 1:
            break
    return _verdict(mutant, code, workdir, contracts, output, time.monotonic() - start, tries.index(argv) + 1)


def _forked(
    mutants: list[Mutant],
    contracts: Path,
    workdir: Path,
    jobs: int,
    every: bool,
    killers: dict[str, tuple[str, ...]],
    search: bool = True,
) -> list[Verdict] | None:
    """Every mutant through the fork server (``forkzoo``); None when it could not warm up."""
    from .forkzoo import WARM_FAILED

    runs = []
    for m in mutants:
        first, *then = _tries(m, contracts, workdir, every, killers, search)
        runs.append({"name": m.name, "argv": first, **({"then": then[0]} if then else {})})
    spec = workdir / "spec.json"
    spec.write_text(
        json.dumps({"platform": "cpu", "workdir": str(workdir), "jobs": jobs, "timeout": 900, "runs": runs})
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fl_contract.testing.forkzoo", str(spec)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900 * len(mutants),
    )
    if done.returncode == WARM_FAILED:
        return None
    ended = {}
    for line in done.stdout.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "name" in item:
            ended[item["name"]] = item
    verdicts = []
    for m in mutants:
        item = ended.get(m.name)
        if item is None:
            verdicts.append(Verdict(m.name, "error", (), 0.0, f"fork server exit {done.returncode}: no verdict"))
            continue
        log = workdir / f"{m.name}.log"
        output = log.read_text(errors="replace") if log.exists() else ""
        verdicts.append(_verdict(m, item["code"], workdir, contracts, output, item["seconds"], item.get("tries", 1)))
    return verdicts


def run_zoo(
    names: list[str],
    contracts: Path,
    jobs: int,
    every: bool = False,
    killers: dict[str, tuple[str, ...]] | None = None,
    search: bool = True,
) -> list[Verdict]:
    """Through the fork server; each mutant in a process of its own where it cannot warm up.
    ``killers``: the recorded ones (default: ``killers.json``; {} searches every selection);
    ``search`` off: a killer that does not kill is the verdict (survived)."""
    mutants = [get(n) for n in names] if names else list(MUTANTS.values())
    known = recorded_killers() if killers is None else killers
    with tempfile.TemporaryDirectory(prefix="fl-mutants-") as tmp:
        forked = _forked(mutants, contracts, Path(tmp), jobs, every, known, search)
        if forked is not None:
            return forked
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda m: run_one(m, contracts, Path(tmp), every, known, search), mutants))


def _shorter(nodes: tuple[str, ...]) -> list[tuple[str, ...]]:
    """What to try in place of the recorded cases, fewest first: the killer alone, then after
    one of the cases recorded before it (the one just before first)."""
    *earlier, killer = nodes
    return [c for c in [(killer,), *[(node, killer) for node in reversed(earlier)]] if c != nodes]


def minimal(verdicts: list[Verdict], contracts: Path, jobs: int) -> list[Verdict]:
    """Each killed mutant's fewest recorded cases that still kill it in a run of their own.
    The search writes the killer after the session's first case and the one before it, which
    a few defects need (a memoised plan, a scalar bound at the first launch); every other
    killer ran a passing case before it on every CI run."""
    trying = {v.mutant: _shorter(v.nodes) for v in verdicts if v.status == "killed" and len(v.nodes) > 1}
    kept: dict[str, tuple[str, ...]] = {}
    while trying:
        trial = {name: cands[0] for name, cands in trying.items()}
        for v in run_zoo(list(trial), contracts, jobs, killers=trial, search=False):
            if v.status == "killed":
                kept[v.mutant] = trial[v.mutant]
            trying[v.mutant].pop(0)
            if v.status == "killed" or not trying[v.mutant]:
                del trying[v.mutant]
    return [replace(v, nodes=kept.get(v.mutant, v.nodes)) for v in verdicts]


def record(verdicts: list[Verdict], path: Path = KILLERS) -> int:
    """The killed mutants' killers into ``path`` (kept for mutants of the zoo this run did not
    kill or run, dropped for mutants no longer in it); how many it holds."""
    killers = {name: nodes for name, nodes in recorded_killers(path).items() if name in MUTANTS}
    killers.update({v.mutant: v.nodes for v in verdicts if v.status == "killed" and v.nodes})
    path.write_text(json.dumps({name: list(nodes) for name, nodes in sorted(killers.items())}, indent=1) + "\n")
    return len(killers)


def sole_killers(verdicts: list[Verdict]) -> dict[str, list[str]]:
    """Per contract module, the mutants no other module kills: what the suite would lose
    without it."""
    by_mutant = {v.mutant: {k.split(":", 1)[0] for k in v.killers} for v in verdicts if v.status == "killed"}
    sole: dict[str, list[str]] = {}
    for mutant, modules in by_mutant.items():
        if len(modules) == 1:
            sole.setdefault(next(iter(modules)), []).append(mutant)
    return dict(sorted(sole.items()))


def every_killer_table(verdicts: list[Verdict]) -> str:
    """Which contract modules kill each mutant (case counts), then each module's sole kills."""
    from collections import Counter

    lines = ["| mutant | verdict | killed by (failing cases) | seconds |", "|---|---|---|---:|"]
    for v in verdicts:
        counts = Counter(k.split(":", 1)[0] for k in v.killers)
        by = ", ".join(f"{m} {n}" for m, n in sorted(counts.items())) or v.detail or "-"
        lines.append(f"| {v.mutant} | {v.status} | {by} | {v.seconds:.1f} |")
    lines += ["", "| contract | mutants only it kills |", "|---|---|"]
    lines += [f"| {module} | {', '.join(names)} |" for module, names in sole_killers(verdicts).items()]
    killed = sum(v.status == "killed" for v in verdicts)
    lines.append(f"\n{killed} of {len(verdicts)} mutants killed")
    return "\n".join(lines)


def table(verdicts: list[Verdict]) -> str:
    lines = ["| mutant | verdict | killed by | seconds |", "|---|---|---|---:|"]
    for v in verdicts:
        by = ", ".join(v.killers) if v.killers else (v.detail or "-")
        lines.append(f"| {v.mutant} | {v.status}{' (searched)' if v.tries > 1 else ''} | {by} | {v.seconds:.1f} |")
    killed = sum(v.status == "killed" for v in verdicts)
    searched = sum(v.tries > 1 for v in verdicts)
    lines.append(
        f"\n{killed} of {len(verdicts)} mutants killed"
        + (
            f"; {searched} searched past a recorded killer that did not kill them "
            "(fl-contract mutants --record-killers)"
            if searched
            else ""
        )
    )
    return "\n".join(lines)


def main(args: Any) -> int:
    if args.list:
        for m in MUTANTS.values():
            print(f"{m.name:<26} {m.description}")
        return 0
    for name in args.only:
        get(name)
    from ..config.suites import paths

    contracts = Path(os.environ.get("FL_CONTRACTS_DIR") or paths(["reductions"])[0]).resolve()
    if not contracts.is_dir():
        raise FlContractError(f"no contract directory at {contracts} (set FL_CONTRACTS_DIR)")
    start = time.monotonic()
    every = getattr(args, "every_killer", False)
    search = getattr(args, "search", False) or getattr(args, "record_killers", False)
    verdicts = run_zoo(args.only, contracts, args.jobs or os.cpu_count() or 1, every, {} if search else None)
    print(every_killer_table(verdicts) if every else table(verdicts))
    print(f"zoo wall time: {time.monotonic() - start:.1f}s")
    if getattr(args, "record_killers", False) and not every:
        verdicts = minimal(verdicts, contracts, args.jobs or os.cpu_count() or 1)
        print(f"recorded killers: {record(verdicts)} in {KILLERS}")
    return 0 if all(v.status == "killed" for v in verdicts) else 1
