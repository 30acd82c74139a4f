"""Large indices: an operand of more than 2**31 elements, where an int32 offset wraps, with
the call reaching its last row (registry: TensorOp.large).  Hardware lanes only; each call
runs in a child process (hardware.isolation.run_row) against torch's kernels on the same
device, so a device fault is one failed case naming the error."""

from pytest_fl_contract.hardware import isolation


def test_large_index(flag_gems, fl_settings, fl_device, fl_workaround, large_op, large_case):
    spec = isolation.RowSpec.of(
        large_op,
        large_case,
        "float32",
        fl_device,
        workaround=fl_settings.workaround if fl_workaround is not None else None,
        autotune=fl_settings.autotune.mode,
    )
    verdict = isolation.run_row(spec)
    assert verdict.ok, f"{large_op.name} {large_case.id}: {verdict.detail}"
