"""Every overload FlagGems registers, on OpInfo's samples and their boundary transforms, against
torch in float64: a PASS passes, WRONG / FAULT / ERROR / TIMEOUT fail, UNSUPPORTED and UNTESTED
skip saying so.  Each item records the overload interface's fields (``fl_overload``,
``fl_status``, ``fl_detail``, ``fl_transform``, ``fl_sample``) for the scoreboard."""

from pytest_fl_contract.overloads.contract import run_item


def test_overload(request, flag_gems, fl_settings, fl_device, overload_case):
    run_item(request.node, flag_gems, fl_settings, fl_device, overload_case)
