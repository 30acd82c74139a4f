"""A vendor backend's override of a generic kernel agrees with the generic kernel on the same
inputs (FlagGems #6163: a fix made in the generic kernel and not in the vendor's copy); an
override that raises where the generic kernel returns is the guard it lacks.  Every case of
every overridden overload, on its platform's lane (emulated too); a hardware lane whose vendor
backend did not load at all fails."""

from pytest_fl_contract.overloads.contract import run_override_item


def test_override_agrees_with_generic(request, flag_gems, fl_settings, fl_device, override_case):
    run_override_item(request.node, flag_gems, fl_settings, fl_device, override_case)
