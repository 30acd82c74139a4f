"""Memory layout: transposed, stepped (a slice with a step), expanded (stride 0), offset
(a view starting inside its storage) and permuted inputs give torch's result, over every
dim; out= buffers that are non-contiguous or of the wrong size are written as torch writes
them."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

SHAPE = (4, 6, 10)


def view(layout: str, x: torch.Tensor) -> torch.Tensor:
    """A view holding the values of ``x`` (same shape) in the named layout."""
    if layout == "transposed":
        return x.transpose(0, 2).contiguous().transpose(0, 2)
    if layout == "permute":
        return x.permute(2, 0, 1).contiguous().permute(1, 2, 0)
    if layout == "step":
        wide = torch.zeros((x.shape[0], x.shape[1] * 2, x.shape[2]), dtype=x.dtype, device=x.device)
        wide[:, ::2] = x
        return wide[:, ::2]
    if layout == "offset":
        flat = torch.zeros(x.numel() + 7, dtype=x.dtype, device=x.device)
        flat[7:] = x.flatten()
        return flat[7:].view(x.shape)
    if layout == "expand":
        return x[:, :1].expand(x.shape)
    raise ValueError(layout)


LAYOUTS = ["transposed", "permute", "step", "offset", "expand"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("layout_case", [Case(SHAPE, d) for d in range(3)], ids=lambda c: c.id)
def test_layout(flag_gems, fl_device, fl_settings, any_op, layout_case, layout):
    op, case = any_op, fitted(layout_case, any_op, fl_settings.sweep)
    x = view(layout, make_input(case, "float32", fl_device, op=op))
    assert layout == "offset" or layout == "step" or not x.is_contiguous()
    assert_agrees(op, lambda: op.call(x, case.dim), x, case.dim, what=f"{layout} input, dim {case.dim}")


OUT_CASES = [Case((3, 5, 6), 1), Case((3, 5, 6), 2)]


@pytest.mark.parametrize("layout", ["out_non_contiguous", "out_wrong_size", "out_right_size"])
@pytest.mark.parametrize("out_case", OUT_CASES, ids=lambda c: c.id)
def test_out_buffers(flag_gems, fl_device, fl_settings, any_op, out_case, layout):
    op, case, buffer = any_op, fitted(out_case, any_op, fl_settings.sweep), layout
    if op.out_entry is None:
        pytest.skip(f"{op.name} has no out= entry point in the op registry")
    x = make_input(case, "float32", fl_device)
    expected = op.torch_fn(x.cpu(), case.dim, False)
    if buffer == "out_non_contiguous":
        flipped = torch.empty(tuple(reversed(expected.shape)), device=fl_device)  # the result's dims reversed
        out = flipped.permute(*reversed(range(flipped.dim())))
    elif buffer == "out_wrong_size":
        out = torch.full((3,), float("nan"), device=fl_device)
    else:
        out = torch.empty(expected.shape, device=fl_device)
    ret = op.call(x, case.dim, False, attr=op.out_entry, out=out)
    assert ret is out, "out= must return the caller's buffer"
    assert_agrees(op, lambda: out.clone(), x, case.dim, what=f"{buffer.removeprefix('out_')} out= buffer")
