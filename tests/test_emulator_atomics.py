"""The emulator's memory guard covers atomics as it covers stores: an atomic update or
compare-and-swap outside every tensor of its launch is a device fault naming the kernel, and
nothing is written there.  Unguarded, FlagGems' scatter(reduce="add") on a strided self added
into host memory past its output and the process died later, in torch ("double free or
corruption"), with nothing naming the kernel.  Each check runs in a fresh interpreter: before
the guard the write lands in this process's heap."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import fresh_result, with_jit_module

ATOMIC_KERNELS = """import triton, triton.language as tl
@triton.jit
def add(x_ptr, n, past, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + offs + past, 1.0, mask=offs < n)
@triton.jit
def cas(x_ptr, past):
    tl.atomic_cas(x_ptr + past, 0.0, 5.0)
"""
ATOMICS = with_jit_module(
    textwrap.dedent("""
    import json, os, sys, tempfile
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import triton

    # jit module

    found = {}
    # the guard sits in the interpreter's own allocations: a buffer, of which the launch sees a part
    buffer = torch.zeros(4096)
    x, y = buffer[:16].clone(), buffer[:16].clone()
    for name, launch in (("add_inside", lambda: add[(1,)](x, 16, 0, BLOCK=16)),
                         ("add_past", lambda: add[(1,)](x, 16, 8, BLOCK=16)),
                         ("cas_inside", lambda: cas[(1,)](y, 0)),
                         ("cas_past", lambda: cas[(1,)](y, 100000))):
        before = (x.clone(), y.clone())
        try:
            launch()
            found[name] = "ran"
        except Exception as exc:
            found[name] = str(exc)
        found[name + "_changed"] = int((x != before[0]).sum() + (y != before[1]).sum())
    print("RESULT " + json.dumps(found))
"""),
    "fl_atomic_kernels",
    ATOMIC_KERNELS,
)


@pytest.mark.slow
def test_atomics_outside_every_tensor_of_the_launch_fault_naming_the_kernel():
    found = fresh_result(ATOMICS)
    assert found["add_inside"] == "ran" and found["add_inside_changed"] == 16
    assert "add atomically updated 8 element(s) outside every tensor of its launch" in found["add_past"]
    assert found["add_past_changed"] == 8  # the lanes inside were updated, the 8 past the end were not
    assert found["cas_inside"] == "ran" and found["cas_inside_changed"] == 1
    assert "cas compare-and-swapped 1 element(s) outside every tensor" in found["cas_past"]
