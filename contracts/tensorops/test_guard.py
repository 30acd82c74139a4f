"""Writes stay inside the tensors (issue 59): every kernel path (the rows' ``paths``) with its
operands - in-place ones included - and every tensor allocated during the call inside guard
bands of a known byte (``hardware.guardbands``); a changed band names op, case and byte range,
and a device fault is charged to this case (synchronise and a canary after the call)."""

from pytest_fl_contract.families.tensorops import check
from pytest_fl_contract.hardware import guardbands


def test_guard_bands(flag_gems, fl_device, path_op, path):
    guard = guardbands.Guard()
    operands = guardbands.banded_copy(guard, path_op.operands(path.case))
    try:
        with guardbands.guarded(guard):
            check(
                path_op,
                path.case,
                operands,
                device=fl_device,
                dtype="float32",
                gems=flag_gems,
                layout=path.layout,
                what=f"{path.name}: ",
            )
    finally:
        fault = guardbands.settle(fl_device)
    message = guardbands.verdict(f"{path_op.name} {path.name}", guard, fault)
    assert message is None, message
