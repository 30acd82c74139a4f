"""pytest plugin ``fl_contract``: options, the lane session's creation, and fixtures.

Like pytest-xdist's ``plugin.py`` this module only wires: the lane's state and its hooks
live in ``session.LaneSession``.  Loading it imports neither torch nor triton nor flag_gems.

Installed but not asked for (``activation``: no platform named, no ``-p fl_contract``,
no ``--fl-*`` option), it adds its options and does nothing else: no session, no markers,
no header, no import of the lane's stack (this module imports the rest of the package
only once a run is active), so a foreign suite's run is what it would be without it.

``--platform`` is a common name (Selenium, Appium and device-farm suites have their own):
the plugin adds it only once the initial conftests are loaded and only where no other
plugin or conftest has (``--fl-platform`` is always there), so a foreign ``--platform``
is never in conflict with it and its value never reaches a lane.  The plugin has two names
- ``fl_contract`` (its entry point) and ``pytest_fl_contract.plugin`` (its module) - and
may be loaded by either, in any combination (``-p``, ``PYTEST_PLUGINS``, a conftest's
``pytest_plugins``, autoload): once one registers it, the other is taken, and pytest takes
it as loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import hooks
from .config.activation import PLUGIN_NAMES, activation, peek, plugin_specs
from .util import FlContractError, xdist_worker

if TYPE_CHECKING:
    from .config.settings import Options, Settings
    from .session import LaneSession, WorkaroundInfo

SESSION = pytest.StashKey["LaneSession"]()

ACTIVE = pytest.StashKey["str | None"]()  # why the plugin is active in this run; None: it is not
INACTIVE = (
    "fl-contract is installed but not active in this run: name a platform (--platform NAME or --fl-platform NAME, "
    "FL_PLATFORM, ini fl_platform) or load it with -p fl_contract"
)
PLATFORM_FLAG = "--platform"

# The contracts' helper modules (tolerances, checks) hold asserts that must be rewritten.
pytest.register_assert_rewrite("pytest_fl_contract.contracts")


def session_of(config: pytest.Config) -> LaneSession:
    session = config.stash.get(SESSION, None)
    if session is None:
        raise FlContractError(INACTIVE)
    return session


def settings_of(config: pytest.Config) -> Settings:
    """The lane's settings, for conftests that parametrize from them."""
    return session_of(config).settings


class _OtherName:
    """What the plugin's other name is registered as once it is loaded under one: no hooks,
    so pytest takes that name as loaded and never imports the module a second time (pluggy
    refuses one object under two names: "Plugin already registered")."""

    def __repr__(self) -> str:
        return "<fl-contract: loaded under its other name>"


def pytest_plugin_registered(plugin: Any, manager: pytest.PytestPluginManager) -> None:
    """Whichever of its names the plugin is loaded under first, its other names are taken
    (``_OtherName``).  (The hook's ``plugin_name`` is pytest 8.1's: the manager says the
    name on every pytest.)"""
    if plugin is not sys.modules[__name__]:
        return
    mine = manager.get_name(plugin)
    for name in PLUGIN_NAMES:
        if name != mine and manager.get_plugin(name) is None and not manager.is_blocked(name):
            manager.register(_OtherName(), name)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


# The plugin's options but ``--platform`` (``_platform_option``): flag, destination, argparse's keywords.
OPTIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "--fl-platform",
        "fl_platform_name",
        dict(
            metavar="NAME|auto",
            help="platform of this lane, also where another plugin or conftest owns --platform "
            "(env FL_PLATFORM, ini fl_platform; default auto)",
        ),
    ),
    (
        "--fl-platforms-file",
        "fl_platforms_files",
        dict(
            action="append",
            default=[],
            metavar="PATH",
            help="extra platform registry file (YAML), merged over the built-in one",
        ),
    ),
    (
        "--fl-emulate",
        "fl_emulate",
        dict(
            action="store_true",
            help="emulate the platform on this CPU: FlagGems on Triton's interpreter with its registry defects injected",
        ),
    ),
    (
        "--fl-profile",
        "fl_profile",
        dict(metavar="NAME", help="device profile for the emulator (default: the platform's)"),
    ),
    (
        "--fl-inject",
        "fl_inject",
        dict(action="append", default=[], metavar="DEFECT", help="inject this defect under the emulator (repeatable)"),
    ),
    (
        "--fl-no-workaround",
        "fl_no_workaround",
        dict(action="store_true", help="never install the masked-reduction workaround"),
    ),
    (
        "--fl-force-workaround",
        "fl_force_workaround",
        dict(action="store_true", help="install the workaround even where the platform lists no defect"),
    ),
    (
        "--fl-workaround",
        "fl_workaround",
        dict(
            metavar="MODULE",
            help="put another workaround implementation (install/uninstall protocol) under the contracts",
        ),
    ),
    (
        "--fl-wrapped-only",
        "fl_wrapped_only",
        dict(
            action="store_true",
            help="run only the ops the workaround wraps, skipping the others with the reason: for an emulated "
            "lane whose twin runs the same defects without the workaround, where the ops it leaves run alike",
        ),
    ),
    (
        "--fl-unreached-sweeps-only",
        "fl_unreached_sweeps_only",
        dict(
            action="store_true",
            help="on an emulated lane with masked_2d_row_load injected, ops whose FlagGems kernels it does not reach "
            "(the source scan) run only the contracts where a kernel the scan missed would show (accuracy, "
            "determinism, tiles, paths); the rest call the same kernels as on the plain CPU lane, which runs them",
        ),
    ),
    (
        "--fl-layout",
        "fl_layout",
        dict(
            default="auto",
            choices=["auto", "wheel", "checkout"],
            help="wheel-only workspace or source checkout (default: auto, by csrc/)",
        ),
    ),
    (
        "--fl-source-root",
        "fl_source_root",
        dict(metavar="DIR", help="source checkout root, where csrc/ would be (default: the directory pytest runs in)"),
    ),
    (
        "--fl-sweep",
        "fl_sweep",
        dict(choices=["quick", "full"], help="contract sweep size (default: quick when emulated, full on hardware)"),
    ),
    (
        "--fl-autotune",
        "fl_autotune",
        dict(
            choices=["rotate", "tuned"],
            help="hardware lanes: FlagGems' autotuned kernels run one config per kernel and key, untimed "
            "(rotate, default), or are tuned as FlagGems ships them (tuned)",
        ),
    ),
    (
        "--fl-order",
        "fl_order",
        dict(
            choices=["collection", "longest-first"],
            default="longest-first",
            help="hardware lanes under xdist: run cases longest first, by the durations the last run "
            "recorded in pytest's cache (default; collection order while there is no record), or in "
            "collection order",
        ),
    ),
    (
        "--fl-devices",
        "fl_devices",
        dict(
            metavar="N|all",
            help="spread the lane's xdist workers over N devices of this host (all: every visible one), each worker's "
            "process pinned to one by the platform's visible-devices variable, round robin (default: 1, no pinning)",
        ),
    ),
    (
        "--fl-junit-prefix",
        "fl_junit_prefix",
        dict(metavar="PREFIX", help="JUnit classname prefix (default: the platform)"),
    ),
)
PLATFORM_OPTION = dict(
    dest="fl_platform",
    metavar="NAME|auto",
    help="platform of this lane (also --fl-platform; env FL_PLATFORM, ini fl_platform; default "
    "auto); left to another plugin or conftest that has its own --platform",
)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("fl_contract", "FlagGems contract suite")
    for flag, dest, keywords in OPTIONS:
        group.addoption(flag, dest=dest, **keywords)
    parser.addini("fl_platform", "default platform for this project (overridden by FL_PLATFORM and --platform)")
    for _, dest, _ in OPTIONS:  # every option has its ini equivalent, named as its destination
        if dest in INI_TYPES:
            parser.addini(dest, f"ini for --{dest.replace('_', '-')} (the command line wins)", type=INI_TYPES[dest])  # type: ignore[arg-type]
    if _loading_conftests(pluginmanager):  # a conftest's pytest_plugins loads it: its --platform now, or never
        _platform_option(parser)


def _loading_conftests(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether conftests are being loaded (one is registered): the plugin came from a
    conftest's ``pytest_plugins``, after the moment ``pytest_load_initial_conftests`` adds
    ``--platform`` for a plugin loaded before them."""
    return any(
        isinstance(p, types.ModuleType) and (getattr(p, "__file__", None) or "").endswith("conftest.py")
        for p in pluginmanager.get_plugins()
    )


def _claimed(parser: pytest.Parser, flag: str) -> bool:
    """Whether some option pytest knows now takes ``flag`` (pytest's public parse, on a
    throwaway namespace): one that needs a value makes the probe a usage error."""
    try:
        _, unknown = parser.parse_known_and_unknown_args([flag], namespace=argparse.Namespace())
    except (pytest.UsageError, SystemExit, argparse.ArgumentError):
        return True
    return flag not in unknown


def _platform_option(parser: pytest.Parser) -> bool:
    """Add ``--platform`` unless another plugin or conftest has it; whether it is ours."""
    if _claimed(parser, PLATFORM_FLAG):
        return False
    parser.getgroup("fl_contract").addoption(PLATFORM_FLAG, **PLATFORM_OPTION)
    return True


# The ini type of each option's equivalent (pytest's: "bool", "linelist", "string").
INI_TYPES: dict[str, Any] = {
    "fl_platforms_files": "linelist",
    "fl_emulate": "bool",
    "fl_profile": "string",
    "fl_inject": "linelist",
    "fl_no_workaround": "bool",
    "fl_force_workaround": "bool",
    "fl_workaround": "string",
    "fl_wrapped_only": "bool",
    "fl_unreached_sweeps_only": "bool",
    "fl_layout": "string",
    "fl_source_root": "string",
    "fl_sweep": "string",
    "fl_autotune": "string",
    "fl_order": "string",
    "fl_junit_prefix": "string",
    "fl_devices": "string",
}
_DEFAULTS = {
    dest: keywords.get("default", False if keywords.get("action") == "store_true" else None)
    for _, dest, keywords in OPTIONS
}


def _with_ini(config: pytest.Config, namespace: Any) -> list[str]:
    """Where the command line left an option at its default, its ini value (``fl_sweep =
    full`` in a vendor's pytest.ini) becomes the option's; returns the ini names applied.
    A value outside the option's choices is one usage line."""
    applied = []
    for dest, (default, flag, choices) in _fl_options().items():
        if dest not in INI_TYPES or getattr(namespace, dest, default) != default:
            continue
        value = config.getini(dest)
        if value in ("", [], False, None):
            continue
        if choices and value not in choices:
            raise pytest.UsageError(f"ini {dest} = {value!r}: expected one of {', '.join(choices)} (as {flag})")
        if dest == "fl_source_root" and config.inipath is not None:
            value = str((config.inipath.parent / value).resolve())
        setattr(namespace, dest, value)
        applied.append(f"ini {dest}")
    return applied


def _platform(namespace: Any, peeked: str | None) -> str | None:
    """The platform the command line names: ``--fl-platform``, else ``--platform`` (ours, or
    seen in the arguments before it is added: ``peeked``)."""
    named = getattr(namespace, "fl_platform_name", None)
    return named if named is not None else getattr(namespace, "fl_platform", None) or peeked


def _options(config: pytest.Config, namespace: Any, peeked: str | None = None) -> Options:
    from .config.settings import Options

    root = namespace.fl_source_root or str(config.invocation_params.dir)
    return Options(
        platform=_platform(namespace, peeked),
        ini_platform=config.getini("fl_platform") or None,
        emulate=namespace.fl_emulate,
        profile=namespace.fl_profile,
        inject=tuple(namespace.fl_inject),
        no_workaround=namespace.fl_no_workaround,
        force_workaround=namespace.fl_force_workaround,
        workaround=namespace.fl_workaround,
        wrapped_only=namespace.fl_wrapped_only,
        unreached_sweeps_only=namespace.fl_unreached_sweeps_only,
        layout=namespace.fl_layout,
        source_root=Path(root).resolve(),
        sweep=namespace.fl_sweep,
        junit_prefix=namespace.fl_junit_prefix,
        autotune=namespace.fl_autotune,
        devices=namespace.fl_devices,
    )


def _active(config: pytest.Config, namespace: Any) -> str | None:
    """Why this run asked for the plugin, or None; decided once the options are final
    (an option's ini equivalent counts as giving it)."""
    from_ini = _with_ini(config, namespace)
    given = [
        flag
        for dest, (default, flag, _) in _fl_options().items()
        if getattr(namespace, dest, default) != default and f"ini {dest}" not in from_ini
    ] + from_ini
    ini = config.getini("fl_platform") or None
    return activation(_asked_by_name(config, namespace), given, os.environ, ini)


def _asked_by_name(config: pytest.Config, namespace: Any) -> list[str]:
    """Every way the run named the plugin: ``-p``, ``PYTEST_PLUGINS``, a conftest's (or another
    plugin's) ``pytest_plugins``, and its module name as what pytest registered it under
    (autoload registers it as ``fl_contract`` alone)."""
    names = [*(getattr(namespace, "plugins", None) or []), *plugin_specs(os.environ.get("PYTEST_PLUGINS"))]
    me = sys.modules[__name__]
    for name, plugin in config.pluginmanager.list_name_plugin():
        if plugin is me and name != "fl_contract":
            names.append(name)
        if isinstance(plugin, types.ModuleType) and plugin is not me:
            names += plugin_specs(getattr(plugin, "pytest_plugins", None))
    return names


def _fl_options() -> dict[str, tuple[Any, str, tuple[str, ...]]]:
    """The plugin's options: destination -> (default, flag, choices), ``--platform`` first."""
    found: dict[str, tuple[Any, str, tuple[str, ...]]] = {"fl_platform": (None, PLATFORM_FLAG, ())}
    for flag, dest, keywords in OPTIONS:
        found[dest] = (_DEFAULTS[dest], flag, tuple(keywords.get("choices") or ()))
    return found


def _session(config: pytest.Config, namespace: Any, peeked: str | None = None) -> LaneSession | None:
    """Resolve once and bring the session up before anything imports triton; None when
    the run did not ask for the plugin.  ``peeked``: ``--platform``'s value, read before the
    option is added (``pytest_load_initial_conftests``)."""
    if getattr(namespace, "help", False) or getattr(namespace, "version", False):
        return None  # --help and --version answer without a lane (a lane's bad input stays out of them)
    why = config.stash.get(ACTIVE, None) or _active(config, namespace)
    config.stash[ACTIVE] = why
    if why is None:
        return None
    if SESSION not in config.stash:
        from .config.platforms import load_registry
        from .config.settings import resolve
        from .session import LaneSession

        try:
            settings = resolve(_options(config, namespace, peeked), load_registry(namespace.fl_platforms_files))
            session = LaneSession(config, settings)
            config.stash[SESSION] = session
            config.stash[PEEKED] = peeked is not None and getattr(namespace, "fl_platform_name", None) is None
            session.start()
        except FlContractError as exc:
            raise pytest.UsageError(str(exc)) from None
    return config.stash[SESSION]


PEEKED = pytest.StashKey[bool]()  # the session's platform came from --platform before the option was ours


@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Any:
    """Before the conftests: a run that asked for the plugin (``-p``, ``--fl-*``, FL_PLATFORM,
    ini) gets its session now, before a conftest can import triton, ``--platform`` read from
    the arguments (not yet an option).  After them: ``--platform`` becomes ours where no
    conftest took it; where one did, a session that took its value is refused in one line."""
    namespace = early_config.known_args_namespace
    peeked = None
    if not _claimed(parser, PLATFORM_FLAG):  # nobody's yet: its value may be ours
        peeked = peek(list(args), PLATFORM_FLAG)
    named = getattr(namespace, "fl_platform_name", None)
    deferred = None
    try:
        _session(early_config, namespace, peeked)
    except pytest.UsageError as exc:  # said once we know whose --platform this is
        if peeked is None or named is not None:
            raise
        deferred = exc
    outcome = yield
    problem = _platform_problem(
        _platform_option(parser), early_config.stash.get(PEEKED, False), deferred, named, peeked
    )
    if problem is not None and outcome.excinfo is None:
        outcome.force_exception(problem)  # an old-style wrapper may not raise (pluggy warns); pluggy >= 1.1


def _platform_problem(
    ours: bool, took: bool, deferred: pytest.UsageError | None, named: str | None, peeked: str | None
) -> pytest.UsageError | None:
    """What is wrong with the platform the command line named, once ``--platform``'s owner is
    known (``ours``): fl-contract took another's value (``took``, or failed on it:
    ``deferred``), or ``--fl-platform`` and ``--platform`` disagree."""
    if not ours:
        if deferred is None and not took:
            return None
        return pytest.UsageError(
            f"--platform {peeked!r} is another plugin's or conftest's option in this run, and fl-contract took it for "
            "its platform: name fl-contract's platform with --fl-platform NAME (or FL_PLATFORM, ini fl_platform)"
        )
    if deferred is not None:
        return deferred
    if named is not None and peeked is not None and named != peeked:
        return pytest.UsageError(f"--fl-platform {named!r} and --platform {peeked!r} name different platforms")
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    session = _session(config, config.option)
    if session is None:
        return
    from . import markers

    for line in markers.MARKERS.values():
        config.addinivalue_line("markers", line)
    if not config.pluginmanager.is_registered(session):
        config.pluginmanager.register(session, "fl_contract_session")
    if session.settings.pins_devices() and xdist_worker(config) is None:
        from .hardware.spread import pin_workers

        try:  # before xdist's NodeManager reads --tx (its session start)
            session.devices = pin_workers(config.option, session.settings, os.environ)
        except FlContractError as exc:
            raise pytest.UsageError(str(exc)) from None
    if not config.pluginmanager.has_plugin("fl_contract_attempts"):
        from .reporting.attempts import Attempts

        config.pluginmanager.register(Attempts(), "fl_contract_attempts")
    if config.option.junitprefix is None:
        config.option.junitprefix = session.settings.junit_prefix or session.settings.platform.name
    if session.settings.emulation is None:
        for name, plugin in _hardware_plugins(config, session):
            if not config.pluginmanager.has_plugin(name):
                config.pluginmanager.register(plugin(), name)
    else:  # the hardware lanes' Schedule does it there
        from .hardware.schedule import share_cpus

        share_cpus(config)


def _hardware_plugins(config: pytest.Config, session: LaneSession) -> list[tuple[str, Any]]:
    """What a hardware lane adds: the device watch always; under xdist the schedule (every
    process) and the memory ledger (workers, which share it by the run's id; the controller
    removes it at the end)."""
    from .hardware.devicehealth import DeviceWatch
    from .hardware.ledger import LedgerOwner, LedgerPlugin
    from .hardware.schedule import Schedule

    s = session.settings
    workerinput = xdist_worker(config)
    xdist = workerinput is not None or bool(getattr(config.option, "numprocesses", None))
    plugins: list[tuple[str, Any]] = [("fl_contract_device_watch", lambda: DeviceWatch(s.platform))]
    if xdist:
        plugins.append(("fl_contract_schedule", lambda: Schedule(config, f"{config.option.junitprefix}/{s.sweep}")))
    if workerinput is not None:
        from .config.devices import worker_device

        runid = str(workerinput.get("testrunuid", os.getppid()))
        pinned = worker_device(os.environ, s.devices_var) if s.pins_devices() else None
        plugins.append(
            (
                "fl_contract_ledger",
                lambda: LedgerPlugin(runid, s.platform.device_type, session.pick_device, pinned.id if pinned else ""),
            )
        )
    elif xdist:
        plugins.append(("fl_contract_ledger_owner", LedgerOwner))
    return plugins


@pytest.hookimpl(trylast=True, specname="pytest_configure")
def pytest_configure_junit_properties(config: pytest.Config) -> None:
    """After junitxml made its LogXML: its stash survives xdist, record_testsuite_property does not."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    session = config.stash.get(SESSION, None)
    if xml is not None and session is not None:
        for name, value in session.properties():
            xml.add_global_property(name, value)


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fl_settings(request: pytest.FixtureRequest) -> Settings:
    """The lane's resolved settings: platform, layout, emulation, workaround, sweep."""
    return _lane(request).settings


def _lane(request: pytest.FixtureRequest) -> LaneSession:
    try:
        return session_of(request.config)
    except FlContractError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def fl_device(fl_settings: Settings) -> str:
    """The torch device contracts allocate on ("cpu" under the emulator)."""
    from .hardware.device import device_of

    return device_of(fl_settings)


@pytest.fixture(scope="session")
def flag_gems(request: pytest.FixtureRequest) -> Any:
    """flag_gems itself, imported after the emulator, with the lane's workaround installed
    (the session installs it whenever flag_gems is first imported, by anyone)."""
    session = _lane(request)
    try:
        return session.import_flag_gems()
    except FlContractError as exc:  # the run stops after this case (LaneSession.stop_run), xdist or not
        problem = str(exc)
    session.stop_run(problem)
    pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def fl_workaround(request: pytest.FixtureRequest, flag_gems: Any) -> WorkaroundInfo | None:
    """What the lane's workaround wrapped (None where the lane runs without one)."""
    return _lane(request).workaround


@pytest.fixture
def fl_poison(fl_device: str) -> Iterator[Any]:
    """``fl_poison(fill)``: allocate, fill and free device memory so stale reads change.
    Under the emulator its heap goes back to the default pattern afterwards, so what one
    test poisoned never decides another test's outcome."""
    from .hardware.device import poison_device_memory

    yield lambda fill: poison_device_memory(fl_device, fill)
    from .emulation import device

    device.poison(None)
