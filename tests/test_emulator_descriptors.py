"""A tensor descriptor (TMA) bounds the emulator's memory guard by its base tensor: without it
every lane of a descriptor's block load and store lay outside every tensor of the launch, the
loads read heap garbage and the stores faulted, and FlagGems 5.4's _grouped_mm (its TMA path) was
wrong on the CPU lanes where it is right on the interpreter alone.  Fresh interpreter: the
emulator patches a process for good."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import fresh_result, with_jit_module

TMA_KERNEL = """import triton, triton.language as tl
@triton.jit
def copy(a_desc, c_desc, BM: tl.constexpr):
    pid = tl.program_id(0)
    c_desc.store([pid * BM, 0], a_desc.load([pid * BM, 0]))
"""
COPY = with_jit_module(
    textwrap.dedent("""
    import json, os, sys, tempfile
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    # jit module

    a, c = torch.randn(32, 16), torch.zeros(32, 16)
    try:
        copy[(2,)](TensorDescriptor(a, a.shape, a.stride(), [16, 16]), TensorDescriptor(c, c.shape, c.stride(), [16, 16]), 16)
        found = {"copied": bool(torch.equal(a, c)), "error": None}
    except Exception as exc:
        found = {"copied": False, "error": str(exc)}
    print("RESULT " + json.dumps(found))
"""),
    "fl_tma_kernels",
    TMA_KERNEL,
)


@pytest.mark.slow
def test_a_descriptors_block_copy_runs_inside_its_base_tensor():
    assert fresh_result(COPY) == {"copied": True, "error": None}
