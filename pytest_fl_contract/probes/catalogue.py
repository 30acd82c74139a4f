"""Compiler probes without pytest: bring the lane's device up, run the battery
(``pytest_fl_contract.probes.battery``) and print the seed-style table
(variant, result, expected, verdict, defect) that goes into a vendor bug report.

A failing probe is evidence for a compiler defect of the catalogue (config/platforms.yaml,
``defects:``); the FlagGems ops it affects are the op rows whose kernels rely on that
feature, and an id the lane's platform does not list is a new finding.  Nothing here imports torch or triton at
module import: the emulator must be up before triton is imported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.platforms import Platform, Registry
from ..registry import ROWS
from ..util import FlContractError, first_line, installed_version


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from ..config.platforms import load_registry

    return load_registry(entry_points=False)


def affected_ops(defect: str, platform: Platform | None = None, registry: Registry | None = None) -> tuple[str, ...]:
    """The FlagGems ops a compiler defect breaks: the op rows whose kernels rely on its
    feature (the catalogue entry's, or the lane platform's where a vendor wrote its own)."""
    entry = platform.defect(defect) if platform is not None else None
    entry = entry or _registry(registry).defects.get(defect)
    return ROWS.reach(entry) if entry is not None else ROWS.feature_reach(defect)


def feature(defect: str, registry: Registry | None = None) -> str:
    """The compiler feature a defect id names, as the probe table and a bug report say it."""
    entry = _registry(registry).defects.get(defect)
    return entry.feature or entry.description if entry is not None else defect


def label(defect: str, platform: Platform | None = None, registry: Registry | None = None) -> str:
    """What the lane summary shows for a failing probe: ``compiler: ID; affects a, b``."""
    affected = affected_ops(defect, platform, registry)
    return f"compiler: {defect}" + (f"; affects {', '.join(affected)}" if affected else "")


# -- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    probe: str
    variant: str
    result: str
    expected: str
    verdict: str  # ok | FAIL | error | skipped; with --mutants: caught | MISSED
    defect: str  # for failures: the defect id the probe is evidence for
    note: str = ""  # a skip's reason, an error's message

    @property
    def failed(self) -> bool:
        return self.verdict in ("FAIL", "error", "MISSED")


def _value(v: Any) -> str:
    if isinstance(v, (bool, int)) or (hasattr(v, "is_integer") and v.is_integer()):
        return str(int(v))
    return f"{v:g}"


def shown(values: Any, limit: int = 8) -> str:
    """A result as the table prints it: a number, or a short list."""
    flat = [v.item() if hasattr(v, "item") else v for v in getattr(values, "flat", [values])]
    if len(flat) == 1:
        return _value(flat[0])
    head = ", ".join(_value(v) for v in flat[:limit])
    return f"[{head}{', ...' if len(flat) > limit else ''}]"


def row_of(probe: Any, outcome: Any, mutant: bool = False) -> Row:
    """A table row for a probe (``battery.Probe``) and what it gave (``battery.Outcome``);
    for its mutant, the verdict says whether the probe caught the planted fault."""
    if outcome.skipped is not None:
        return Row(probe.id, probe.variant, "-", "-", "skipped", "", outcome.skipped)
    show = probe.shown or (lambda v: v)
    if mutant:
        verdict = "MISSED" if outcome.passed else "caught"
    else:
        verdict = "ok" if outcome.passed else "FAIL"
    defect = "" if verdict in ("ok", "caught") else probe.defect
    return Row(probe.id, probe.variant, shown(show(outcome.result)), shown(show(outcome.expected)), verdict, defect)


def error_row(probe: Any, exc: BaseException) -> Row:
    """A probe whose kernel did not compile or run: a compiler defect too, shown in one line."""
    return Row(probe.id, probe.variant, f"{type(exc).__name__}", "-", "error", probe.defect, first_line(exc)[:200])


def run_battery(
    device: str, platform: Platform | None = None, only: Sequence[str] = (), mutants: bool = False
) -> list[Row]:
    """Every probe (or ``only`` these) on ``device``; capabilities the platform lacks skip.
    With ``mutants`` each probe runs its mutant kernel instead: every one must be caught."""
    from . import battery

    unknown = [name for name in only if name not in battery.BY_ID]
    if unknown:
        raise FlContractError(f"unknown probe {unknown[0]!r}; known: {', '.join(battery.BY_ID)}")
    rows = []
    for probe in battery.PROBES:
        if only and probe.id not in only:
            continue
        lacking = [cap for cap in probe.needs if platform is not None and not platform.has(cap)]
        if lacking:
            rows.append(Row(probe.id, probe.variant, "-", "-", "skipped", "", f"{platform.name} lacks {lacking[0]}"))  # type: ignore[union-attr]
            continue
        try:
            rows.append(row_of(probe, probe.run(device, probe.mutant if mutants else None), mutants))
        except Exception as exc:  # a kernel the compiler rejects is a finding, not our crash
            rows.append(error_row(probe, exc))
    return rows


def _cells(row: Row, markdown: bool) -> list[str]:
    variant = f"`{row.variant}`" if markdown else row.variant
    cells = [row.probe, variant, row.result, row.expected, row.verdict, row.defect]
    return [c.replace("|", "\\|") for c in cells] if markdown else cells


def notes(rows: Iterable[Row]) -> list[str]:
    """Why a probe skipped or what its error said: below the table, so the table stays narrow."""
    return [f"{r.probe} {r.verdict}: {r.note}" for r in rows if r.note]


HEADER = ["probe", "variant", "result", "expected", "verdict", "defect"]


def render_text(rows: Iterable[Row]) -> list[str]:
    table = [HEADER] + [_cells(r, markdown=False) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in table]


def render_markdown(rows: Iterable[Row]) -> list[str]:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return out + ["| " + " | ".join(_cells(r, markdown=True)) + " |" for r in rows]


def findings(rows: Sequence[Row], platform: Platform | None = None, registry: Registry | None = None) -> list[str]:
    """One line per defect the failing probes are evidence for, as the lane summary reads it."""
    by_defect: dict[str, list[str]] = {}
    for row in rows:
        if row.failed:
            by_defect.setdefault(row.defect, []).append(row.probe)
    lines = []
    for defect, probes in by_defect.items():
        known = platform is not None and platform.defect(defect) is not None
        status = f"known on {platform.name}" if known else "not in the registry for this platform: new finding?"  # type: ignore[union-attr]
        lines.append(f"{label(defect, platform, registry)} ({status}; probes: {', '.join(probes)})")
    return lines


def tally(rows: Sequence[Row]) -> str:
    n = {v: sum(r.verdict == v for r in rows) for v in ("ok", "FAIL", "error", "skipped", "caught", "MISSED")}
    if n["caught"] or n["MISSED"]:
        return (
            f"{len(rows)} mutants: {n['caught']} caught, {n['MISSED']} missed, {n['error']} errors, "
            f"{n['skipped']} skipped"
        )
    return f"{len(rows)} probes: {n['ok']} passed, {n['FAIL']} failed, {n['error']} errors, {n['skipped']} skipped"


# -- bring-up and the command --------------------------------------------------------------------


def bring_up(settings: Any) -> str:
    """The device the probes run on, made ready: under emulation the interpreter with the
    platform's injected defects (before triton is imported), else the lane's real device,
    which must be there - a CPU-only machine never passes for an accelerator."""
    from ..hardware.device import device_of

    if settings.emulation is not None:
        from ..emulation.interpreter import bring_up

        bring_up(settings.emulation.profile, settings.emulation.defects)
        return "cpu"
    device = device_of(settings)
    try:
        import torch
    except ImportError as exc:
        raise FlContractError(f"cannot import torch: {exc}") from None
    module = getattr(torch, device, None)
    if module is None:  # vendor devices register when their extension is imported (torch_npu, torch_mlu, ...)
        import importlib

        try:
            importlib.import_module(f"torch_{device}")
        except ImportError:
            pass
        module = getattr(torch, device, None)
    available = getattr(module, "is_available", None)
    if not (callable(available) and available()):
        raise FlContractError(
            f"platform {settings.platform.name} runs on {device}, and torch sees no {device} device here; "
            "run on the lane's machine, or pass --emulate to emulate it on this CPU"
        )
    return device


def describe(settings: Any) -> str:
    from ..hardware.device import device_name

    def version(dist: str) -> str:  # vendor builds may install under another distribution name
        return installed_version(dist) or str(getattr(sys.modules.get(dist), "__version__", "unknown"))

    where = f"platform {settings.platform.name}, device {device_name(settings)}"
    if settings.emulation is not None:
        injected = ", ".join(settings.emulation.defects) or "none"
        where += f" (Triton's interpreter, profile {settings.emulation.profile}, injected defects: {injected})"
    return f"{where}; triton {version('triton')}, torch {version('torch')}"


def command(args: argparse.Namespace, registry: Registry) -> int:
    """``fl-contract probe``: exit 0 when every probe passes (or skips), 1 when any fails
    (with ``--mutants``: 0 when every mutant is caught)."""
    from ..config.settings import Options, resolve

    options = Options(platform=args.platform, emulate=args.emulate, profile=args.profile, inject=tuple(args.inject))
    settings = resolve(options, registry)
    device = bring_up(settings)
    rows = run_battery(device, settings.platform, args.only, args.mutants)
    title = f"compiler probe {'mutants' if args.mutants else 'battery'}: {describe(settings)}"
    found = [] if args.mutants else findings(rows, settings.platform, registry)
    if args.markdown:
        lines = [f"**{title}**", "", *render_markdown(rows), "", tally(rows), ""]
        lines += [f"- {line}" for line in (*notes(rows), *found)]
    else:
        lines = [title, *render_text(rows), tally(rows), *notes(rows), *found]
    print("\n".join(lines))
    return 1 if any(r.failed for r in rows) else 0
