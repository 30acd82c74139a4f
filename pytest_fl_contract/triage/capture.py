"""A pytest plugin (``-p pytest_fl_contract.triage.capture``) that records the FlagGems calls
each case makes while it runs, and writes a reproduction for each case that fails.

Loaded by ``fl-contract repro`` into a re-run of the chosen cases under the lane's own options
(platform, emulator, workaround, sweep), after the lane's plugin.  Recording at the call, not
rebuilding it from the case id, is what makes it work for every contract: a layout contract's
strided view, a parameter sweep's keyword, an out= buffer, a generated draw all reach the
record as FlagGems received them.  Only top-level calls are recorded (a FlagGems function
that dispatches to another is one call); the registration (``_FULL_CONFIG``) and the modules'
attributes point at the recording wrappers during the case's call phase only.

Output (``FL_TRIAGE_OUT``): per failing case ``<slug>.py`` (the script), ``<slug>.json`` (what
it holds), sidecar inputs, and ``captured.jsonl`` (one line per case: key, outcome, script
or why none).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading
from collections.abc import Generator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from . import script

OUT_ENV = "FL_TRIAGE_OUT"
LANE_ENV = "FL_TRIAGE_LANE"  # the lane's name, for the script's header
MAX_CALLS = 16  # calls recorded per case: the first ones (a sweep inside one case stops there)
MAX_STORAGE = 256 << 20  # a storage past this is not saved: the case gets no script, saying why

_CALLS = pytest.StashKey[list]()
_local = threading.local()


def slug(key: str) -> str:
    """A case key as a file name: readable, bounded, distinct (a digest of the key at the end)."""
    import hashlib

    text = re.sub(r"[^A-Za-z0-9_.-]+", "-", key.split("::", 1)[-1]).strip("-.")[:80]
    return f"{text}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def registered(gems: Any) -> dict[int, tuple[Any, str]]:
    """id(function) -> (function, the first aten overload FlagGems registers it for)."""
    found: dict[int, tuple[Any, str]] = {}
    for item in getattr(gems, "_FULL_CONFIG", ()):
        if isinstance(item, tuple) and len(item) >= 2 and callable(item[1]):
            found.setdefault(id(item[1]), (item[1], str(item[0])))
    return found


class Recorder:
    """Wrappers around every registered FlagGems function, installed for one call phase."""

    def __init__(self, gems: Any) -> None:
        self.gems = gems
        self.calls: list[dict[str, Any]] = []
        self.refused: str | None = None
        self._undo: list[Any] = []

    def _record(self, fn: Any, aten: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(self.calls) >= MAX_CALLS:
            return
        import torch

        tensors: dict[int, tuple[str, Any]] = {}

        def name_of(t: Any) -> str:
            if id(t) not in tensors:
                if t.untyped_storage().nbytes() > MAX_STORAGE:
                    raise script.Unrecordable(
                        f"an input of {t.untyped_storage().nbytes() >> 20} MiB (past "
                        f"{MAX_STORAGE >> 20} MiB: not saved)"
                    )
                tensors[id(t)] = (f"t{len(tensors)}", t)
            return tensors[id(t)][0]

        try:
            encoded_args = tuple(script.encode(a, name_of) for a in args)
            encoded_kwargs = tuple((k, script.encode(v, name_of)) for k, v in kwargs.items())
            saved = [(name, *script.tensor_record(name, t)) for name, t in tensors.values()]
        except (script.Unrecordable, RuntimeError) as exc:
            self.refused = self.refused or f"{fn.__name__}: {exc}"
            return
        first = next((t for _, t in tensors.values() if isinstance(t, torch.Tensor)), None)
        self.calls.append(
            {
                "module": fn.__module__,
                "function": fn.__name__,
                "aten": aten,
                "args": encoded_args,
                "kwargs": encoded_kwargs,
                "tensors": [(record, data) for _, record, data in saved],
                "device": first.device.type if first is not None else "cpu",
            }
        )

    def wrap(self, fn: Any, aten: str) -> Any:
        recorder = self

        @functools.wraps(fn)
        def recording(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(_local, "depth", 0)
            _local.depth = depth + 1  # before recording: saving the inputs runs torch ops, which may be FlagGems'
            try:
                if depth == 0:
                    recorder._record(fn, aten, args, kwargs)
                return fn(*args, **kwargs)
            finally:
                _local.depth = depth

        return recording

    def install(self) -> None:
        table = registered(self.gems)
        wrappers = {key: self.wrap(fn, aten) for key, (fn, aten) in table.items()}
        full = self.gems._FULL_CONFIG
        self.gems._FULL_CONFIG = tuple(
            (i[0], wrappers[id(i[1])], *i[2:]) if isinstance(i, tuple) and len(i) >= 2 and id(i[1]) in wrappers else i
            for i in full
        )
        self._undo.append((self.gems, "_FULL_CONFIG", full))
        by_func = getattr(self.gems, "FULL_CONFIG_BY_FUNC", None)  # what use_gems(include=...) reads
        if isinstance(by_func, dict):
            self.gems.FULL_CONFIG_BY_FUNC = {
                name: [
                    (i[0], wrappers[id(i[1])], *i[2:])
                    if isinstance(i, tuple) and len(i) >= 2 and id(i[1]) in wrappers
                    else i
                    for i in items
                ]
                for name, items in by_func.items()
            }
            self._undo.append((self.gems, "FULL_CONFIG_BY_FUNC", by_func))
        for fn, _ in table.values():
            module = sys.modules.get(getattr(fn, "__module__", "") or "")
            name = getattr(fn, "__name__", "")
            if module is not None and getattr(module, name, None) is fn:
                self._undo.append((module, name, fn))
                setattr(module, name, wrappers[id(fn)])

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo.clear()


def tolerance(item: pytest.Item, calls: list[dict[str, Any]]) -> tuple[float, float]:
    """The contract's tolerance where the case names a registry row, a case and a dtype (the
    row family's, the loosest over its outputs); else the loosest family rule for the terms a
    call folds (the largest input over the result: a reduction's n, a matmul's K and more)."""
    from ..families import EPS, of
    from ..registry.schema import OUTPUT_NAMES, Row

    params = getattr(getattr(item, "callspec", None), "params", {})
    row = next((v for v in params.values() if isinstance(v, Row)), None)
    case = next((v for v in params.values() if hasattr(v, "shape") and not isinstance(v, Row)), None)
    dtype = next((v for v in params.values() if isinstance(v, str) and v in EPS), "float32")
    found: list[dict[str, float]] = []
    if row is not None and case is not None:
        for output in OUTPUT_NAMES:
            try:
                found.append(of(row).tolerance(row, case, dtype, output))
            except Exception:  # not an output of this family: the next name
                continue
    if found:
        return max(t["rtol"] for t in found), max(t["atol"] for t in found)
    terms = 1
    for call in calls:
        sizes = [_numel(r.shape) for r, _ in call["tensors"]]
        if sizes:
            terms = max(terms, max(sizes) // max(min(sizes), 1))
    half = EPS[dtype] if dtype in ("float16", "bfloat16") else 0.0
    return 32 * EPS["float32"] + 2 * half, (16 * EPS["float32"] * terms + 2 * half) * terms**0.5


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _versions() -> dict[str, str]:
    from ..util import installed_version

    return {
        name: installed_version(dist) or "?"
        for name, dist in (("torch", "torch"), ("triton", "triton"), ("flag_gems", "flag_gems"))
    }


def _lane_facts(config: pytest.Config) -> tuple[str, tuple[str, tuple[str, ...]] | None, str | None, str]:
    """(platform, (profile, defects) when emulated, the CPU lane's profile, device name)."""
    from ..plugin import settings_of

    try:
        settings = settings_of(config)
    except Exception:  # a suite run without the lane's plugin: no platform to name
        return "unknown", None, None, ""
    emulated = (settings.emulation.profile, tuple(settings.emulation.defects)) if settings.emulation else None
    cpu_profile = None
    if emulated is not None:
        try:
            cpu = settings.registry.get("cpu")
            cpu_profile = getattr(cpu, "emulation_profile", None)
        except Exception:  # a registry with no cpu platform: the lane's own profile
            cpu_profile = None
    device_name = ""
    if emulated is None:
        try:
            import torch

            device_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""
        except Exception:
            device_name = ""
    return settings.platform.name, emulated, cpu_profile or (emulated[0] if emulated else None), device_name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    gems = sys.modules.get("flag_gems")
    if gems is None or not os.environ.get(OUT_ENV):
        yield
        return
    recorder = Recorder(gems)
    recorder.install()
    try:
        yield
    finally:
        recorder.uninstall()
        item.stash[_CALLS] = [recorder]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    out = os.environ.get(OUT_ENV)
    if call.when != "call" or not out:
        return
    from ..reporting.outcomes import junit_key

    key = junit_key(item.nodeid)
    recorders = item.stash.get(_CALLS, [])
    xfailed = report.skipped and hasattr(report, "wasxfail")  # a registered defect showing, as it should
    line: dict[str, Any] = {"key": key, "nodeid": item.nodeid, "outcome": "xfailed" if xfailed else report.outcome}
    if report.failed or xfailed:
        line.update(write(item, key, recorders[0] if recorders else None, _failure(report), Path(out)))
    with open(Path(out) / "captured.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _failure(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr)
    return " ".join(text.split())[:300]


def write(item: pytest.Item, key: str, recorder: Recorder | None, failure: str, out: Path) -> dict[str, Any]:
    """The case's script and record; {"script": path} or {"why": ...} (no FlagGems call)."""
    if recorder is None or not recorder.calls:
        why = (
            recorder.refused
            if recorder is not None and recorder.refused
            else "the case made no FlagGems call that reached the recorder"
        )
        return {"why": why}
    platform, emulated, cpu_profile, device_name = _lane_facts(item.config)
    rtol, atol = tolerance(item, recorder.calls)
    tensors: list[script.Tensor] = []
    data: dict[str, bytes] = {}
    calls = []
    for n, c in enumerate(recorder.calls):
        rename = {r.name: f"{r.name}_{n}" if n else r.name for r, _ in c["tensors"]}
        for r, raw in c["tensors"]:
            tensors.append(script.Tensor(**{**asdict(r), "name": rename[r.name], "shape": r.shape, "stride": r.stride}))
            data[rename[r.name]] = raw
        calls.append(
            script.Call(
                c["module"],
                c["function"],
                c["aten"],
                _renamed(c["args"], rename),
                tuple((k, _renamed((v,), rename)[0]) for k, v in c["kwargs"]),
                rtol,
                atol,
            )
        )
    from ..stash import TAG

    tag = item.stash.get(TAG, None)
    repro = script.Repro(
        key=key,
        lane=os.environ.get(LANE_ENV, platform),
        platform=platform,
        device=recorder.calls[0]["device"],
        failure=failure,
        versions=_versions(),
        calls=tuple(calls),
        tensors=tuple(tensors),
        emulated=emulated,
        cpu_profile=cpu_profile,
        op=getattr(tag, "op", None),
        contract=getattr(tag, "contract", None),
        device_name=device_name,
    )
    name = slug(key)
    path = out / f"{name}.py"
    path.write_text(script.render(repro, path.name), encoding="utf-8")
    for file, blob in script.sidecars(repro, data, path.name).items():
        (out / file).write_bytes(blob)
    record = {**asdict(repro), "tensors": [{**asdict(t), "data": ""} for t in tensors]}
    (out / f"{name}.json").write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
    return {"script": str(path), "calls": [script.label(c) for c in calls], "refused": recorder.refused}


def _renamed(values: tuple[Any, ...], rename: dict[str, str]) -> tuple[Any, ...]:
    def one(value: Any) -> Any:
        if isinstance(value, dict):
            kind, inner = next(iter(value.items()))
            if kind == "tensor":
                return {"tensor": rename.get(inner, inner)}
            if kind in ("list", "tuple"):
                return {kind: [one(v) for v in inner]}
        return value

    return tuple(one(v) for v in values)
