"""Every kernel path an op's call launches (the rows' ``paths``: mm's general and symmetric
kernels, bmm with and without a K mask, ...) against torch in float64.
``tests/test_kernel_paths.py`` checks that each really launches its kernel."""

from pytest_fl_contract.families.tensorops import check


def test_path(flag_gems, fl_device, path_op, path):
    check(
        path_op,
        path.case,
        path_op.operands(path.case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        layout=path.layout,
        what=f"{path.name}: ",
    )
