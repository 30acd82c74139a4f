"""The platform registry (names, aliases, capabilities, known defects) and detection.

The registry is data (``platforms.yaml``); vendors extend or override it without patching
us, through ``--fl-platforms-file`` or the ``fl_contract.platforms`` entry-point group
(an entry point loads to a path, or to a callable returning a path or a mapping).
Nothing here imports torch unless ``detect`` has to ask it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata, resources
from typing import Any, Callable

import yaml

from ..util import EMULATOR_ENV, FlContractError
from . import safeyaml
from .devices import BY_DEVICE_TYPE, VARIABLE

CAPABILITIES = ("device_cast", "fp64", "bf16", "int64")
# the capability a case in a dtype needs (a dtype absent here every platform has)
DTYPE_CAPABILITY = {"bfloat16": "bf16", "float64": "fp64", "int64": "int64"}
ENTRY_POINT_GROUP = "fl_contract.platforms"
_PLATFORM_KEYS = {
    "description",
    "aliases",
    "vendor",
    "device_type",
    "capabilities",
    "defects",
    "exclude_defects",
    "emulation",
    "copy_source",
    "visible_devices",
}
_DEFECT_KEYS = {
    "id",
    "whose",
    "description",
    "feature",
    "seen",
    "seen_on",
    "ops",
    "workaround",
    "faults",
    "fails_with",
    "trigger",
    "registered",
}
WHOSE = ("compiler", "flag_gems")
# launch_resources: the defect shows where a launch's config (the one FlagGems' tuner picks on
# this device) needs more than the device has - decided when the call runs, by the error the
# launch raises, never by a shape seen on one card
# registered_function: the defect is a FlagGems function's (a vendor's or an architecture's
# override, ``registered: [module:function]``) that the lane's FlagGems registers only on some
# devices (5.0.2's Hopper mul on compute capability 9): decided by what this process
# registered, and per case by the case holding once that function is excluded
TRIGGERS = ("launch_resources", "registered_function")
# A known-defect xfail holds only for the failures its defect produces: the contract's own
# assertion always, and the exception types a defect lists.  These never are a defect's:
# they say the lane's environment is broken, not its kernels.
NEVER_A_DEFECT = (
    "ImportError",
    "ModuleNotFoundError",
    "BaseException",
    "Exception",
    "KeyboardInterrupt",
    "SystemExit",
    "OSError",
)


@dataclass(frozen=True)
class Defect:
    """One entry of the defect catalogue (``defects:`` in the registry): every fact the
    project holds about a defect id, in one place.  Which ops and calls it reaches is not
    here: the op registry's rows say so (their ``features`` for a compiler defect, their
    per-call predicates for a FlagGems one); what the emulator can inject is the emulator's
    (``emulation.device.INJECTABLE``); which workaround covers it is ``workaround``."""

    id: str
    description: str
    ops: tuple[str, ...] = ()  # ops as a vendor file names them, for a defect no row knows
    workaround: str | None = None  # the workaround module (its last name) that covers it
    faults: bool = False  # touches memory it does not own: a device fault is one of its outcomes
    fails_with: tuple[str, ...] = ()  # exception types it raises besides the contract's AssertionError
    whose: str = "compiler"  # compiler (a vendor's Triton) | flag_gems (FlagGems' own code)
    feature: str = ""  # the compiler feature, as a bug report and the probe table name it
    seen: tuple[str, ...] = ()  # where it was seen: devices and stacks, FlagGems versions
    trigger: str | None = None  # TRIGGERS: what decides at run time whether a call runs into it
    registered: tuple[str, ...] = ()  # registered_function: the functions, as "module:function"

    @property
    def flag_gems(self) -> bool:
        return self.whose == "flag_gems"


@dataclass(frozen=True)
class Platform:
    name: str
    vendor: str | None
    device_type: str
    aliases: tuple[str, ...] = ()
    lacks: frozenset[str] = frozenset()  # capabilities the platform does not have
    defects: tuple[Defect, ...] = ()
    emulation_profile: str | None = None
    copy_source: tuple[str, str] | None = None  # (path in the checkout, pattern)
    description: str = ""
    # the variable that limits a process to some devices (CUDA_VISIBLE_DEVICES): --fl-devices
    # pins each xdist worker's device with it; None where the platform has none
    visible_devices: str | None = None

    def has(self, capability: str) -> bool:
        return capability not in self.lacks

    def defect(self, defect_id: str) -> Defect | None:
        return next((d for d in self.defects if d.id == defect_id), None)


@dataclass(frozen=True)
class Registry:
    platforms: Mapping[str, Platform]
    sources: tuple[str, ...] = ()
    _aliases: Mapping[str, str] = field(default_factory=dict)
    defects: Mapping[str, Defect] = field(default_factory=dict)  # the catalogue, by id

    @property
    def names(self) -> list[str]:
        return sorted(self.platforms)

    @property
    def flag_gems_defects(self) -> frozenset[str]:
        """Ids of FlagGems' own defects (the rest are compilers')."""
        return frozenset(d.id for d in self.defects.values() if d.flag_gems)

    @property
    def defect_ids(self) -> set[str]:
        return set(self.defects)

    def covered_by(self, workaround: str) -> tuple[str, ...]:
        """The defects the catalogue says ``workaround`` (a module's last name) covers."""
        return tuple(d.id for d in self.defects.values() if d.workaround == workaround.rsplit(".", 1)[-1])

    def canonical(self, name: str) -> str | None:
        name = name.strip().lower()
        if name in self.platforms:
            return name
        return self._aliases.get(name)

    def get(self, name: str) -> Platform:
        canonical = self.canonical(name)
        if canonical is None:
            raise FlContractError(
                f"unknown platform {name!r}; known: {', '.join(self.names)} "
                f"(aliases: {', '.join(sorted(self._aliases))})"
            )
        return self.platforms[canonical]


# -- loading --------------------------------------------------------------------------


def _fail(source: str, key: str, problem: str) -> FlContractError:
    return FlContractError(f"platforms file {safeyaml.shown(source)}: {key}: {problem}")


def _check_mapping(value: Any, source: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(source, key, f"expected a mapping, got {type(value).__name__}")
    return value


def _check_str_list(value: Any, source: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(source, key, "expected a list of strings")
    return value


def _validate_defect(defect: Any, source: str, where: str, whose: str | None = None) -> dict[str, Any]:
    """One catalogue entry (``id`` required; ``whose`` from the section it stands in)."""
    defect = dict(_check_mapping(defect, source, where))
    for key in defect:
        if key not in _DEFECT_KEYS:
            raise _fail(source, f"{where}.{key}", f"unknown key (known: {', '.join(sorted(_DEFECT_KEYS))})")
    for key in ("id", "description"):
        if key in defect and (not isinstance(defect[key], str) or not defect[key]):
            raise _fail(source, f"{where}.{key}", "required string")
    if "id" not in defect:
        raise _fail(source, f"{where}.id", "required string")
    if whose is not None:
        defect.setdefault("whose", whose)
    if defect.get("whose", "compiler") not in WHOSE:
        raise _fail(source, f"{where}.whose", f"one of {', '.join(WHOSE)}")
    _check_str_list(defect.get("ops", []), source, f"{where}.ops")
    if isinstance(defect.get("seen"), str):
        defect["seen"] = [defect["seen"]]
    _check_str_list(defect.get("seen", []), source, f"{where}.seen")
    for key in ("feature", "seen_on", "workaround"):
        if key in defect and not isinstance(defect[key], str):
            raise _fail(source, f"{where}.{key}", "expected a string")
    if "trigger" in defect:
        if defect["trigger"] not in TRIGGERS:
            raise _fail(source, f"{where}.trigger", f"one of {', '.join(TRIGGERS)}")
        if not defect.get("fails_with"):
            raise _fail(source, f"{where}.fails_with", "a defect with a trigger names the error its launch raises")
    registered = _check_str_list(defect.get("registered", []), source, f"{where}.registered")
    if any(":" not in r or not all(part.strip() for part in r.split(":", 1)) for r in registered):
        raise _fail(source, f"{where}.registered", "each a FlagGems function as module:function")
    if bool(registered) != (defect.get("trigger") == "registered_function"):
        raise _fail(source, f"{where}.registered", "given exactly where trigger is registered_function")
    if not isinstance(defect.get("faults", False), bool):
        raise _fail(source, f"{where}.faults", "expected true or false")
    for name in _check_str_list(defect.get("fails_with", []), source, f"{where}.fails_with"):
        if not name.isidentifier() or name in NEVER_A_DEFECT:
            raise _fail(
                source,
                f"{where}.fails_with",
                f"{name!r} is not an exception type a defect can raise (never: {', '.join(NEVER_A_DEFECT)})",
            )
    return defect


def _validate_defects(defects: Any, source: str, where: str, whose: str | None = None) -> list[dict[str, Any]]:
    """A list of catalogue entries (``flag_gems_defects``, a vendor platform's own)."""
    if not isinstance(defects, list):
        raise _fail(source, where, "expected a list")
    return [_validate_defect(d, source, f"{where}[{i}]", whose) for i, d in enumerate(defects)]


def _platform_defects(defects: Any, source: str, where: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A platform's ``defects:``: ids of catalogue entries, or entries written in place (a
    vendor file of the older form: the entry joins the catalogue, a compiler defect unless
    it says otherwise). Returns (ids, entries written in place)."""
    if not isinstance(defects, list):
        raise _fail(source, where, "expected a list")
    ids, entries = [], []
    for i, item in enumerate(defects):
        if isinstance(item, str):
            if not item.strip():
                raise _fail(source, f"{where}[{i}]", "a defect id cannot be empty")
            ids.append(item)
            continue
        entry = _validate_defect(item, source, f"{where}[{i}]", "compiler")
        if "description" not in entry:
            raise _fail(source, f"{where}[{i}].description", "required string")
        ids.append(entry["id"])
        entries.append(entry)
    return ids, entries


def _validate_entry(name: str, entry: Any, source: str) -> dict[str, Any]:
    where = f"platforms.{name}"
    entry = _check_mapping(entry, source, where)
    for key in entry:
        if key not in _PLATFORM_KEYS:
            raise _fail(source, f"{where}.{key}", f"unknown key (known: {', '.join(sorted(_PLATFORM_KEYS))})")
    if "aliases" in entry and not all(a.strip() for a in _check_str_list(entry["aliases"], source, f"{where}.aliases")):
        raise _fail(source, f"{where}.aliases", "an alias cannot be empty")
    for key in ("vendor", "device_type", "description"):
        if key in entry and entry[key] is not None and not isinstance(entry[key], str):
            raise _fail(source, f"{where}.{key}", "expected a string")
    if "device_type" in entry and not (isinstance(entry["device_type"], str) and entry["device_type"].strip()):
        raise _fail(source, f"{where}.device_type", "expected a device name (cuda, cpu, npu, ...), not empty or null")
    caps = _check_mapping(entry.get("capabilities", {}), source, f"{where}.capabilities")
    for cap, value in caps.items():
        if cap not in CAPABILITIES:
            raise _fail(source, f"{where}.capabilities.{cap}", f"unknown capability (known: {', '.join(CAPABILITIES)})")
        if not isinstance(value, bool):
            raise _fail(source, f"{where}.capabilities.{cap}", "expected true or false")
    if "defects" in entry:
        entry = dict(entry)
        entry["defects"], entry[_INLINE] = _platform_defects(entry["defects"], source, f"{where}.defects")
    _check_str_list(entry.get("exclude_defects", []), source, f"{where}.exclude_defects")
    if "emulation" in entry:
        emu = _check_mapping(entry["emulation"], source, f"{where}.emulation")
        if set(emu) != {"profile"} or not isinstance(emu["profile"], str):
            raise _fail(source, f"{where}.emulation", "expected {profile: NAME}")
    if entry.get("visible_devices") is not None and not (
        isinstance(entry["visible_devices"], str) and VARIABLE.match(entry["visible_devices"])
    ):
        raise _fail(
            source,
            f"{where}.visible_devices",
            "expected an environment variable's name (CUDA_VISIBLE_DEVICES, ...) or null",
        )
    if "copy_source" in entry:
        cs = _check_mapping(entry["copy_source"], source, f"{where}.copy_source")
        if set(cs) != {"path", "pattern"} or not all(isinstance(v, str) for v in cs.values()):
            raise _fail(source, f"{where}.copy_source", "expected {path: PATH, pattern: TEXT}")
    return entry


CATALOGUE = "*"  # raw-registry key of the defect catalogue (id -> entry), beside the platforms
_INLINE = "_inline_defects"  # a platform entry's defects written in place (the older form)
_TOP_KEYS = ("platforms", "defects", "flag_gems_defects")


def parse_document(data: Any, source: str) -> dict[str, dict[str, Any]]:
    """Validate one registry document; returns the raw entries by platform name, and the
    defect catalogue under ``CATALOGUE``: ``defects:`` (id -> entry), the older
    ``flag_gems_defects:`` list (FlagGems' own, every platform inherits them) and entries a
    platform writes in place."""
    doc = _check_mapping(data, source, "(top level)")
    extra = set(doc) - set(_TOP_KEYS)
    if extra:
        raise _fail(source, sorted(map(str, extra))[0], f"unknown top-level key (expected {', '.join(_TOP_KEYS)})")
    platforms = _check_mapping(doc.get("platforms", {}), source, "platforms")
    raw = {str(name).lower(): _validate_entry(str(name), entry, source) for name, entry in platforms.items()}
    if CATALOGUE in raw:
        raise _fail(source, f"platforms.{CATALOGUE}", "not a platform name")
    catalogue: dict[str, dict[str, Any]] = {}
    for key, entry in _check_mapping(doc.get("defects", {}), source, "defects").items():
        catalogue[str(key)] = _validate_defect(
            {"id": str(key), **_check_mapping(entry, source, f"defects.{key}")}, source, f"defects.{key}"
        )
    for entry in _validate_defects(doc.get("flag_gems_defects", []), source, "flag_gems_defects", "flag_gems"):
        catalogue[entry["id"]] = entry
    for entry in raw.values():
        for inline in entry.pop(_INLINE, []):
            catalogue[inline["id"]] = inline
    raw[CATALOGUE] = catalogue
    return raw


def _load_yaml(text: str, source: str) -> Any:
    """Bounded like a manifest (``safeyaml``): an alias bomb is one line, not gigabytes."""
    try:
        return safeyaml.load(text)
    except yaml.YAMLError as exc:
        problem, line = safeyaml.yaml_problem(exc)
        raise _fail(source, f"line {line}" if line else "(parse)", f"not valid YAML: {problem}") from None
    except safeyaml.YamlInputError as exc:
        raise _fail(source, f"line {exc.line}" if exc.line else "(parse)", exc.problem) from None


def load_path(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """One registry file: size-capped, UTF-8 only (binary or Latin-1 is one line naming it)."""
    source = os.fspath(path)
    text = safeyaml.read_or_refuse(path, f"platforms file {safeyaml.shown(source)}")
    return parse_document(_load_yaml(text, source), source)


def merge(base: dict[str, dict[str, Any]], override: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entries merge key by key; capabilities merge by capability; new names are added."""
    merged = {name: dict(entry) for name, entry in base.items()}
    for name, entry in override.items():
        target = merged.setdefault(name, {})
        for key, value in entry.items():
            if key == "capabilities":
                target[key] = {**target.get(key, {}), **value}
            elif name == CATALOGUE:  # by id, key by key: a vendor file amends an entry or adds one
                target[key] = {**target.get(key, {}), **value}
            else:
                target[key] = value
    return merged


def _build(raw: dict[str, dict[str, Any]], sources: tuple[str, ...]) -> Registry:
    platforms: dict[str, Platform] = {}
    aliases: dict[str, str] = {}
    raw = dict(raw)
    catalogue = {key: _defect(entry, sources[-1]) for key, entry in raw.pop(CATALOGUE, {}).items()}
    inherited = [d for d in catalogue.values() if d.flag_gems]
    for name, entry in raw.items():
        if "device_type" not in entry:
            raise _fail(sources[-1], f"platforms.{name}.device_type", "required for a new platform")
        copy_source = entry.get("copy_source")
        platforms[name] = Platform(
            name=name,
            vendor=entry.get("vendor"),
            device_type=entry["device_type"],
            aliases=tuple(a.lower() for a in entry.get("aliases", [])),
            lacks=frozenset(c for c, ok in entry.get("capabilities", {}).items() if not ok),
            defects=tuple(_with_common(name, entry, catalogue, inherited, sources[-1])),
            emulation_profile=(entry.get("emulation") or {}).get("profile"),
            copy_source=(copy_source["path"], copy_source["pattern"]) if copy_source else None,
            description=entry.get("description", ""),
            visible_devices=entry.get("visible_devices", BY_DEVICE_TYPE.get(entry["device_type"])),
        )
    for name, platform in platforms.items():
        for alias in platform.aliases:
            owner = aliases.get(alias)
            if alias == name:
                continue  # a platform named as itself: nothing to resolve
            if alias in platforms:
                raise _fail(
                    sources[-1],
                    f"platforms.{name}.aliases",
                    f"alias {alias!r} is the name of platform {alias!r} itself: an alias names it or the "
                    "platform, not both (rename one)",
                )
            if owner and owner != name:
                raise _fail(
                    sources[-1],
                    f"platforms.{name}.aliases",
                    f"alias {alias!r} is already an alias of platform {owner!r}",
                )
            aliases[alias] = name
    return Registry(platforms=platforms, sources=sources, _aliases=aliases, defects=catalogue)


def _defect(entry: dict[str, Any], source: str) -> Defect:
    if not entry.get("description"):
        raise _fail(source, f"defects.{entry['id']}.description", "required string")
    seen = tuple(entry.get("seen", ())) + ((entry["seen_on"],) if entry.get("seen_on") else ())
    return Defect(
        entry["id"],
        " ".join(entry["description"].split()),
        tuple(entry.get("ops", ())),
        entry.get("workaround"),
        entry.get("faults", False),
        tuple(entry.get("fails_with", ())),
        entry.get("whose", "compiler"),
        " ".join(entry.get("feature", "").split()),
        seen,
        entry.get("trigger"),
        tuple(entry.get("registered", ())),
    )


def _with_common(
    name: str, entry: dict[str, Any], catalogue: Mapping[str, Defect], inherited: list[Defect], source: str
) -> list[Defect]:
    """A platform's own defects (ids of the catalogue), then FlagGems' own ones it does not
    list or exclude."""
    own = []
    for defect_id in entry.get("defects", []):
        if defect_id not in catalogue:
            raise _fail(
                source,
                f"platforms.{name}.defects",
                f"unknown defect {defect_id!r}: define it under defects: (id, whose, description)",
            )
        own.append(catalogue[defect_id])
    skip = {d.id for d in own} | set(entry.get("exclude_defects", []))
    return own + [d for d in inherited if d.id not in skip]


def _entry_point_sources() -> list[tuple[str, Callable[[], Any]]]:
    found = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.append((f"entry point {ep.name} ({ep.value})", ep.load))
    return found


def load_registry(extra_files: list[str] | tuple[str, ...] = (), *, entry_points: bool = True) -> Registry:
    """Built-in registry, then entry points, then files named on the command line."""
    builtin = resources.files("pytest_fl_contract.config").joinpath("platforms.yaml")
    raw = parse_document(_load_yaml(builtin.read_text(encoding="utf-8"), "platforms.yaml"), "platforms.yaml")
    sources = ["builtin"]
    if entry_points:
        for label, load in _entry_point_sources():
            try:
                value = load()
                if callable(value):
                    value = value()
            except Exception as exc:  # a vendor's broken plugin is bad input, not our crash
                raise FlContractError(f"platforms {label}: failed to load: {' '.join(str(exc).split())}") from None
            if isinstance(value, (str, os.PathLike)):
                raw = merge(raw, load_path(value))
            else:
                raw = merge(raw, parse_document(value, label))
            sources.append(label)
    for path in extra_files:
        raw = merge(raw, load_path(path))
        sources.append(str(path))
    return _build(raw, tuple(sources))


# -- detection ------------------------------------------------------------------------

_QUICK_ATTRS = (  # as flag_gems' DeviceDetector._get_vendor_from_quick_cmd
    ("mlu", "cambricon"),
    ("musa", "mthreads"),
    ("corex", "iluvatar"),
    ("npu", "ascend"),
    ("ptpu", "sunrise"),
    ("gcu", "enflame"),
)


@dataclass(frozen=True)
class Detection:
    platform: str
    how: str


# The CPU emulator sets GEMS_VENDOR for FlagGems and this beside it, so that a process that
# inherits its environment (an xdist worker) detects the CPU, as the one that started it did.


def detect(registry: Registry, environ: Mapping[str, str] | None = None, torch_module: Any = None) -> Detection:
    """Decide the platform as FlagGems does; ``how`` says what decided it."""
    environ = os.environ if environ is None else environ
    vendor = environ.get("GEMS_VENDOR")
    if vendor and environ.get(EMULATOR_ENV) == vendor:  # inherited by an xdist worker or a child
        return Detection("cpu", f"GEMS_VENDOR={vendor} was set by fl-contract's CPU emulator")
    if vendor and registry.canonical(vendor):
        return Detection(registry.canonical(vendor), f"GEMS_VENDOR={vendor}")  # type: ignore[arg-type]
    torch = torch_module
    if torch is None:
        if "torch" not in sys.modules:
            from importlib.util import find_spec

            if find_spec("torch") is None:
                return Detection("cpu", "torch is not installed")
        import torch  # noqa: PLC0415 - detection is the one place that must ask torch
    for attr, name in _QUICK_ATTRS:
        if hasattr(torch, attr):
            return Detection(name, f"torch.{attr} exists")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available():
        device = cuda.get_device_name(0)
        if "iluvatar" in device.lower():
            return Detection("iluvatar", f"CUDA device {device!r}")
        if getattr(getattr(torch, "version", None), "hip", None):
            return Detection("amd", f"ROCm device {device!r}")
        return Detection("nvidia", f"CUDA device {device!r}")
    return Detection("cpu", "no accelerator found by torch")
