"""``fl-contract mutants``: every mutant of the zoo in its own process (in parallel, only the
contracts of the mutated op, stopping at the first kill), and who killed what."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lanes import junit
from ..registry import ops
from ..util import FlContractError
from .zoo import MUTANTS, Mutant, get

PLUGIN = "pytest_fl_contract.testing.mutants"

@dataclass(frozen=True)
class Verdict:
    mutant: str
    status: str  # killed | survived | error
    killers: tuple[str, ...]
    seconds: float
    detail: str = ""


def _argv(mutant: Mutant, contracts: Path, report: Path, every: bool) -> list[str]:
    """pytest's arguments for one mutant's contract run (``-m pytest`` and the program left out)."""
    op = mutant.select.split()[0]
    select, stop = (op if op in ops.OPS_BY_NAME else mutant.select, []) if every else (mutant.select, ["-x"])
    suite = contracts if mutant.suite == "reductions" else contracts.parent / mutant.suite  # contracts: reductions/
    return [str(suite), "-p", "fl_contract", "-p", PLUGIN, "--platform", "cpu",
            "--fl-mutant", mutant.name, *mutant.args, "-k", select, *stop, "-q", "-p", "no:cacheprovider",
            "-p", "no:randomly", f"--junitxml={report}", "-o", "addopts="]


def _verdict(mutant: Mutant, code: int, report: Path, output: str, seconds: float) -> Verdict:
    killers: list[str] = []
    if report.exists():
        for case in junit.read(report).cases:
            if case.outcome in ("failed", "error"):
                killers.append(f"{case.classname.rsplit('.', 1)[-1].removeprefix('test_')}:{case.name}")
    if code == 1 and killers:
        return Verdict(mutant.name, "killed", tuple(killers), seconds)
    if code == 0:
        return Verdict(mutant.name, "survived", (), seconds)
    tail = output.strip().splitlines()[-3:]
    return Verdict(mutant.name, "error", (), seconds, f"pytest exit {code}: {' | '.join(tail)}")


def run_one(mutant: Mutant, contracts: Path, workdir: Path, every: bool = False) -> Verdict:
    """One contract run against one mutant, in a process of its own: killed at the first
    failing contract (-x); with ``every``, every contract of the mutated op runs and each
    that fails is a killer."""
    report = workdir / f"{mutant.name}.xml"
    argv = [sys.executable, "-m", "pytest", *_argv(mutant, contracts, report, every)]
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir, timeout=900)
    return _verdict(mutant, done.returncode, report, done.stdout + done.stderr, time.monotonic() - start)


def _forked(mutants: list[Mutant], contracts: Path, workdir: Path, jobs: int, every: bool) -> list[Verdict] | None:
    """Every mutant through the fork server (``forkzoo``); None when it could not warm up."""
    import json

    from .forkzoo import WARM_FAILED

    spec = workdir / "spec.json"
    spec.write_text(json.dumps({
        "platform": "cpu", "workdir": str(workdir), "jobs": jobs, "timeout": 900,
        "runs": [{"name": m.name, "argv": _argv(m, contracts, workdir / f"{m.name}.xml", every)} for m in mutants],
    }))
    done = subprocess.run([sys.executable, "-m", "pytest_fl_contract.testing.forkzoo", str(spec)], cwd=workdir,
                          capture_output=True, text=True, timeout=900 * len(mutants))
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
        verdicts.append(_verdict(m, item["code"], workdir / f"{m.name}.xml", output, item["seconds"]))
    return verdicts


def run_zoo(names: list[str], contracts: Path, jobs: int, every: bool = False) -> list[Verdict]:
    """Through the fork server; each mutant in a process of its own where it cannot warm up."""
    mutants = [get(n) for n in names] if names else list(MUTANTS.values())
    with tempfile.TemporaryDirectory(prefix="fl-mutants-") as tmp:
        forked = _forked(mutants, contracts, Path(tmp), jobs, every)
        if forked is not None:
            return forked
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda m: run_one(m, contracts, Path(tmp), every), mutants))


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
        lines.append(f"| {v.mutant} | {v.status} | {by} | {v.seconds:.1f} |")
    killed = sum(v.status == "killed" for v in verdicts)
    lines.append(f"\n{killed} of {len(verdicts)} mutants killed")
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
    verdicts = run_zoo(args.only, contracts, args.jobs or os.cpu_count() or 1, every)
    print(every_killer_table(verdicts) if every else table(verdicts))
    print(f"zoo wall time: {time.monotonic() - start:.1f}s")
    return 0 if all(v.status == "killed" for v in verdicts) else 1
