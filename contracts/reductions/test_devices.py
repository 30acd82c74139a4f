"""Another device's tensor: a call on a tensor that lives on a device other than the current
one runs on the tensor's device and answers as on the current one.  Triton launches on the
current device, so a kernel handed another device's pointers reads memory it does not own;
FlagGems switches devices around its own launches, and a workaround's kernels must as well.
Hosts with two devices or more: elsewhere there is no other device to put the tensor on."""

import pytest

from pytest_fl_contract.families.reductions import check, make_input
from pytest_fl_contract.registry.reductions import Case

CASES = [Case((3, 5, 64), 1), Case((3, 64, 5), 2)]  # routed by a workaround, and forwarded


@pytest.mark.parametrize("placement", ["other"])  # what a known defect reads (reductions.Call.placement)
@pytest.mark.parametrize("device_case", CASES, ids=lambda c: c.id)
def test_another_devices_tensor(flag_gems, fl_device, any_op, device_case, placement):
    import torch

    module = getattr(torch, torch.device(fl_device).type, None)
    count = module.device_count() if hasattr(module, "device_count") else 0
    if count < 2:
        pytest.skip(f"{fl_device}: {count} device(s) visible, none other than the current one")
    other = f"{torch.device(fl_device).type}:{(module.current_device() + 1) % count}"
    x = make_input(device_case, "float32", other, op=any_op)
    got = any_op.call(x, device_case.dim)
    assert got.device == x.device, f"{any_op.name} answered on {got.device} for a tensor on {x.device}"
    check(any_op, got, x, device_case.dim)
