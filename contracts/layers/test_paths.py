"""Every kernel path a layer's call launches (the rows' ``paths``), forward or backward, against
torch in float64.  ``tests/test_kernel_paths.py`` checks that each really launches its kernel."""

from pytest_fl_contract.families.layers import check, make_inputs


def test_path(flag_gems, fl_device, path_layer, path):
    layer = path_layer
    check(
        layer,
        path.case,
        make_inputs(layer, path.case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        backward=path.backward,
        what=f"{path.name}: ",
    )
