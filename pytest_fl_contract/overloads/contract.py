"""What one item of the overload suite does: run its case, record the interface's fields, and
turn the status into pytest's outcome (the suite's test module only calls this)."""

from __future__ import annotations

from typing import Any

import pytest

from ..families.dispatch import RegisteredFunctionDefect, defect_of_function
from .oracle import FAILING, Verdict

# elements of a transformed sample's largest tensor, and seconds before a case is a TIMEOUT: the emulator
# runs kernels program by program in Python, hardware gets sizes past many tiles
BUDGET = {("quick", True): 1100, ("full", True): 1 << 14, ("quick", False): 1 << 20, ("full", False): 1 << 22}
SECONDS = {True: 300.0, False: 300.0}  # hang guards: a verdict never depends on the machine's load


# why this lane leaves a case to another (an emulated lane's --fl-wrapped-only or
# --fl-unreached-sweeps-only: an overload whose module no injected defect reaches runs there as
# on the plain CPU lane, which runs it)
ELSEWHERE = pytest.StashKey[str]()


def budget(settings: Any) -> int:
    return BUDGET[(settings.sweep, settings.emulation is not None)]


def record(node: Any, **fields: str) -> None:
    """The interface's per-case properties, as ``record_property`` writes them (its
    ``user_properties``, without its xunit2 warning on every case)."""
    node.user_properties.extend((f"fl_{k}", v) for k, v in fields.items())


class VerdictFailed(AssertionError):
    """A failing verdict, carrying the class names of what FlagGems' call raised (a known
    defect whose trigger is decided at run time takes only the exceptions it lists)."""

    def __init__(self, message: str, raised: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raised = raised


def outcome(verdict: Verdict) -> None:
    """PASS returns; UNSUPPORTED and UNTESTED skip; the failing statuses raise AssertionError,
    which a known defect's strict xfail takes."""
    if verdict.status == "PASS":
        return
    if verdict.status in FAILING:
        raise VerdictFailed(f"{verdict.status}: {verdict.detail}", verdict.raised)
    pytest.skip(f"{verdict.status}: {verdict.detail}")


def run_item(node: Any, gems: Any, settings: Any, device: str, case: Any) -> None:
    from .cases import Case, run

    if isinstance(case, str):  # FlagGems' table could not be read: the item fails saying why
        record(node, overload="", status="ERROR", detail=case, transform="none", sample="")
        raise AssertionError(f"ERROR: {case}")
    if not isinstance(case, Case):  # an entry with no case
        record(node, overload=case.overload, status="UNTESTED", detail=case.reason, transform="none", sample="")
        pytest.skip(f"UNTESTED: {case.reason}")
    elsewhere = node.stash.get(ELSEWHERE, None)
    if elsewhere:
        record(
            node,
            overload=case.overload,
            status="UNTESTED",
            detail=elsewhere,
            transform=case.transform,
            sample=case.sample,
        )
        pytest.skip(f"UNTESTED: {elsewhere}")
    emulated = settings.emulation is not None
    verdict = run(gems, case, budget=budget(settings), seconds=SECONDS[emulated], device=device, emulated=emulated)
    record(
        node,
        overload=case.overload,
        status=verdict.status,
        detail=verdict.detail.replace("\n", " "),
        transform=case.transform,
        sample=case.sample,
    )
    if verdict.defect_lanes is not None:  # an injected defect's reach into this call, measured
        node.user_properties.append(("fl_defect_lanes", str(verdict.defect_lanes)))
    if verdict.status in FAILING:
        _attribute(gems, settings, device, case, verdict)
    outcome(verdict)


def _attribute(gems: Any, settings: Any, device: str, case: Any, verdict: Verdict) -> None:
    """A failing case whose overload runs a function a known defect names (``trigger:
    registered_function``: 5.0.2's Hopper copies) is that defect's where the generic kernel of the
    same name gets the same sample right and the copy does not (the differential): then the copy,
    not the overload, is at fault."""
    from ..registry import overrides
    from .differential import differential
    from .table import function_of

    fn = function_of(gems, case.overload)[0]
    known = defect_of_function(settings.platform.defects, fn)
    pair = overrides.registered(gems).get(getattr(fn, "__name__", ""))
    if known is None or pair is None or pair[0] is not fn:
        return
    generic = pair[1]
    emulated = settings.emulation is not None
    against = differential(
        gems, case, fn, generic, budget=budget(settings), seconds=SECONDS[emulated], device=device, emulated=emulated
    )
    if against.status in ("WRONG", "FAULT"):
        raise RegisteredFunctionDefect(
            f"known defect {known.id}: {verdict.status}: {verdict.detail} ({against.detail})"
        )


def run_override_item(node: Any, gems: Any, settings: Any, device: str, found: Any) -> None:
    """A vendor override's case against the generic kernel (``differential``); a lane with
    none skips saying why, and a hardware lane whose vendor backend did not load fails: its
    FlagGems runs the generic kernels where the vendor's were meant to run.  Its JUnit
    properties are its own (``fl_override``, ``fl_override_status``): the scoreboard counts
    the overloads' verdicts against torch, not these."""
    from .differential import differential

    if isinstance(found, str):  # FlagGems' table could not be read
        raise AssertionError(f"ERROR: {found}")
    if not isinstance(found, tuple):  # NoOverride
        if found.failed_to_load and settings.emulation is None:
            raise AssertionError(f"ERROR: {found.reason}")
        pytest.skip(f"UNTESTED: {found.reason}" + (" (the emulator's Triton)" if found.failed_to_load else ""))
    case, override, generic = found
    emulated = settings.emulation is not None
    verdict = differential(
        gems,
        case,
        override,
        generic,
        budget=budget(settings),
        seconds=SECONDS[emulated],
        device=device,
        emulated=emulated,
    )
    node.user_properties.append(("fl_override", f"{override.__module__}.{override.__name__} ({case.overload})"))
    node.user_properties.append(("fl_override_status", verdict.status))
    known = defect_of_function(settings.platform.defects, override) if verdict.status in ("WRONG", "FAULT") else None
    if known is not None:  # the differential itself shows the override, not the generic kernel, at fault
        raise RegisteredFunctionDefect(f"known defect {known.id}: {verdict.detail}")
    outcome(verdict)
