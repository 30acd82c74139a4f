"""The lane session: one object per pytest process that owns the lane's state.

Modelled on pytest-xdist's ``DSession``: created before the first conftest is imported
(so the emulator is up before anything imports triton), registered as a plugin in
``pytest_configure``, and the only holder of what a run decides: resolved settings, the
emulator, the workaround (installed the moment ``flag_gems`` is imported, whoever imports
it, and uninstalled at the end), the defects it covers, each item's validated marks and
known-defect decision, and the summary of outcomes.  ``plugin.py`` only wires it.

Process-global state that stays outside it, because the thing it records is global:
the emulator's interpreter hooks and device shim (``emulation.interpreter``,
``emulation.device``: Triton's interpreter classes and ``torch.cuda`` are per process)
and the workaround's record of patched FlagGems attributes (``masked_reductions``).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from . import markers
from .config.settings import Settings, versions
from .imports import after_import
from .registry.reductions import Op
from .reporting import report
from .reporting.outcomes import (
    CASES,
    PROPERTY,
    CaseRecord,
    CaseTag,
    Summary,
    junit_key,
    overload_fields,
    record_of,
    rerun_keys,
)
from .stash import DECISION, SEED, SPECS, TAG
from .util import FlContractError, first_line, xdist_worker


def note_seed(item: pytest.Item, seed: int) -> None:
    """The seed a generated case drew from: the lane's JUnit file carries it (``fl_cases``),
    so a failing draw is replayed from the report alone."""
    item.stash[SEED] = seed


PROTOCOL = ("install", "uninstall")
WORKER_DEVICE = "fl_worker_device"  # a pinned worker's device (--fl-devices), in its workeroutput
WORKER_DEVICES = "fl_worker_devices"  # JUnit suite property: {xdist worker id: its device}


@dataclass(frozen=True)
class WorkaroundInfo:
    module: str
    origin: str  # wheel | checkout
    path: str
    entries: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.module} from the {self.origin} ({self.path}): {len(self.entries)} entry points wrapped"


def tag_case(item: pytest.Item, op: str | None, contract: str | None) -> None:
    """Say what a contract case checks: the per-op summary and the JUnit summary read it.
    Under ``junit_family=xunit1`` (where per-case properties are valid) it is also written
    on the case."""
    item.stash[TAG] = CaseTag(op, contract)
    if item.config.getini("junit_family") == "xunit1":
        item.user_properties += [("fl_op", op or ""), ("fl_contract", contract or "")]


def covers_of(module: ModuleType, settings: Settings) -> frozenset[str]:
    """The platform's defects a workaround module covers (its ``COVERS``, or by default the
    platform's defects that name a workaround).  A malformed COVERS is bad input."""
    listed = [d.id for d in settings.platform.defects]
    covers = getattr(module, "COVERS", None)
    if covers is None:
        covers = settings.registry.covered_by(module.__name__)
    if isinstance(covers, str) or not isinstance(covers, Iterable) or not all(isinstance(c, str) for c in covers):
        raise FlContractError(
            f"workaround {module.__name__}: COVERS must be a list of defect ids (strings), got {covers!r}"[:300]
        )
    return frozenset(covers) & set(listed)


class LaneSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.summary = Summary()
        self.cases: dict[str, dict[str, Any]] = {}  # junit_key -> op, contract, defect, seed
        self.covered: frozenset[str] = frozenset()
        self.workaround: WorkaroundInfo | None = None
        self.flag_gems: ModuleType | None = None
        self._module: ModuleType | None = None
        self._origin: tuple[str, str] = ("", "")
        self._started = False
        self._withdraw: Any = None
        self._undo_autotune: Any = None
        self._picked: str | None = None  # pick_device's answer once asked ("" for none)
        self._worker_workaround: str | None = None
        self._worker_device: list[tuple[str, str]] = []
        self.devices: Any = None  # config.devices.Plan: the devices the controller pinned its workers to
        self._worker_devices: dict[str, str] = {}  # xdist worker id -> the device it reported
        self._session: pytest.Session | None = None
        self._stop: str | None = None

    # -- bring-up -------------------------------------------------------------------------

    def start(self) -> None:
        """Emulator first (before anything imports triton), then the workaround module is
        resolved and checked, and armed to install when flag_gems is imported."""
        if self._started:
            return
        self._started = True
        settings = self.settings
        if settings.emulation is not None:
            from .emulation.interpreter import bring_up

            bring_up(settings.emulation.profile, settings.emulation.defects)
        else:
            from .hardware import autotune

            self._undo_autotune = autotune.install(settings.autotune)
        if settings.workaround is not None:
            from .config.layout import resolve_module

            resolved = resolve_module(settings.workaround, settings.layout.source_root)
            missing = [name for name in PROTOCOL if not callable(getattr(resolved.module, name, None))]
            if missing:
                raise FlContractError(
                    f"workaround {settings.workaround} lacks {', '.join(m + '()' for m in missing)} "
                    "(see the protocol in the README)"
                )
            self.covered = covers_of(resolved.module, settings)
            self._module, self._origin = resolved.module, (resolved.origin, resolved.path)
        self._withdraw = after_import("flag_gems", self._flag_gems_imported)

    def _flag_gems_imported(self, module: ModuleType) -> None:
        """Install the workaround before anything can dispatch, then let plugins patch."""
        self.flag_gems = module
        if self._module is not None and self.workaround is None:
            try:
                entries = self._module.install() or {}
                if not entries and callable(getattr(self._module, "installed", None)):
                    entries = self._module.installed()
                entries = dict(entries)
            except BaseException as exc:  # a SystemExit or KeyboardInterrupt from it is its failure too
                what = (
                    f"called sys.exit({exc.code!r})"
                    if isinstance(exc, SystemExit)
                    else f"failed: {type(exc).__name__}: {first_line(exc)}"
                )
                pytest.exit(
                    f"workaround {self.settings.workaround}: install() {what}", returncode=pytest.ExitCode.USAGE_ERROR
                )
            self.workaround = WorkaroundInfo(self.settings.workaround or "", *self._origin, entries)  # type: ignore[arg-type]
        self.config.hook.pytest_fl_contract_flag_gems.call_historic(kwargs={"flag_gems": module, "session": self})

    def wraps(self, op: Op) -> bool:
        """The installed workaround wraps one of the op's entry points (its calls may take
        another of FlagGems' kernels: a defect of that kernel then applies)."""
        names = {e.attr for e in op.entries}
        return self.workaround is not None and any(k.rsplit(".", 1)[-1] in names for k in self.workaround.entries)

    def pick_device(self) -> str | None:
        """On a host with several devices, xdist worker gwN takes device N mod count (one
        device per worker, round-robin), so ``-n auto`` spreads over every visible device.
        Asked when a contract first needs the device; says what it chose."""
        if self._picked is not None:
            return self._picked or None
        self._picked = ""
        workerinput = xdist_worker(self.config)
        if self.settings.emulation is not None or workerinput is None:
            return None
        import torch

        module = getattr(torch, self.settings.platform.device_type, None)
        try:
            count = int(module.device_count())  # type: ignore[union-attr]
        except Exception:
            return None
        if count < 2:
            return None
        index = int(str(workerinput.get("workerid", "gw0")).removeprefix("gw") or 0) % count
        module.set_device(index)  # type: ignore[union-attr]
        self._picked = f"{self.settings.platform.device_type}:{index} of {count}"
        return self._picked

    def import_flag_gems(self) -> ModuleType:
        """flag_gems, imported after the emulator and with the workaround in place."""
        if self.flag_gems is None:
            from .hardware.device import import_flag_gems

            self.pick_device()
            import_flag_gems()
        assert self.flag_gems is not None
        return self.flag_gems

    def stop_run(self, reason: str) -> None:
        """This case's error is every case's (flag_gems cannot be imported): its report says
        so, and the process that collects reports (the xdist controller, or this one) stops
        the run with that one line instead of erroring - or strictly xfailing - the rest."""
        self._stop = reason

    # -- hooks ----------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        from .hardware.device import device_name

        lines = report.header_lines(self.settings, versions(), device_name(self.settings))
        if self.workaround is not None:
            lines.append(f"fl-contract workaround installed: {self.workaround.line()}")
        reach = self.reach
        if reach:
            lines.append(f"fl-contract reach: {reach}")
        tiles = self.tile_device()
        if tiles:
            lines.append(f"fl-contract fast-path tiles for {tiles}")
        if self.devices is not None:
            lines.append(f"fl-contract devices: {self.devices.line(len(getattr(config.option, 'tx', None) or ()))}")
        return lines

    @functools.cached_property
    def reach(self) -> str | None:
        """What the masked-row defect reaches in the installed FlagGems, read from its source
        (``registry.coverage``; a second or so, once for the header and the JUnit properties):
        on lanes whose platform has the defect or a workaround."""
        from .registry import coverage

        if not self.settings.workaround and self.settings.platform.defect("masked_2d_row_load") is None:
            return None
        root = coverage.flag_gems_root()
        return coverage.summary(coverage.scan(root)) if root is not None else None

    def tile_device(self) -> str | None:
        """What the fast path's tile model read of the lane's device, or assumed (SM count,
        bandwidth): a hardware lane with a workaround, once torch is imported."""
        if self.settings.emulation is not None or not self.settings.workaround or "torch" not in sys.modules:
            return None
        from .workarounds.tilemodel import device_info

        return device_info(self.settings.platform.device_type).source

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        """Wrong marker arguments fail the collection of their module, with one clear line."""
        rep = yield
        if rep.passed:
            for node in rep.result:
                if isinstance(node, pytest.Item):
                    try:
                        markers.validate(node.iter_markers(), self.settings.registry)
                    except markers.MarkerError as exc:
                        rep.outcome, rep.longrepr, rep.result = "failed", f"{node.nodeid}: {exc}", []
                        break
        return rep

    def context(self) -> markers.Context:
        s = self.settings
        return markers.Context(s.platform, s.layout.kind, s.layout.source_root, self.covered, self.device_memory)

    def device_memory(self) -> str | float:
        """Free GiB on the lane's device, or why there is none (the emulator has none)."""
        if self.settings.emulation is not None:
            return "the emulated device runs on the CPU (hardware lanes only)"
        from .hardware.device import free_device_memory

        self.pick_device()  # the worker's own device, before anything opens a context on device 0
        return free_device_memory(self.settings)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        try:  # validated again: conftests may add marks after collection (known_defect per case)
            specs = item.stash[SPECS] = markers.validate(item.iter_markers(), self.settings.registry)
        except markers.MarkerError as exc:
            pytest.fail(f"{item.nodeid}: {exc}", pytrace=False)
        if self.settings.emulation is not None:  # every case starts on the same emulated heap
            from .emulation import device

            device.poison(None)
        ctx = self.context()
        skip = markers.evaluate_skip(specs, ctx)
        if skip is not None:
            pytest.skip(skip.reason)
        xfail = markers.evaluate_xfail(specs, ctx)
        if xfail is not None:
            item.stash[DECISION] = xfail
            item.add_marker(pytest.mark.xfail(reason=xfail.reason, strict=xfail.strict))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        """Attach what the case checks and its known-defect decision to the report, as data
        that travels with it (xdist serialises report attributes)."""
        rep = yield
        if self._stop is not None and rep.failed:
            rep.fl_stop = self._stop
        tag = item.stash.get(TAG, None)
        decision = item.stash.get(DECISION, None)
        if decision is not None and hasattr(rep, "wasxfail"):
            mismatch = markers.xfail_mismatch(decision, rep.when, call.excinfo.value if call.excinfo else None)
            if mismatch is not None:  # not this defect's failure: the case fails, saying why
                rep.outcome, rep.longrepr = "failed", f"{mismatch}\n\n{rep.longrepr}"
                del rep.wasxfail
                decision = None
            elif decision.conditional and rep.passed:  # its trigger did not fire on this device: a pass
                del rep.wasxfail
                decision = None
        seed = item.stash.get(SEED, None)
        if tag is not None or decision is not None or seed is not None:
            case: dict[str, Any] = {
                "op": tag.op if tag else None,
                "contract": tag.contract if tag else None,
                "seed": seed,
            }
            if decision is not None:
                case["defect"] = decision.defect
                case["xpass"] = rep.when == "call" and rep.failed and call.excinfo is None
            rep.fl_case = case
        return rep

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """A re-run of a lane's failures (the runner names them by JUnit key) runs those cases only."""
        import os

        keys = rerun_keys(os.environ)
        if keys is None:
            return
        chosen = [item for item in items if junit_key(item.nodeid) in keys]
        config.hook.pytest_deselected(items=[item for item in items if junit_key(item.nodeid) not in keys])
        items[:] = chosen

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        stop = getattr(report, "fl_stop", None)
        if stop and self._session is not None and not self._session.shouldstop:
            self._session.shouldstop = stop
        record = record_of(report)
        if record is not None:
            self.add(record)
            seed = (getattr(report, "fl_case", None) or {}).get("seed")
            fields = {
                "op": record.op,
                "contract": record.contract,
                "defect": record.defect,
                "seed": seed,
                **overload_fields(report.user_properties),
            }
            if any(v is not None for v in fields.values()):
                self.cases[junit_key(report.nodeid)] = {k: v for k, v in fields.items() if v is not None}

    def add(self, record: CaseRecord) -> None:
        self.summary.add(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Before junitxml writes its file: the summary becomes one suite property."""
        from .emulation import device

        local = device.counters()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["fl_contract_counters"] = local
            workeroutput["fl_contract_device"] = self.device_properties()
            if self.workaround is not None:
                workeroutput["fl_contract_workaround"] = self.workaround.line()
            return
        self.summary.counters.update(local)
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            xml.add_global_property(PROPERTY, self.summary.to_json())
            xml.add_global_property(CASES, json.dumps(self.cases, sort_keys=True))
            for name, value in self._worker_device or self.device_properties():
                xml.add_global_property(name, value)
            if self.devices is not None:  # each worker's device, as its own process saw it
                xml.add_global_property(WORKER_DEVICES, json.dumps(self._worker_devices, sort_keys=True))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        self.summary.counters.update(output.get("fl_contract_counters", {}))
        if output.get("fl_contract_device") and not self._worker_device:
            self._worker_device = [tuple(p) for p in output["fl_contract_device"] if p[0] != WORKER_DEVICE]
        seen = dict(tuple(p) for p in output.get("fl_contract_device", ())).get(WORKER_DEVICE)
        if seen is not None:
            self._worker_devices[str(node.workerinput.get("workerid"))] = seen
        if "fl_contract_workaround" in output:
            self._worker_workaround = output["fl_contract_workaround"]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.summary.terminal_lines()
        installed = self.workaround.line() if self.workaround else self._worker_workaround
        if installed:
            lines.append(f"workaround: {installed}")
            tiles = self.tile_device()
            if tiles:
                lines.append(f"fast-path tiles for {tiles}")
        if lines:
            terminalreporter.section("fl-contract summary")
            for line in lines:
                terminalreporter.write_line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._withdraw is not None:
            self._withdraw()
        if self._undo_autotune is not None:
            self._undo_autotune()
        if self.workaround is not None and self._module is not None:
            try:
                self._module.uninstall()
            except BaseException as exc:  # reported in one line: the run's verdict is already written
                sys.stderr.write(
                    f"fl-contract: workaround {self.settings.workaround}: uninstall() failed: "
                    f"{type(exc).__name__}: {first_line(exc)}\n"
                )
            self.workaround = None

    def device_properties(self) -> list[tuple[str, str]]:
        """The device the cases ran on, read where they ran (a worker has torch imported)."""
        import os

        from .config.devices import worker_device
        from .hardware.device import device_count, device_name

        found = [("fl_device", device_name(self.settings)), ("fl_device_count", device_count(self.settings))]
        pinned = worker_device(os.environ, self.settings.devices_var) if self.settings.pins_devices() else None
        if pinned is not None:
            found.append((WORKER_DEVICE, f"{pinned.line()}: {found[0][1]}"))
        return found

    def properties(self) -> list[tuple[str, str]]:
        """JUnit suite properties of the lane (written when junitxml starts its report)."""
        from pathlib import Path

        reach = self.reach
        return (
            report.properties(self.settings, versions())
            + report.provenance(self.settings, Path.cwd())
            + ([("fl_defect_reach", reach)] if reach else [])
        )
