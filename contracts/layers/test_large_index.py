"""Large indices: a layer over more than 2**31 elements in half precision, forward and
gradients, where an int32 offset wraps (registry: Layer.large: each forward kernel a width
reaches).  Hardware lanes only; each call runs in a child process (hardware.isolation.run_row)
against torch's kernels on the same device, so a device fault is one failed case naming the
error."""

from pytest_fl_contract.hardware import isolation


def test_large_index(flag_gems, fl_settings, fl_device, fl_workaround, large_layer, large_case, dtype):
    spec = isolation.RowSpec.of(
        large_layer,
        large_case,
        dtype,
        fl_device,
        backward=True,
        workaround=fl_settings.workaround if fl_workaround is not None else None,
        autotune=fl_settings.autotune.mode,
    )
    verdict = isolation.run_row(spec)
    assert verdict.ok, f"{large_layer.name} {large_case.id} ({dtype}, with gradients): {verdict.detail}"
