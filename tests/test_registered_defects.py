"""Known defects of a FlagGems function registered only on some devices (``trigger:
registered_function``): FlagGems 5.0.2 registers its Hopper copies of mul, sqrt and fill_ on a
compute capability 9 device, flat kernels that ignore broadcasting and strides.  On an H100 with
every op enabled they broke the gradients of prod, amax, std, var_mean and vector_norm.

A case is attributed to such a defect only where it fails with every op enabled and holds once
the defect's functions are left out (``families.dispatch.every_op``); the emulated Hopper
(profile ``nvidia-hopper``: FlagGems given ARCH=sm_90) registers the same copies on this CPU, so
the attribution is shown on the real kernels, and the override differential holds them against
the generic kernels."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from pytest_fl_contract.families.dispatch import (
    RegisteredFunctionDefect,
    defect_of_function,
    every_op,
    names_function,
    registered_functions,
)

from .conftest import fresh_result


def _fn(module: str, name: str):
    def f(*args):
        return args

    f.__module__, f.__name__ = module, name
    return f


class FakeGems:
    """FlagGems' registration table and use_gems(), recording what each context left out."""

    def __init__(self, *functions):
        self._FULL_CONFIG = tuple((f"{fn.__name__}.Tensor", fn) for fn in functions)
        self.excluded: list[tuple[str, ...]] = []

    def use_gems(self, include=None, exclude=None):
        import contextlib

        self.excluded.append(tuple(exclude or ()))
        return contextlib.nullcontext()


DEFECT = SimpleNamespace(id="flat", trigger="registered_function", registered=("hopper.ops.mul:mul",))
OTHER = SimpleNamespace(id="other", trigger=None, registered=())


def test_a_function_is_named_by_its_module_as_a_dotted_suffix():
    assert names_function(["hopper.ops.mul:mul"], _fn("hopper.ops.mul", "mul"))
    assert names_function(["hopper.ops.mul:mul"], _fn("flag_gems.runtime.backend._nvidia.hopper.ops.mul", "mul"))
    assert not names_function(["hopper.ops.mul:mul"], _fn("flag_gems.ops.mul", "mul"))
    assert not names_function(["hopper.ops.mul:mul"], _fn("xhopper.ops.mul", "mul"))
    assert not names_function(["hopper.ops.mul:mul"], _fn("hopper.ops.mul", "mul_"))
    gems = FakeGems(_fn("hopper.ops.mul", "mul"), _fn("flag_gems.ops.add", "add"))
    assert registered_functions(gems, ["hopper.ops.mul:mul", "hopper.ops.sqrt:sqrt"]) == ("mul",)
    assert defect_of_function([OTHER, DEFECT], gems._FULL_CONFIG[0][1]) is DEFECT
    assert defect_of_function([OTHER, DEFECT], gems._FULL_CONFIG[1][1]) is None


def _body(gems, fails_while):
    """A case under use_gems(..., "everything") that fails while ``fails_while(excluded)``."""
    from pytest_fl_contract.families.dispatch import use_gems

    def body():
        with use_gems(gems, ["sum"], "everything"):
            pass
        if fails_while(gems.excluded[-1]):
            raise AssertionError("gradient differs")

    return body


def test_a_failure_that_holds_once_the_function_is_left_out_is_the_defects():
    gems = FakeGems(_fn("hopper.ops.mul", "mul"))
    with pytest.raises(RegisteredFunctionDefect, match=r"known defect flat: .*gradient differs.* mul .*left out"):
        every_op(gems, [OTHER, DEFECT], _body(gems, lambda excluded: "mul" not in excluded))
    assert gems.excluded == [(), ("mul",)]


def test_a_failure_the_exclusion_does_not_fix_stands():
    gems = FakeGems(_fn("hopper.ops.mul", "mul"))
    with pytest.raises(AssertionError, match="gradient differs") as info:
        every_op(gems, [DEFECT], _body(gems, lambda excluded: True))
    assert not isinstance(info.value, RegisteredFunctionDefect)


def test_no_attribution_where_the_function_is_not_registered():
    """The generic mul registered (an Ampere card, any other vendor): the failure is news."""
    gems = FakeGems(_fn("flag_gems.ops.mul", "mul"))
    with pytest.raises(AssertionError, match="gradient differs"):
        every_op(gems, [DEFECT], _body(gems, lambda excluded: True))
    assert gems.excluded == [()]  # never re-run


def test_a_passing_case_runs_once_with_every_op():
    gems = FakeGems(_fn("hopper.ops.mul", "mul"))
    every_op(gems, [DEFECT], _body(gems, lambda excluded: False))
    assert gems.excluded == [()]


def test_the_catalogue_entry_names_the_hopper_copies():
    from pytest_fl_contract.config.platforms import load_registry

    registry = load_registry()
    entry = registry.defects["hopper_flat_kernels_ignore_layout"]
    assert entry.trigger == "registered_function" and "hopper.ops.mul:mul" in entry.registered
    assert entry.fails_with == ("RegisteredFunctionDefect",)
    # FlagGems' own: every platform has it, the registration decides
    assert all(p.defect(entry.id) is not None for p in registry.platforms.values())


def test_differentiable_asks_for_a_backward_not_a_grad_fn():
    """torch 2.11 gives aminmax's result a grad_fn whose backward raises (no derivative)."""
    import torch
    from pytest_fl_contract.contracts.reductions.sweeps import differentiable

    class NoDerivative(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(1)

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("derivative for aten::aminmax is not implemented")

    assert not differentiable(SimpleNamespace(torch_fn=lambda x, dim, keepdim: NoDerivative.apply(x)))
    assert differentiable(SimpleNamespace(torch_fn=lambda x, dim, keepdim: x.amax(dim)))
    assert not differentiable(SimpleNamespace(torch_fn=lambda x, dim, keepdim: x.argmax(dim)))


def test_a_sample_broadcasts_where_two_tensors_of_one_rank_differ():
    import torch

    from pytest_fl_contract.overloads.cases import broadcasts

    def sample(*tensors):
        return SimpleNamespace(input=tensors[0], args=tensors[1:], kwargs={})

    assert broadcasts(sample(torch.ones(3, 1, 4), torch.ones(3, 5, 4)))
    assert not broadcasts(sample(torch.ones(3, 5, 4), torch.ones(3, 5, 4)))
    assert not broadcasts(sample(torch.ones(5, 4), torch.ones(4)))  # a rank short: another rule
    assert not broadcasts(sample(torch.ones(5, 4), 2.0))


PROBE = textwrap.dedent("""
    import json, sys, torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up(sys.argv[1], ())
    import flag_gems
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.families.dispatch import RegisteredFunctionDefect, every_op, registered_functions
    from pytest_fl_contract.registry import overrides

    entry = load_registry().defects["hopper_flat_kernels_ignore_layout"]
    found = {"registered": list(registered_functions(flag_gems, entry.registered)),
             "overrides": sorted(overrides.registered(flag_gems))}

    def gradient():  # amax's backward multiplies the unsqueezed gradient by a (3, 5, 8) mask
        x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(0)).requires_grad_()
        with flag_gems.use_gems(exclude=list(__import__("pytest_fl_contract.families.dispatch",
                                fromlist=["_EXCLUDED"])._EXCLUDED.get())):
            x.amax(1).backward(torch.ones(3, 8))
        ref = x.detach().clone().requires_grad_()
        ref.amax(1).backward(torch.ones(3, 8))
        torch.testing.assert_close(x.grad, ref.grad)

    try:
        every_op(flag_gems, [entry], gradient)
        found["amax_gradient"] = "holds"
    except RegisteredFunctionDefect as exc:
        found["amax_gradient"] = "defect: " + str(exc)[:200]
    except Exception as exc:
        found["amax_gradient"] = f"fails: {type(exc).__name__}"
    print("RESULT " + json.dumps(found))
""")


@pytest.mark.parametrize("profile", ["nvidia-hopper", "nvidia-small"])
def test_the_emulated_hopper_registers_the_copies_and_the_gradient_is_attributed(profile):
    found = fresh_result(PROBE, profile)
    if profile == "nvidia-hopper":
        assert set(found["registered"]) == {"mul", "sqrt", "sqrt_", "fill_scalar_", "fill_tensor_"}
        assert {"mul", "sqrt", "fill_scalar_"} <= set(found["overrides"])  # the differential's pairs
        assert found["amax_gradient"].startswith("defect: known defect hopper_flat_kernels_ignore_layout")
    else:  # no architecture: the generic kernels, nothing to attribute, and the gradient holds
        assert found["registered"] == [] and "mul" not in found["overrides"]
        assert found["amax_gradient"] == "holds"


OVERLOAD = textwrap.dedent("""
    import json, sys
    from types import SimpleNamespace
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up(sys.argv[1], ())
    import flag_gems
    from pytest_fl_contract.config.platforms import load_registry
    from pytest_fl_contract.families.dispatch import RegisteredFunctionDefect
    from pytest_fl_contract.overloads import cases, contract, table

    entry = next(e for e in table.read(flag_gems) if e.name == "mul.Tensor")
    plan = cases.plan(flag_gems, (entry,), "full")[0]
    spread = [c for c in plan.cases if c.transform == "none" and c.dtype == "float32"][-1]  # the broadcasting sample
    settings = SimpleNamespace(platform=load_registry().get("nvidia"), emulation=object(), sweep="full")
    verdict = cases.run(flag_gems, spread, budget=1 << 14, seconds=300, device="cpu", emulated=True)
    try:
        contract._attribute(flag_gems, settings, "cpu", spread, verdict)
        found = "not attributed"
    except RegisteredFunctionDefect as exc:
        found = str(exc)[:160]
    print("RESULT " + json.dumps({"case": spread.id, "status": verdict.status, "attributed": found}))
""")


@pytest.mark.parametrize("profile", ["nvidia-hopper", "nvidia-small"])
def test_an_overload_case_is_the_copys_defect_where_the_generic_kernel_holds(profile):
    """The overload suite's mul.Tensor on its broadcasting sample: WRONG on the Hopper copy, which
    the differential against FlagGems' generic mul proves the copy's; right on the generic kernel."""
    found = fresh_result(OVERLOAD, profile)
    if profile == "nvidia-hopper":
        assert found["status"] == "WRONG"
        assert found["attributed"].startswith("known defect hopper_flat_kernels_ignore_layout: WRONG")
    else:
        assert found["status"] == "PASS" and found["attributed"] == "not attributed"
