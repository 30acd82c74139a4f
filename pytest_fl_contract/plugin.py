"""pytest plugin ``fl_contract``: hooks and fixtures only; the logic lives beside it.

Loading this module imports neither torch nor triton nor flag_gems.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import markers, report
from .errors import FlContractError
from .platforms import load_registry
from .settings import Options, Settings, resolve, versions

SETTINGS = pytest.StashKey[Settings]()
COUNTERS = pytest.StashKey[Counter]()
COVERED = pytest.StashKey[frozenset]()
INSTALLED = pytest.StashKey[str]()  # "MODULE from wheel|checkout (path): N entry points"


def settings_of(config: pytest.Config) -> Settings:
    """The lane's settings, for conftests that parametrize from them."""
    return config.stash[SETTINGS]


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
        "--fl-layout",
        dest="fl_layout",
        default="auto",
        choices=["auto", "wheel", "checkout"],
        help="wheel-only workspace or source checkout (default: auto, by csrc/)",
    )
    group.addoption(
        "--fl-source-root", dest="fl_source_root", metavar="DIR", help="source checkout root (default: rootdir)"
    )
    group.addoption(
        "--fl-sweep",
        dest="fl_sweep",
        choices=["quick", "full"],
        help="contract sweep size (default: quick when emulated, full on hardware)",
    )
    group.addoption(
        "--fl-mutant",
        dest="fl_mutant",
        metavar="NAME",
        help="apply a defect mutant (fl-contract mutants --list) to prove the contracts catch it",
    )
    group.addoption(
        "--fl-junit-prefix",
        dest="fl_junit_prefix",
        metavar="PREFIX",
        help="JUnit classname prefix (default: the platform)",
    )
    parser.addini("fl_platform", "default platform for this project (overridden by FL_PLATFORM and --platform)")


def _options(config: pytest.Config, namespace: Any) -> Options:
    root = namespace.fl_source_root or str(config.rootpath)
    return Options(
        platform=namespace.fl_platform,
        ini_platform=config.getini("fl_platform") or None,
        emulate=namespace.fl_emulate,
        profile=namespace.fl_profile,
        inject=tuple(namespace.fl_inject),
        no_workaround=namespace.fl_no_workaround,
        force_workaround=namespace.fl_force_workaround,
        workaround=namespace.fl_workaround,
        layout=namespace.fl_layout,
        source_root=Path(root).resolve(),
        sweep=namespace.fl_sweep,
        junit_prefix=namespace.fl_junit_prefix,
    )


def _settle(config: pytest.Config, namespace: Any) -> Settings:
    """Resolve once and, when asked, bring up the emulator before anything imports triton."""
    if SETTINGS in config.stash:
        return config.stash[SETTINGS]
    try:
        settings = resolve(_options(config, namespace), load_registry(namespace.fl_platforms_files))
        if settings.emulation is not None:
            from .emulation import defects, interpreter
            from .emulation.profiles import get_profile

            interpreter.activate(get_profile(settings.emulation.profile))
            if settings.emulation.defects:
                defects.enable(*settings.emulation.defects)
        if namespace.fl_mutant:
            from .mutants import get

            get(namespace.fl_mutant)
    except FlContractError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SETTINGS] = settings
    return settings


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    _settle(early_config, early_config.known_args_namespace)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for line in markers.MARKERS.values():
        config.addinivalue_line("markers", line)
    settings = _settle(config, config.option)
    if config.option.junitprefix is None:
        config.option.junitprefix = settings.junit_prefix or settings.platform.name
    config.stash[COUNTERS] = Counter()


@pytest.hookimpl(trylast=True, specname="pytest_configure")
def pytest_configure_junit_properties(config: pytest.Config) -> None:
    """After junitxml made its LogXML: its stash survives xdist, record_testsuite_property does not."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is not None:
        for name, value in report.properties(config.stash[SETTINGS], versions()):
            xml.add_global_property(name, value)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from .runtime import device_name

    settings = config.stash[SETTINGS]
    return report.header_lines(settings, versions(), device_name(settings))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[Any]:
    """Wrong marker arguments fail the collection of their module, with one clear line."""
    rep = yield
    if rep.passed and SETTINGS in collector.config.stash:
        registry = collector.config.stash[SETTINGS].registry
        for node in rep.result:
            if isinstance(node, pytest.Item):
                try:
                    markers.validate(node.iter_markers(), registry)
                except markers.MarkerError as exc:
                    rep.outcome, rep.longrepr, rep.result = "failed", f"{node.nodeid}: {exc}", []
                    break
    return rep


def _covered(config: pytest.Config) -> frozenset[str]:
    """Defects the lane's workaround covers: its module's COVERS, read once, lazily."""
    if COVERED not in config.stash:
        settings = config.stash[SETTINGS]
        covered: frozenset[str] = frozenset()
        if settings.workaround is not None:
            from .layout import resolve_module

            try:
                module = resolve_module(settings.workaround, settings.layout.source_root).module
            except FlContractError as exc:
                pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
            default = [d.id for d in settings.platform.defects if d.workaround]
            covered = frozenset(getattr(module, "COVERS", default)) & {d.id for d in settings.platform.defects}
        config.stash[COVERED] = covered
    return config.stash[COVERED]


def _context(item: pytest.Item) -> markers.Context:
    settings = item.config.stash[SETTINGS]
    return markers.Context(settings.platform, settings.layout.kind, settings.layout.source_root, _covered(item.config))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    ctx = _context(item)
    skip = markers.evaluate_skip(item.iter_markers(), ctx)
    if skip is not None:
        pytest.skip(skip.reason)
    xfail = markers.evaluate_xfail(item.iter_markers(), ctx)
    if xfail is not None:
        item.add_marker(pytest.mark.xfail(reason=xfail.reason, strict=xfail.strict))


def pytest_sessionfinish(session: pytest.Session) -> None:
    from .emulation import defects

    local = defects.STATE.counters.as_dict() if defects.STATE.installed else {}
    session.config.stash.get(COUNTERS, Counter()).update(local)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fl_contract_counters"] = local
        if INSTALLED in session.config.stash:
            workeroutput["fl_contract_installed"] = session.config.stash[INSTALLED]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", {})
    node.config.stash.get(COUNTERS, Counter()).update(output.get("fl_contract_counters", {}))
    if "fl_contract_installed" in output:
        node.config.stash[INSTALLED] = output["fl_contract_installed"]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = report.summary_lines(terminalreporter.stats, config.stash.get(COUNTERS, {}))
    if INSTALLED in config.stash:
        lines.append(f"workaround: {config.stash[INSTALLED]}")
    if lines:
        terminalreporter.section("fl-contract summary")
        for line in lines:
            terminalreporter.write_line(line)


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fl_settings(request: pytest.FixtureRequest) -> Settings:
    """The lane's resolved settings: platform, layout, emulation, workaround, sweep."""
    return request.config.stash[SETTINGS]


@pytest.fixture(scope="session")
def fl_device(fl_settings: Settings) -> str:
    """The torch device contracts allocate on ("cpu" under the emulator)."""
    from .runtime import device_of

    return device_of(fl_settings)


@pytest.fixture(scope="session")
def fl_workaround(request: pytest.FixtureRequest, fl_settings: Settings) -> Iterator[Any]:
    """Installs the workaround (when the lane wants it) before any contract dispatches."""
    from .runtime import install_workaround

    try:
        info = install_workaround(fl_settings)
    except FlContractError as exc:
        pytest.fail(str(exc), pytrace=False)
    if info is not None:
        request.config.stash[INSTALLED] = (
            f"{info.module} from the {info.origin} ({info.path}): {len(info.entries)} entry points wrapped"
        )
    yield info


@pytest.fixture(scope="session")
def flag_gems(request: pytest.FixtureRequest, fl_workaround: Any) -> Any:
    """flag_gems itself, imported after the emulator and the workaround are in place
    (and, under --fl-mutant, with the mutant applied)."""
    from .runtime import import_flag_gems

    try:
        module = import_flag_gems()
    except FlContractError as exc:
        pytest.fail(str(exc), pytrace=False)
    name = request.config.getoption("fl_mutant")
    if name:
        from .mutants import get

        apply = get(name).apply
        if apply is not None:
            apply()
    return module


@pytest.fixture
def fl_poison(fl_device: str) -> Any:
    """``fl_poison(fill)``: allocate, fill and free device memory so stale reads change."""
    from .runtime import poison_device_memory

    return lambda fill: poison_device_memory(fl_device, fill)
