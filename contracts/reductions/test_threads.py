"""The same call from a second Python thread gives the main thread's result, bit for bit
(a backend or a launch cache that keeps per-thread state wrongly returns zeros, stale
values or nothing at all off the main thread)."""

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

THREAD_CASES = [Case((3, 5, 4), 1), Case((3, 4, 8), -1)]


@pytest.mark.parametrize("thread_case", THREAD_CASES, ids=lambda c: c.id)
def test_from_a_thread(flag_gems, fl_device, fl_settings, any_op, thread_case):
    op, case = any_op, fitted(thread_case, any_op, fl_settings.sweep)
    x = make_input(case, "float32", fl_device, op=op if op.kind == "index" else None)
    main = op.call(x, case.dim).cpu()
    with ThreadPoolExecutor(max_workers=1) as pool:
        other = pool.submit(lambda: op.call(x, case.dim).cpu()).result(timeout=600)
    assert other.shape == main.shape and other.dtype == main.dtype, "another thread gave another shape or dtype"
    assert torch.equal(other.nan_to_num(), main.nan_to_num()), "another thread gave other values than the main thread"


@pytest.mark.parametrize("thread_case", THREAD_CASES, ids=lambda c: c.id)
def test_on_a_side_stream(flag_gems, fl_device, fl_settings, any_op, thread_case):
    """The same call on a non-default stream gives the default stream's result, bit for bit."""
    module = getattr(torch, fl_device.split(":")[0], None)
    if fl_settings.emulation is not None or not hasattr(module, "Stream"):
        pytest.skip("hardware only: the device must have streams (the emulated one runs on the CPU)")
    op, case = any_op, fitted(thread_case, any_op, fl_settings.sweep)
    x = make_input(case, "float32", fl_device, op=op if op.kind == "index" else None)
    main = op.call(x, case.dim)
    stream = module.Stream()
    stream.wait_stream(module.current_stream())
    with module.stream(stream):
        other = op.call(x, case.dim)
    module.current_stream().wait_stream(stream)
    module.synchronize()
    assert torch.equal(other.cpu().nan_to_num(), main.cpu().nan_to_num()), "a side stream gave other values"
