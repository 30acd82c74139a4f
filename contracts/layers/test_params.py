"""Every argument of every layer beyond its case, swept (the rows' ``params``): eps (its default
as a model sends it, and values a kernel that bakes the default gets wrong), batch norm's
training and eval, momentum and running buffers, and which leaves need a gradient (autograd's
output_mask: the input alone, a weight alone, ...) - forward and backward against torch's
float64 autograd with the same argument, and forward alone (a backward's known defect
marks its whole case, and must not hide a forward that ignores the argument).  A kernel that reads only the default passes every
contract that never varies it."""

from pytest_fl_contract.families.layers import GRADS, check, make_inputs


def test_param(flag_gems, fl_device, param_layer, param, value, param_case, direction):
    layer, case = param_layer, param_case
    grads = value if param.name == "grads" else GRADS
    options = {} if param.name == "grads" else param.kwargs(value)
    check(
        layer,
        case,
        make_inputs(layer, case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        backward=direction == "backward",
        options=options,
        grads=grads,
        what=f"{param.name}={value!r}: ",
    )
