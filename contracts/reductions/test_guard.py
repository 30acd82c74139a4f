"""Writes stay inside the tensors (issue 59): every kernel path of every op (the rows'
``paths``) called with its input, and every tensor FlagGems allocates, inside guard bands of a
known byte (``hardware.guardbands``).  A band that changed is a store past a tensor - on a GPU
it corrupts the neighbour silently and shows later in another op - named by op, case and byte
range before the next case runs; a device fault is charged to this case (synchronise and a
canary after the call), not to the next one."""

import os

import pytest
import torch

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.hardware import guardbands

# past this an interpreted path can take a minute (cost ~ programs): its test_path case runs it
# there under the emulator's own store guard, and hardware lanes band it here
INTERPRETED_ELEMENTS = 4096


def test_guard_bands(flag_gems, fl_device, path_op, path, path_case, dtype):
    op = path_op
    what = f"{op.name} {path.name}: {path.shape} dim={path.dim} {dtype}"
    guard = guardbands.Guard()
    x = make_input(path_case, dtype, fl_device, op=op)
    if os.environ.get("TRITON_INTERPRET") == "1" and x.numel() > INTERPRETED_ELEMENTS:
        pytest.skip(
            f"{x.numel()} elements: banded on hardware; here test_path runs it under the emulator's store guard"
        )
    x = guard.copy(x, "the input")
    if path.entry is None:
        call = lambda: op.call(x, path.dim, **dict(path.kwargs))  # noqa: E731
    else:  # a backward entry point: (grad_output, output, dim, input_dtype)
        out = op.torch_fn(x.detach().cpu().double(), path.dim, False)
        grad = guard.copy(torch.ones_like(out).to(x.dtype).to(x.device), "grad_output")
        output = guard.copy(out.to(x.dtype).to(x.device), "output")
        call = lambda: op.fn(path.entry)(grad, output, path.dim, x.dtype)  # noqa: E731
    try:
        with guardbands.guarded(guard):
            call()
    finally:
        fault = guardbands.settle(fl_device)
    message = guardbands.verdict(what, guard, fault)
    assert message is None, message
