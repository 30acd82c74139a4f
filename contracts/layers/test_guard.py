"""Writes stay inside the tensors (issue 59): every kernel path of every layer (the rows'
``paths``), forward or backward, with its inputs and every tensor allocated during the call
inside guard bands of a known byte (``hardware.guardbands``); a changed band names layer, case
and byte range, and a device fault is charged to this case (synchronise and a canary)."""

from pytest_fl_contract.families.layers import check, make_inputs
from pytest_fl_contract.hardware import guardbands


def test_guard_bands(flag_gems, fl_device, path_layer, path):
    guard = guardbands.Guard()
    inputs = guardbands.banded_copy(guard, make_inputs(path_layer, path.case))
    try:
        with guardbands.guarded(guard):
            check(
                path_layer,
                path.case,
                inputs,
                device=fl_device,
                dtype="float32",
                gems=flag_gems,
                backward=path.backward,
                what=f"{path.name}: ",
            )
    finally:
        fault = guardbands.settle(fl_device)
    message = guardbands.verdict(f"{path_layer.name} {path.name}", guard, fault)
    assert message is None, message
