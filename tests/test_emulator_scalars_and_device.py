"""The emulated device as compiled Triton and FlagGems' host code see a real one: a float
kernel argument is an fp32 scalar tensor, and a tensor on the emulated device is on the
vendor's device for FlagGems' ``is_cuda`` / ``device.type == "cuda"`` tests (issue 57: eq.Scalar,
pow.Scalar, zero, t_copy, prelu, ... were UNTESTED because the emulator could not run them).

This session runs with ``fl_platform = cpu`` (pyproject): the emulator is active here."""

from __future__ import annotations

import ast
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.jit import mangle_type

from pytest_fl_contract.emulation import dispatch

# -- float scalar arguments ------------------------------------------------------------


@triton.jit
def _store_scalar(out_ptr, y):
    tl.store(out_ptr, y.to(tl.float32))  # a Python float has no .to: the interpreter's failure


@triton.jit
def _scale_half(x_ptr, out_ptr, alpha):
    tl.store(out_ptr, tl.load(x_ptr) * alpha)


@triton.jit
def _store_flag(out_ptr, flag):
    tl.store(out_ptr, flag)


def test_compiled_triton_types_a_float_as_fp32_and_a_bool_as_i1():
    # what the emulator follows; if triton changes it, the emulator must follow again
    assert mangle_type(0.1) == "fp32"
    assert mangle_type(True) == "u1"


@pytest.mark.parametrize("value", [0.1, -2.5, 1e300, float("nan")])
def test_a_float_argument_is_an_fp32_scalar(value):
    out = torch.zeros(1, dtype=torch.float64)
    _store_scalar[(1,)](out, value)
    np.testing.assert_array_equal(out.numpy(), np.array([value], dtype=np.float32).astype(np.float64))


def test_a_float_argument_promotes_a_half_operand_as_compiled():
    # compiled: fp16 * fp32 scalar is fp32, 1.0 * fp32(0.1); as a literal it stayed fp16 (0.0999755859375)
    x, out = torch.ones(1, dtype=torch.float16), torch.zeros(1, dtype=torch.float32)
    _scale_half[(1,)](x, out, 0.1)
    assert out.item() == float(np.float32(0.1))


@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_argument_stays_an_i1(flag):
    out = torch.zeros(1, dtype=torch.bool)
    _store_flag[(1,)](out, flag)
    assert out.item() is flag


@pytest.fixture(scope="module")
def gems():
    import flag_gems

    return flag_gems


def test_eq_scalar_and_pow_scalar_run_through_the_emulator(gems):
    x = torch.tensor([1.0, 2.5, 3.0, -0.5], dtype=torch.float16)
    with gems.use_gems():
        eq, ne, pow_ts, pow_st = torch.eq(x, 2.5), torch.ne(x, 2.5), torch.pow(x, 2.0), torch.pow(2.0, x)
    assert eq.tolist() == [False, True, False, False]
    assert ne.tolist() == [True, False, True, True]
    torch.testing.assert_close(pow_ts, x.double().pow(2.0).half())
    torch.testing.assert_close(pow_st, torch.pow(2.0, x.double()).half())


# -- FlagGems' tests for its vendor's device --------------------------------------------


def _rewritten(source: str, vendor_type: str | None) -> str:
    return ast.unparse(dispatch._DeviceTests(vendor_type).visit(ast.parse(source)))


@pytest.mark.parametrize(
    "source, expected",
    [
        ("x.is_cuda", "x.is_cpu"),
        ("not (a.is_cuda and b.is_cuda)", "not (a.is_cpu and b.is_cpu)"),
        ("t.device.type == 'cuda'", "t.device.type == 'cpu'"),
        ("'cuda' != t.device.type", "'cpu' != t.device.type"),
        ("t.device.type == 'cpu'", f"t.device.type == {dispatch.HOST!r}"),
        ("torch.device('cuda')", "torch.device('cuda')"),  # not a test of a tensor's device
        ("flag_gems.device != 'cuda'", "flag_gems.device != 'cuda'"),
    ],
)
def test_device_tests_see_the_emulated_device_as_the_vendors(source, expected):
    assert _rewritten(source, "cuda") == expected


def test_without_a_vendor_device_only_host_tests_change():
    assert _rewritten("x.is_cuda or x.device.type == 'cuda'", None) == "x.is_cuda or x.device.type == 'cuda'"
    assert _rewritten("x.device.type != 'cpu'", None) == f"x.device.type != {dispatch.HOST!r}"


def test_flag_gems_vendor_device_is_cuda(gems):
    assert dispatch.vendor_device_type(gems) == "cuda"
    assert gems.device == "cpu"  # the emulated device FlagGems allocates on


def test_flag_gems_operator_code_no_longer_reads_is_cuda(gems):
    """Every function of FlagGems' operator modules (top level or in a class, nested code
    included) that tested ``is_cuda`` was recompiled."""

    def codes(code):
        yield code
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                yield from codes(const)

    left = []
    for name, module in list(sys.modules.items()):
        if not name.startswith(("flag_gems.ops.", "flag_gems.fused.")):
            continue
        for attr, value in vars(module).items():
            fns = [getattr(f, "__func__", f) for f in vars(value).values()] if isinstance(value, type) else [value]
            for fn in fns:
                code = getattr(fn, "__code__", None)
                if code is not None and "flag_gems" in code.co_filename:
                    left += [f"{name}.{attr}" for c in codes(code) if "is_cuda" in c.co_names]
    assert left == []


def test_a_wrapper_that_asserts_cuda_runs_on_the_emulated_device(gems):
    zero = sys.modules["flag_gems.ops.zero"]
    x = torch.randn(5)
    assert zero._launch_zero_kernel(x) is x  # asserted ``tensor.is_cuda`` before
    assert x.tolist() == [0.0] * 5
    with gems.use_gems():
        y = torch.randn(3, 4)
        assert torch.special.i0e(y).allclose(torch.special.i0e(y.double()).float())
        assert torch.ops.aten.t_copy(y).equal(y.t())


def test_torch_still_sees_cpu_tensors_as_the_cpus(gems):
    """Nothing is switched on torch's side: inside and outside a FlagGems call a CPU tensor
    is not a CUDA tensor to torch's own Python code (``torch.nn.functional``, decompositions)."""
    assert type(torch.Tensor.__dict__.get("is_cuda", torch._C.TensorBase.is_cuda)).__name__ == "getset_descriptor"
    x = torch.randn(4)
    assert not x.is_cuda and x.device.type == "cpu"
    with gems.use_gems():
        assert not torch.zeros_like(x).is_cuda
        assert torch.zeros_like(x).device.type == "cpu"
