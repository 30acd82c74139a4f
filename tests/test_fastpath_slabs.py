"""The tiny-K slab kernels (the fast path's plans where K <= tilemodel.SLAB_K_MAX): each m's
rows read as one contiguous run under 1-D masks, reduced per k in registers.  Under the
interpreter here, against float64 torch, over drawn shapes, splits and dtypes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fl_contract.workarounds import fastpath
from pytest_fl_contract.workarounds import tilemodel as tm

DTYPES = {"float32": (torch.float32, 1e-5), "float16": (torch.float16, 2e-3), "bfloat16": (torch.bfloat16, 2e-2)}


@settings(max_examples=25, deadline=None)
@given(
    M=st.integers(1, 4),
    N=st.integers(1, 700),
    K=st.integers(1, tm.SLAB_K_MAX),
    block=st.sampled_from([1024, 2048]),
    splits=st.sampled_from([1, 2, 4, 16]),
    dtype=st.sampled_from(sorted(DTYPES)),
    keepdim=st.booleans(),
)
def test_slab_plans_reduce_like_torch(M, N, K, block, splits, dtype, keepdim):
    torch_dtype, tol = DTYPES[dtype]
    x = torch.randn(M, N, K).to(torch_dtype)
    plan = tm.SlabPlan(block, splits)
    want = x.double().sum(1, keepdim=keepdim)
    got = fastpath.SlabReduce((M, N, K), 1, keepdim, False, plan, tm.ASSUMED, x.device).run(x)
    mean = fastpath.SlabReduce((M, N, K), 1, keepdim, True, plan, tm.ASSUMED, x.device).run(x)
    assert got.dtype == torch_dtype and got.shape == want.shape
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol * N**0.5)
    torch.testing.assert_close(mean.double(), want / N, rtol=tol, atol=tol)
    soft = fastpath.SlabSoftmax((M, N, K), 1, None, plan, x.device).run(x)
    torch.testing.assert_close(soft.double(), torch.softmax(x.double(), 1), rtol=tol * 4, atol=tol)


@pytest.mark.parametrize("splits", [1, 4])
def test_slab_softmax_keeps_torchs_special_values(splits):
    """A column of -inf is NaN throughout (as torch's), a NaN poisons its own column only."""
    x = torch.randn(2, 300, 3)
    x[:, :, 1] = float("-inf")
    x[1, 5, 2] = float("nan")
    x[0, 7, 0] = float("inf")
    got = fastpath.SlabSoftmax((2, 300, 3), 1, None, tm.SlabPlan(1024, splits), x.device).run(x)
    want = torch.softmax(x, 1)
    assert torch.equal(got.isnan(), want.isnan())
    torch.testing.assert_close(got.nan_to_num(), want.nan_to_num())


def test_slab_softmax_writes_the_asked_dtype():
    x = torch.randn(3, 200, 5).half()
    got = fastpath.SlabSoftmax((3, 200, 5), 1, torch.float32, tm.SlabPlan(1024, 2), x.device).run(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, torch.softmax(x.float(), 1), rtol=1e-3, atol=1e-4)


def test_slab_candidates_are_whole_rows_and_long_splits():
    assert list(tm.slab_candidates(2, 1000, tm.SLAB_K_MAX + 1)) == []
    plans = list(tm.slab_candidates(2, 1000, 3))
    assert {p.block for p in plans} == set(tm.SLAB_BLOCKS)
    assert all(p.splits == 1 or -(-1000 // p.splits) >= tm.SLAB_SPLIT_ROWS for p in plans)
    for plan in plans:
        rows, splits = tm.slab_rows(1000, plan.splits)
        assert splits <= plan.splits and (splits - 1) * rows < 1000 <= splits * rows
        assert plan.splits == 1 or rows % tm.SLAB_SPLIT_ROWS == 0


def test_slab_masks_are_one_dimensional():
    """Under the emulated defect (a 2-D mask's row half dropped) the slab plans still give
    torch's numbers: every mask the slab kernels load under is 1-D, and the split's second
    launch (``fl_reduce_rows_kernel``) has no row condition: the defect reaches nothing."""
    from pytest_fl_contract.emulation import device

    seen: list[tuple[str, int, bool]] = []  # (kernel, the mask's dims, whether the defect changed it)
    original = device.drop_row_condition

    def spy(mask):
        defective = original(mask)
        seen.append((device.DEVICE.kernel, np.ndim(mask), defective is not None))
        return defective

    device.drop_row_condition = spy
    device.enable("masked_2d_row_load")
    try:
        x = torch.randn(2, 999, 6)
        soft = fastpath.SlabSoftmax((2, 999, 6), 1, None, tm.SlabPlan(1024, 4), x.device).run(x)
        total = fastpath.SlabReduce((2, 999, 6), 1, False, False, tm.SlabPlan(1024, 4), tm.ASSUMED, x.device).run(x)
    finally:
        device.disable("masked_2d_row_load")
        device.drop_row_condition = original
    slab = {(dims, changed) for kernel, dims, changed in seen if "slab" in kernel}
    assert slab == {(1, False)}, seen  # the partials' second launch: fl_reduce_rows_kernel's column mask
    assert not any(changed for _, _, changed in seen)
    torch.testing.assert_close(soft, torch.softmax(x, 1))
    torch.testing.assert_close(total, x.sum(1), rtol=1e-5, atol=1e-4)


COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from pytest_fl_contract.workarounds import fastpath as fp

F32, HALF = "*fp32", "*bf16"
for fn, signature, consts in [
    (fp.fl_slab_sum_kernel, dict(out_ptr=F32, in_ptr=HALF, N="i32", MK="i32", rows_per_split="i32", scale="fp32"),
     dict(K_C=3, BLOCK=1024, SPLIT=True)),
    (fp.fl_slab_sum_kernel, dict(out_ptr=HALF, in_ptr=HALF, N="i32", MK="i32", rows_per_split="i32", scale="fp32"),
     dict(K_C=16, BLOCK=4096, SPLIT=False)),
    (fp.fl_slab_softmax_kernel, dict(out_ptr=HALF, in_ptr=HALF, N="i32"), dict(K_C=6, BLOCK=2048)),
    (fp.fl_slab_softmax_stats_kernel, dict(m_ptr=F32, s_ptr=F32, in_ptr=F32, N="i32", MK="i32", rows_per_split="i32"),
     dict(K_C=5, BLOCK=1024)),
    (fp.fl_slab_softmax_norm_kernel, dict(out_ptr=F32, in_ptr=F32, m_ptr=F32, s_ptr=F32, N="i32", MK="i32",
                                          rows_per_split="i32", splits="i32"), dict(K_C=7, BLOCK=1024)),
]:
    consts = {**consts, "STAGES": None, "UNROLL": None}  # the row walk's loop options: Triton's defaults
    source = ASTSource(fn=fn, signature={**signature, **{k: "constexpr" for k in consts}}, constexprs=consts)
    print(fn.__name__, len(triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["cubin"]))
"""


@pytest.mark.slow
def test_slab_kernels_compile_for_sm90():
    """As ``test_fastpath_compiles``: what only a GPU's compiler would refuse shows here."""
    import os
    import subprocess
    import sys

    from .conftest import ROOT

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", COMPILE], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert len(done.stdout.splitlines()) == 5


@pytest.mark.parametrize("kernel", ["sum", "softmax_stats"])
def test_slab_offsets_are_int64_past_2g(kernel):
    """m's run starts at m * N * K: with N * K past 2**31 the second m's first split must be
    addressed there, not wrapped (as ``test_fast_path_offsets_are_int64_past_2g``: the memory
    guard serves what lies past the tiny buffer)."""
    from pytest_fl_contract.emulation import device

    buf, out = torch.zeros(64), torch.zeros(64)
    N, K = 2**30 + 64, 2
    device.DEVICE.watch = []
    try:
        if kernel == "sum":
            fastpath.fl_slab_sum_kernel[(2, 1, 1)](out, buf, N, 2 * K, 64, 1.0, K_C=K, BLOCK=1024, SPLIT=True)
        else:
            fastpath.fl_slab_softmax_stats_kernel[(2, 1, 1)](out, out.clone(), buf, N, 2 * K, 64, K_C=K, BLOCK=1024)
        highest = max(high for _, high in device.DEVICE.watch)
        lowest = min(low for low, _ in device.DEVICE.watch)
    finally:
        device.DEVICE.watch = None
    assert lowest >= buf.data_ptr(), "an offset wrapped below the tensor's start (int32 arithmetic)"
    assert highest >= buf.data_ptr() + N * K * 4, "the second m was not addressed at N * K elements"


def test_tiny_k_calls_take_the_slab_plans(monkeypatch):
    """Through the fast path's entry (``try_fast``): each call takes the plan ``tilemodel.pick``
    prices lower for this device (slabs for long runs per m, tiles for short ones and for K
    past SLAB_K_MAX), both kinds are reached, and both answer as torch."""
    from pytest_fl_contract.registry import ROWS
    from pytest_fl_contract.workarounds import masked_reductions as mr

    monkeypatch.setattr(fastpath, "_PLANS", {})
    seen = set()
    for shape in [(3, 70, tm.SLAB_K_MAX), (3, 70, tm.SLAB_K_MAX + 1), (5, 40, 2), (2, 5000, 4), (1, 30000, 3)]:
        x = torch.randn(shape)
        total = fastpath.try_fast(ROWS.get("sum"), x, {"dim": [1], "keepdim": False}, mr.route)
        soft = fastpath.try_fast(ROWS.get("softmax"), x, {"dim": 1}, mr.route)
        torch.testing.assert_close(total, x.sum(1), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(soft, x.softmax(1))
        device = fastpath._device(x)
        want = {
            ("Slab" if isinstance(tm.pick(*shape, device, 4, kind), tm.SlabPlan) else "") + name
            for kind, name in [("reduce", "Reduce"), ("softmax", "Softmax")]
        }
        kinds = {type(plan).__name__ for plan in fastpath._PLANS.values()}
        assert kinds == want, (shape, kinds)
        assert shape[2] <= tm.SLAB_K_MAX or not any(k.startswith("Slab") for k in kinds)
        seen |= kinds
        fastpath._PLANS.clear()
    assert seen == {"Reduce", "Softmax", "SlabReduce", "SlabSoftmax"}
