"""pytest plugin ``fl_contract``: options, the lane session's creation, and fixtures.

Like pytest-xdist's ``plugin.py`` this module only wires: the lane's state and its hooks
live in ``session.LaneSession``.  Loading it imports neither torch nor triton nor flag_gems.

Installed but not asked for (``activation``: no platform named, no ``-p fl_contract``,
no ``--fl-*`` option), it adds its options and does nothing else: no session, no markers,
no header, no import of the lane's stack (this module imports the rest of the package
only once a run is active), so a foreign suite's run is what it would be without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import hooks
from .config.activation import activation
from .util import FlContractError, xdist_worker

if TYPE_CHECKING:
    from .config.settings import Options, Settings
    from .session import LaneSession, WorkaroundInfo

SESSION = pytest.StashKey["LaneSession"]()

ACTIVE = pytest.StashKey["str | None"]()  # why the plugin is active in this run; None: it is not
INACTIVE = (
    "fl-contract is installed but not active in this run: name a platform (--platform NAME, FL_PLATFORM, "
    "ini fl_platform) or load it with -p fl_contract"
)

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


def pytest_plugin_registered(plugin: Any, manager: pytest.PytestPluginManager) -> None:
    """``-p pytest_fl_contract.plugin`` registers this module under its module name before the
    entry point would register it again as ``fl_contract`` (pluggy refuses one object under
    two names): the entry point's name is then taken as loaded.  (The hook's ``plugin_name``
    is pytest 8.1's: the manager says the name on every pytest.)"""
    if plugin is sys.modules[__name__] and manager.get_name(plugin) != "fl_contract" and \
            not manager.is_blocked("fl_contract"):
        manager.set_blocked("fl_contract")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fl_contract", "FlagGems contract suite")
    group.addoption(
        "--platform",
        dest="fl_platform",
        metavar="NAME|auto",
        help="platform of this lane (env FL_PLATFORM, ini fl_platform; default auto)",
    )
    group.addoption(
        "--fl-platforms-file",
        dest="fl_platforms_files",
        action="append",
        default=[],
        metavar="PATH",
        help="extra platform registry file (YAML), merged over the built-in one",
    )
    group.addoption(
        "--fl-emulate",
        dest="fl_emulate",
        action="store_true",
        help="emulate the platform on this CPU: FlagGems on Triton's interpreter with its registry defects injected",
    )
    group.addoption(
        "--fl-profile",
        dest="fl_profile",
        metavar="NAME",
        help="device profile for the emulator (default: the platform's)",
    )
    group.addoption(
        "--fl-inject",
        dest="fl_inject",
        action="append",
        default=[],
        metavar="DEFECT",
        help="inject this defect under the emulator (repeatable)",
    )
    group.addoption(
        "--fl-no-workaround",
        dest="fl_no_workaround",
        action="store_true",
        help="never install the masked-reduction workaround",
    )
    group.addoption(
        "--fl-force-workaround",
        dest="fl_force_workaround",
        action="store_true",
        help="install the workaround even where the platform lists no defect",
    )
    group.addoption(
        "--fl-workaround",
        dest="fl_workaround",
        metavar="MODULE",
        help="put another workaround implementation (install/uninstall protocol) under the contracts",
    )
    group.addoption(
        "--fl-wrapped-only",
        dest="fl_wrapped_only",
        action="store_true",
        help="run only the ops the workaround wraps, skipping the others with the reason: for an emulated "
        "lane whose twin runs the same defects without the workaround, where the ops it leaves run alike",
    )
    group.addoption(
        "--fl-unreached-sweeps-only",
        dest="fl_unreached_sweeps_only",
        action="store_true",
        help="on an emulated lane with masked_2d_row_load injected, ops whose FlagGems kernels it does not reach "
        "(the source scan) run only the contracts where a kernel the scan missed would show (accuracy, "
        "determinism, tiles, paths); the rest call the same kernels as on the plain CPU lane, which runs them",
    )
    group.addoption(
        "--fl-layout",
        dest="fl_layout",
        default="auto",
        choices=["auto", "wheel", "checkout"],
        help="wheel-only workspace or source checkout (default: auto, by csrc/)",
    )
    group.addoption(
        "--fl-source-root", dest="fl_source_root", metavar="DIR", help="source checkout root, where csrc/ would be (default: the directory pytest runs in)"
    )
    group.addoption(
        "--fl-sweep",
        dest="fl_sweep",
        choices=["quick", "full"],
        help="contract sweep size (default: quick when emulated, full on hardware)",
    )
    group.addoption(
        "--fl-autotune",
        dest="fl_autotune",
        choices=["rotate", "tuned"],
        help="hardware lanes: FlagGems' autotuned kernels run one config per kernel and key, untimed "
        "(rotate, default), or are tuned as FlagGems ships them (tuned)",
    )
    group.addoption(
        "--fl-order",
        dest="fl_order",
        choices=["collection", "longest-first"],
        default="longest-first",
        help="hardware lanes under xdist: run cases longest first, by the durations the last run "
        "recorded in pytest's cache (default; collection order while there is no record), or in "
        "collection order",
    )
    group.addoption(
        "--fl-junit-prefix",
        dest="fl_junit_prefix",
        metavar="PREFIX",
        help="JUnit classname prefix (default: the platform)",
    )
    parser.addini("fl_platform", "default platform for this project (overridden by FL_PLATFORM and --platform)")
    for option in group.options:  # every option has its ini equivalent, named as its destination
        if option.dest in INI_TYPES:
            parser.addini(option.dest, f"ini for {option.names()[0]} (the command line wins)",
                          type=INI_TYPES[option.dest])  # type: ignore[arg-type]


# The ini type of each option's equivalent (pytest's: "bool", "linelist", "string").
INI_TYPES: dict[str, Any] = {
    "fl_platforms_files": "linelist", "fl_emulate": "bool", "fl_profile": "string", "fl_inject": "linelist",
    "fl_no_workaround": "bool", "fl_force_workaround": "bool", "fl_workaround": "string", "fl_wrapped_only": "bool",
    "fl_unreached_sweeps_only": "bool", "fl_layout": "string",
    "fl_source_root": "string", "fl_sweep": "string", "fl_autotune": "string", "fl_order": "string",
    "fl_junit_prefix": "string",
}


def _with_ini(config: pytest.Config, namespace: Any) -> list[str]:
    """Where the command line left an option at its default, its ini value (``fl_sweep =
    full`` in a vendor's pytest.ini) becomes the option's; returns the ini names applied.
    A value outside the option's choices is one usage line."""
    applied = []
    for dest, (default, flag, choices) in _fl_options(config).items():
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


def _options(config: pytest.Config, namespace: Any) -> Options:
    from .config.settings import Options

    root = namespace.fl_source_root or str(config.invocation_params.dir)
    return Options(
        platform=namespace.fl_platform,
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
    )


def _active(config: pytest.Config, namespace: Any) -> str | None:
    """Why this run asked for the plugin, or None; decided once the options are final
    (an option's ini equivalent counts as giving it)."""
    from_ini = _with_ini(config, namespace)
    given = [flag for dest, (default, flag, _) in _fl_options(config).items()
             if getattr(namespace, dest, default) != default and f"ini {dest}" not in from_ini] + from_ini
    plugins = [*(getattr(namespace, "plugins", None) or []), *os.environ.get("PYTEST_PLUGINS", "").split(",")]
    ini = config.getini("fl_platform") or None
    return activation(plugins, given, os.environ, ini)


def _fl_options(config: pytest.Config) -> dict[str, tuple[Any, str, tuple[str, ...]]]:
    """The plugin's options: destination -> (default, flag, choices), ``--platform`` first."""
    group = config._parser.getgroup("fl_contract")
    found = {}
    for option in group.options:  # attrs(): pytest 7's Argument has no .default
        attrs = option.attrs()
        default = attrs.get("default", False if attrs.get("action") == "store_true" else None)
        found[option.dest] = (default, option.names()[0], tuple(attrs.get("choices") or ()))
    return found


def _session(config: pytest.Config, namespace: Any) -> LaneSession | None:
    """Resolve once and bring the session up before anything imports triton; None when
    the run did not ask for the plugin."""
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
            settings = resolve(_options(config, namespace), load_registry(namespace.fl_platforms_files))
            session = LaneSession(config, settings)
            config.stash[SESSION] = session
            session.start()
        except FlContractError as exc:
            raise pytest.UsageError(str(exc)) from None
    return config.stash[SESSION]


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    _session(early_config, early_config.known_args_namespace)


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
        runid = str(workerinput.get("testrunuid", os.getppid()))
        plugins.append(("fl_contract_ledger", lambda: LedgerPlugin(runid, s.platform.device_type, session.pick_device)))
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
