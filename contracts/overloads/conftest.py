"""Parametrization of the overload suite from the installed FlagGems' registration table: one
case per (overload, sample, dtype, transform) whose sample reaches it, one UNTESTED item per
entry with no case, so every registered overload has at least one item; and each case's known
FlagGems defects (``overloads.defects``).  The cases of overloads a vendor backend overrides
also parametrize ``override_case`` (the differential against the generic kernel)."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_fl_contract.contracts.marking import own_items

from pytest_fl_contract.config.platforms import DTYPE_CAPABILITY
from pytest_fl_contract.families.dispatch import defect_of_function
from pytest_fl_contract.hardware.device import device_of
from pytest_fl_contract.overloads import defects
from pytest_fl_contract.overloads.cases import Case, Plan, plan
from pytest_fl_contract.overloads.contract import ELSEWHERE, budget
from pytest_fl_contract.overloads.table import read, summary
from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.schema import flag_gems_version
from pytest_fl_contract.session import tag_case

_PLANS = pytest.StashKey["tuple[str, list[Plan]]"]()


class Untested:
    """An entry of the table with no case, and why."""

    def __init__(self, plan: Plan) -> None:
        self.overload = plan.overload.name
        self.reason = plan.untested

    def __repr__(self) -> str:
        return f"Untested({self.overload!r})"


def _outer(settings: Any) -> frozenset[str] | None:
    """Where the transforms go to a sample along an outer dim: everywhere on hardware; under
    the emulator, in the modules whose kernels the masked-row scan says a row-mask defect
    reaches (the interpreter runs some outer-dim calls for minutes: sort 100 s)."""
    if settings.emulation is None:
        return None
    from pytest_fl_contract.registry import coverage

    root = coverage.flag_gems_root()
    return frozenset(r.module for r in coverage.scan(root)) if root is not None else frozenset()


def plans(config: pytest.Config) -> tuple[str, list[Plan]]:
    """The table's summary line and each entry's plan, once per process (collection probes
    every overload with a spy: no kernel runs)."""
    if _PLANS not in config.stash:
        import flag_gems

        entries = read(flag_gems)
        settings = settings_of(config)
        config.stash[_PLANS] = (
            summary(entries),
            plan(flag_gems, entries, settings.sweep, device=device_of(settings), outer=_outer(settings)),
        )
    return config.stash[_PLANS]


def _param(case: Case) -> Any:
    cap = DTYPE_CAPABILITY.get(case.dtype)
    return pytest.param(case, id=case.id, marks=[pytest.mark.requires_capability(cap)] if cap else [])


def _overload_cases(metafunc: pytest.Metafunc) -> None:
    try:
        _, found = plans(metafunc.config)
    except ImportError as exc:  # no FlagGems: one failing item says so (a run of nothing is not green)
        metafunc.parametrize("overload_case", [pytest.param(str(exc), id="flag_gems-unavailable")])
        return
    params = []
    for p in found:
        params += (
            [_param(c) for c in p.cases] if p.cases else [pytest.param(Untested(p), id=f"{p.overload.name}-untested")]
        )
    metafunc.parametrize("overload_case", params)


class NoOverride:
    """The lane has no vendor override to compare: why (its backend did not load: a finding)."""

    def __init__(self, reason: str, failed_to_load: bool) -> None:
        self.reason, self.failed_to_load = reason, failed_to_load

    def __repr__(self) -> str:
        return f"NoOverride({self.reason!r})"


def overridden(config: pytest.Config) -> tuple[list[tuple[Case, Any, Any]], NoOverride | None]:
    """Each case of an overload whose registered function is a vendor override, with the
    override and the generic function of its name; or why there is none."""
    import flag_gems

    from pytest_fl_contract.overloads.table import function_of
    from pytest_fl_contract.registry import overrides

    failure = overrides.load_failure(flag_gems)
    if failure:
        return [], NoOverride(failure, True)
    pairs = {id(vendor): (vendor, generic) for vendor, generic in overrides.registered(flag_gems).values()}
    entries = tuple(
        p.overload
        for p in plans(config)[1]
        if p.overload.registered and id(function_of(flag_gems, p.overload.name)[0]) in pairs
    )
    found = []
    # the full sweep whatever the lane's: a vendor's copy drifts where the generic kernel's
    # machinery did the work - broadcasting, strides, expanded and empty inputs (5.0.2's Hopper
    # mul ran a flat kernel over its first operand) - and the overrides are few
    for p in plan(flag_gems, entries, "full", device=device_of(settings_of(config))):
        pair = pairs[id(function_of(flag_gems, p.overload.name)[0])]
        found += [(c, *pair) for c in p.cases]
    if not found:
        vendor = getattr(flag_gems, "vendor_name", "?")
        return [], NoOverride(
            f"FlagGems registers no override of a generic kernel with a case here (vendor {vendor})", False
        )
    return found, None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "override_case" in metafunc.fixturenames:
        try:
            found, none = overridden(metafunc.config)
        except ImportError as exc:
            metafunc.parametrize("override_case", [pytest.param(str(exc), id="flag_gems-unavailable")])
            return
        params = [pytest.param(f, id=f[0].id, marks=_param(f[0]).marks) for f in found]
        metafunc.parametrize("override_case", params or [pytest.param(none, id="no-override")])
    if "overload_case" in metafunc.fixturenames:
        _overload_cases(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The registration table's names into the JUnit report, from the process that writes it
    (before junitxml writes it; a run cut short by its time limit gets here too): the
    scoreboard's denominator is then FlagGems' table, and what the run did not reach is
    UNTESTED, not absent (an H100 lane stopped at 150 s counted 589 of 5.4's 721)."""
    import json

    from _pytest.junitxml import xml_key

    from pytest_fl_contract.results.scoreboard import REGISTERED

    xml = session.config.stash.get(xml_key, None)
    if xml is None or hasattr(session.config, "workerinput"):
        return
    try:
        import flag_gems

        names = sorted({entry.name for entry in read(flag_gems)})
    except Exception:  # no FlagGems, or no table: its failing item says why
        return
    xml.add_global_property(REGISTERED, json.dumps(names))


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        line, found = plans(config)
        pairs, none = overridden(config)
    except Exception:
        return []
    tested = sum(1 for p in found if p.cases)
    names = sorted({c.overload for c, _, _ in pairs})
    return [
        f"fl-contract overloads: {line}; {tested} with cases, {len(found) - tested} UNTESTED "
        f"({settings_of(config).sweep} sweep)",
        f"fl-contract vendor overrides: {none.reason if none else ', '.join(names) + ' against the generic kernels'}",
    ]


def _reached_modules() -> frozenset[str] | None:
    """The FlagGems modules the masked-row defect reaches (the source scan), None without a source."""
    from pytest_fl_contract.registry import coverage

    root = coverage.flag_gems_root()
    return frozenset(r.module for r in coverage.scan(root)) if root is not None else None


def _registered_defect(settings: Any, overload: str) -> Any:
    """The known defect (``trigger: registered_function``) of the function registered for
    ``overload`` in this process, or None."""
    import flag_gems

    from pytest_fl_contract.overloads.table import function_of

    try:
        fn = function_of(flag_gems, overload)[0]
    except KeyError:
        return None
    return defect_of_function(settings.platform.defects, fn)


def _faults(settings: Any, defect_id: str) -> bool:
    """The registry says the defect reads or writes memory its call does not own."""
    entry = settings.platform.defect(defect_id)
    return entry is not None and bool(entry.faults)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mine = own_items(items, __file__)
    if not mine:
        return
    version = flag_gems_version()
    settings = settings_of(mine[0].config)
    elsewhere = settings.wrapped_only or settings.unreached_sweeps_only
    modules = {p.overload.name: p.overload.module for p in plans(mine[0].config)[1]} if elsewhere else {}
    reached = _reached_modules() if elsewhere else None
    for item in mine:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        case = params.get("overload_case")
        name = case.overload if isinstance(case, (Case, Untested)) else None
        tag_case(item, name, "overloads")
        if elsewhere and name is not None and reached is not None and modules.get(name) not in reached:
            item.stash[ELSEWHERE] = (
                f"no injected defect reaches {modules.get(name) or name} (FlagGems' source scan): "
                "it runs as on the plain CPU lane, which runs it"
            )
        if isinstance(case, Case):
            found = defects.known(case, version, budget(settings))
            for defect in found:
                item.add_marker(pytest.mark.known_defect(defect))
            touching = [d for d in found if _faults(settings, d)] if settings.emulation is None else []
            if touching:  # as the op contracts do (contracts.marking.mark_row_cases)
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"known defect {touching[0]} touches memory outside its tensors on "
                        "hardware: its outcome is chance and it corrupts later cases (the emulated "
                        "lanes run it)"
                    )
                )
            entry = _registered_defect(settings, case.overload)
            if entry is not None:  # a copy a known defect names: decided by its differential
                item.add_marker(pytest.mark.known_defect(entry.id))
        found = params.get("override_case")
        if isinstance(found, tuple):  # an override a known defect names: decided by its verdict
            entry = defect_of_function(settings.platform.defects, found[1])
            if entry is not None:
                item.add_marker(pytest.mark.known_defect(entry.id))
            for defect in defects.known(found[0], version, budget(settings)):  # decided when it runs
                listed = settings.platform.defect(defect)
                if listed is not None and listed.trigger == "launch_resources":
                    item.add_marker(pytest.mark.known_defect(defect))
