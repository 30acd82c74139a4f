"""Turn options, ini and environment into one frozen ``Settings``: pure, tested directly."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..util import FlContractError, installed_version
from . import devices as device_plan
from .layout import Layout, detect_layout
from .platforms import Detection, Platform, Registry, detect
from .tuning import MODES as AUTOTUNE_MODES
from .tuning import Plan
from .tuning import plan as autotune_plan

DEFAULT_WORKAROUND = "pytest_fl_contract.workarounds.masked_reductions"
SWEEPS = ("quick", "full")


@dataclass(frozen=True)
class Emulation:
    profile: str
    defects: tuple[str, ...]


@dataclass(frozen=True)
class Settings:
    registry: Registry
    platform: Platform
    detection: Detection
    layout: Layout
    emulation: Emulation | None
    workaround: str | None  # module to install, None when off
    workaround_why: str
    sweep: str
    junit_prefix: str | None
    autotune: Plan
    wrapped_only: bool = False  # ops the workaround leaves are skipped (their twin lane runs them)
    unreached_sweeps_only: bool = False  # ops no injected defect reaches: the sweep contracts only
    devices: device_plan.Asked = None  # --fl-devices: a count, "all", or None (one device, as always)
    devices_var: str | None = None  # the variable that pins a worker's device on this lane

    def pins_devices(self) -> bool:
        return self.devices is not None and self.devices != 1


@dataclass(frozen=True)
class Options:
    platform: str | None = None
    ini_platform: str | None = None
    emulate: bool = False
    profile: str | None = None
    inject: tuple[str, ...] = ()
    no_workaround: bool = False
    force_workaround: bool = False
    workaround: str | None = None
    wrapped_only: bool = False
    unreached_sweeps_only: bool = False
    layout: str = "auto"
    source_root: Path = Path(".")
    sweep: str | None = None
    junit_prefix: str | None = None
    autotune: str | None = None
    devices: str | None = None


def choose_platform_name(opts: Options, environ: Mapping[str, str]) -> tuple[str, str]:
    """Command line wins, then FL_PLATFORM, then the ini; default auto.  ``--platform ""``
    is a mistake (an unset CI variable), not a request for auto-detection: it is refused."""
    if opts.platform is not None:
        if not opts.platform.strip():
            raise FlContractError("--platform is empty: give a platform name or 'auto'")
        return opts.platform, "--platform"
    if environ.get("FL_PLATFORM"):
        return environ["FL_PLATFORM"], "FL_PLATFORM"
    if opts.ini_platform:
        return opts.ini_platform, "ini fl_platform"
    return "auto", "default"


def resolve(opts: Options, registry: Registry, environ: Mapping[str, str] | None = None) -> Settings:
    from ..emulation.device import INJECTABLE
    from ..emulation.profiles import get_profile

    environ = os.environ if environ is None else environ
    name, source = choose_platform_name(opts, environ)
    if name.strip().lower() == "auto":
        detection = detect(registry, environ)
    else:
        detection = Detection(registry.get(name).name, source)
    platform = registry.platforms[detection.platform]

    emulation = None
    if opts.emulate or platform.name == "cpu" or opts.inject or opts.profile:
        if detection.platform != "cpu" and not opts.emulate:
            raise FlContractError("--fl-inject and --fl-profile need --fl-emulate (or --platform cpu)")
        profile = opts.profile or platform.emulation_profile
        if profile is None:
            raise FlContractError(
                f"platform {platform.name} has no emulation profile in the registry; pass --fl-profile"
            )
        try:
            get_profile(profile)
        except ValueError as exc:
            raise FlContractError(str(exc)) from None
        # Compiler defects are injected; FlagGems' own defects happen for real on the interpreter.
        injected = [d.id for d in platform.defects if d.id in INJECTABLE] if opts.emulate else []
        for defect in opts.inject:
            if defect not in INJECTABLE:
                raise FlContractError(f"unknown defect {defect!r} for --fl-inject; known: {', '.join(INJECTABLE)}")
            injected.append(defect)
        emulation = Emulation(profile, tuple(dict.fromkeys(injected)))

    if opts.workaround is not None and not opts.workaround.strip():
        raise FlContractError("--fl-workaround is empty: give a module name (or --fl-no-workaround)")
    if opts.no_workaround and (opts.force_workaround or opts.workaround):
        raise FlContractError("--fl-no-workaround contradicts --fl-workaround / --fl-force-workaround")
    module = opts.workaround or DEFAULT_WORKAROUND
    defects_with_workaround = [d.id for d in platform.defects if d.workaround and not d.flag_gems]
    if opts.no_workaround:
        workaround, why = None, "--fl-no-workaround"
    elif opts.force_workaround or opts.workaround:
        workaround, why = module, "forced" if opts.force_workaround else "--fl-workaround"
    elif defects_with_workaround:
        workaround, why = module, f"covers {', '.join(defects_with_workaround)}"
    else:
        workaround, why = None, f"not needed on {platform.name}"

    if opts.wrapped_only and workaround is None:
        raise FlContractError(f"--fl-wrapped-only needs a workaround, and this lane has none ({why})")
    if opts.wrapped_only and emulation is None:
        raise FlContractError("--fl-wrapped-only is for emulated lanes (--fl-emulate): on hardware every op runs")
    if opts.unreached_sweeps_only and (emulation is None or "masked_2d_row_load" not in emulation.defects):
        raise FlContractError(
            "--fl-unreached-sweeps-only is for emulated lanes with masked_2d_row_load injected "
            "(the source scan it relies on reads for that defect)"
        )
    sweep = opts.sweep or ("quick" if emulation else "full")
    if sweep not in SWEEPS:
        raise FlContractError(f"unknown sweep {sweep!r}; known: {', '.join(SWEEPS)}")
    if opts.autotune is not None and opts.autotune not in AUTOTUNE_MODES:
        raise FlContractError(f"unknown --fl-autotune {opts.autotune!r}; known: {', '.join(AUTOTUNE_MODES)}")
    if opts.autotune is not None and emulation is not None:
        raise FlContractError(
            "--fl-autotune is for hardware lanes: the emulator times nothing and runs each tuner's first config"
        )
    devices = device_plan.parse(opts.devices)
    devices_var = device_plan.variable(platform.visible_devices, emulation is not None)
    if devices not in (None, 1) and devices_var is None:
        raise FlContractError(
            f"--fl-devices {devices}: platform {platform.name} names no visible-devices variable "
            "(visible_devices: in the platform registry), so a worker cannot be given one device"
        )
    return Settings(
        registry=registry,
        platform=platform,
        detection=detection,
        layout=detect_layout(opts.layout, opts.source_root),
        emulation=emulation,
        workaround=workaround,
        workaround_why=why,
        sweep=sweep,
        wrapped_only=opts.wrapped_only,
        unreached_sweeps_only=opts.unreached_sweeps_only,
        junit_prefix=opts.junit_prefix,
        autotune=autotune_plan(opts.autotune, emulated=emulation is not None),
        devices=devices,
        devices_var=devices_var,
    )


def versions() -> dict[str, str]:
    """Installed versions, read from metadata: nothing is imported."""
    return {
        dist: installed_version(dist) or "not installed"
        for dist in ("torch", "triton", "flag_gems", "pytest-fl-contract")
    }
