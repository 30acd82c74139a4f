"""Every keyword parameter of every entry point, swept (the registry rows' ``params``):
booleans both ways, every value of a small domain, integers with 0 and the boundaries torch
defines (std's correction 0 and N), against torch given the same value.  A wrapper that reads
a falsy value as "not given" (``correction or None``), drops half_to_float, or keeps keepdim
on one dim form only is invisible to contracts that never vary the argument.

Each value runs twice: through the row's entry point, and (``route="dispatch"``) as a model
calls it - torch's own call with FlagGems registered for every overload of the op, so the
value picks the aten overload and with it FlagGems' function (``var(correction=0)`` reaches
var.correction's, ``sum(dtype=)`` sum.dim_IntList's), which the entry point alone never runs."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.families.dispatch import counted, overloads, use_gems
from pytest_fl_contract.families.reductions import make_input


def test_param(flag_gems, fl_device, fl_settings, param_op, param, value, param_case, dtype, route):
    op, case = param_op, fitted(param_case, param_op, fl_settings.sweep)
    if op.keepdim == "none" and param.name == "keepdim":
        pytest.skip(f"{op.name} keeps the input's shape: no keepdim")
    x = make_input(case, dtype, fl_device, op=op if op.kind == "index" else None)
    value = getattr(torch, value) if param.name == "dtype" and isinstance(value, str) else value
    keepdim = bool(value) if param.name == "keepdim" else False
    given = {} if param.name == "keepdim" else {param.name: value}
    torch_kwargs = {
        k: (getattr(torch, v) if k == "dtype" and isinstance(v, str) else v)
        for k, v in ({} if param.name == "keepdim" else param.kwargs(value)).items()
    }
    what = f"{param.name}={value!r}, dim {case.dim} of {tuple(case.shape)} {dtype}"
    if route == "entry":
        assert_agrees(
            op,
            lambda: op.call(x, case.dim, keepdim, **given),
            x,
            case.dim,
            keepdim,
            what,
            exact_index=True,
            torch_kwargs=torch_kwargs,
        )
        return
    names = overloads(flag_gems, op.gems_names)
    reached: set[str] = set()

    def dispatched() -> object:
        with counted(flag_gems, set(names)) as seen, use_gems(flag_gems, names):
            try:
                return op.torch_fn(x, case.dim, keepdim, **torch_kwargs)
            finally:
                reached.update(seen)

    assert_agrees(
        op,
        dispatched,
        x,
        case.dim,
        keepdim,
        f"{what}, through torch dispatch",
        exact_index=True,
        torch_kwargs=torch_kwargs,
    )
    if not reached:
        pytest.skip(
            f"{op.name}({what}): torch dispatch reached none of FlagGems' {', '.join(names)} "
            "(torch's own kernel served it: nothing of FlagGems to check)"
        )
