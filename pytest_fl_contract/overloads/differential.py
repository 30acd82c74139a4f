"""A vendor override against FlagGems' generic kernel of the same name, on the same inputs.

On a vendor platform FlagGems registers the backend's copy of an op (``runtime/backend/
_<vendor>/ops``) in place of the generic one, and a fix made in the generic kernel is not
carried into the copy (FlagGems #6163: Sunrise's cumsum on an empty tensor, the guard the
generic kernel got in #4541 missing).  So each case of an overridden overload runs twice: the
override registered for the overload, then the generic function, both on the same sample (the
overload suite's, at tile edges and in its layouts).  They must agree within the case dtype's
tolerance; an override that raises where the generic kernel returns is the missing guard.  No
reference is needed: the overload suite holds both to torch separately.

``registry.overrides`` finds the overrides (read from the registration at run time) and why a
backend's module did not load at all (``load_failure``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..markers import device_fault
from . import boundary
from .cases import Case, _torch_call, call_once, dispatch_key, is_random, only
from .oracle import Timeout, Verdict, compare, deadline, emulator_gap, one_line, raised_names
from .samples import SEED, drawn, transformed
from .table import function_of


def differential(
    gems: Any,
    case: Case,
    override: Callable[..., Any],
    generic: Callable[..., Any],
    *,
    budget: int,
    seconds: float,
    seed: int = SEED,
    device: str = "cpu",
    emulated: bool = False,
) -> Verdict:
    """The override's result against the generic kernel's on the case's sample: PASS, WRONG
    (they differ, or the override raises where the generic returns), FAULT/ERROR never (a
    raise is a finding or a reason), UNTESTED with why where the two cannot be compared."""
    import warnings

    import torch

    warnings.filterwarnings("ignore", category=UserWarning)
    if is_random(case.overload):
        return Verdict("UNTESTED", "a random op: the override and the generic kernel draw their own numbers")
    samples = drawn(case.source.opinfo, case.dtype)
    if case.index >= len(samples):
        return Verdict("UNTESTED", f"{case.source.opinfo} draws {len(samples)} samples in {case.dtype}")
    try:
        drawn_sample = transformed(
            case.overload, case.source, samples[case.index], case.transform, budget=budget, seed=seed
        )
        sample = boundary.relayout(drawn_sample, case.transform)
    except boundary.NotApplicable as exc:
        return Verdict("UNTESTED", f"{case.transform}: {exc}")
    grad = torch.enable_grad() if case.source.caller == "backward" else torch.no_grad()
    keys = (dispatch_key(gems), *function_of(gems, case.overload)[1])
    with grad:
        try:
            _, out = _torch_call(case, sample)
        except Exception as exc:
            return Verdict("UNTESTED", f"torch refuses this sample ({case.transform}): {one_line(exc)}")
        results: dict[str, Any] = {}
        for name, fn in (("override", override), ("generic", generic)):
            if isinstance(results.get("override"), BaseException) and device_fault(results["override"]):
                break  # the device's context went with it: nothing more runs there
            with only(case.overload, fn, keys) as calls:
                try:
                    with deadline(seconds):
                        got = call_once(case, drawn_sample, out, device, seed)[0]
                except (Exception, Timeout) as exc:
                    results[name] = exc
                    continue
            results[name] = got if calls else None
    mine, theirs = results["override"], results.get("generic")
    if isinstance(mine, BaseException) and device_fault(mine):
        return Verdict("FAULT", f"the override faults: {one_line(mine)}", raised=raised_names(mine))
    if isinstance(theirs, BaseException) and device_fault(theirs):
        # its context is lost with it: the lane's device check fails the case all the same
        return Verdict(
            "UNTESTED", f"the generic kernel faults on this device, where the override returns: {one_line(theirs)}"
        )
    if mine is None or theirs is None:
        return Verdict("UNTESTED", "the case did not reach the overload: dispatch took another path")
    if isinstance(mine, BaseException) and emulated and emulator_gap(mine):
        return Verdict("UNTESTED", f"the CPU emulator cannot run the override: {one_line(mine)}")
    if isinstance(theirs, BaseException):
        why = f"the generic kernel raises: {one_line(theirs)}"
        return Verdict("UNTESTED", why if isinstance(mine, BaseException) else why + " (the override returns)")
    if isinstance(mine, BaseException):
        why = f"the override raises where the generic kernel returns: {one_line(mine)}"
        return Verdict("WRONG", why, raised=raised_names(mine))
    problem = compare(mine, theirs, theirs)
    return (
        Verdict("WRONG", f"the override differs from the generic kernel: {problem}") if problem else Verdict("PASS", "")
    )
