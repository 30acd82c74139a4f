"""Guard bands (issue 59, class 2) under the emulator: a banded tensor is the same tensor, a
write past it is named by byte range, the emulator's own guard and the bands agree on a planted
out-of-bounds store, and the injected ``store_past_tensor`` fails the guard contract (and the
probe) while a clean lane passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from pytest_fl_contract.emulation import device
from pytest_fl_contract.emulation.device import EmulatedDeviceFault, one_lane_past
from pytest_fl_contract.hardware import guardbands
from pytest_fl_contract.probes.battery import BY_ID

from .conftest import ROOT


@triton.jit
def _past(out_ptr, N, EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs < N + EXTRA)


@pytest.fixture
def injected():
    device.enable("store_past_tensor")
    yield
    device.disable("store_past_tensor")


def test_a_banded_tensor_is_the_same_tensor():
    guard = guardbands.Guard()
    x = torch.arange(24.0).reshape(4, 6)[:, 1:5]  # a strided view: its span, not its numel
    y = guard.copy(x)
    assert torch.equal(x, y) and y.stride() == x.stride() and y.dtype == x.dtype
    assert guard.breaches() == []
    y.mul_(2)  # writing the tensor itself is no breach
    assert guard.breaches() == []


def test_a_write_outside_names_the_byte_ranges():
    guard = guardbands.Guard()
    y = guard.copy(torch.zeros(5, dtype=torch.float32), "out")
    record = guard.records[0]
    record.buffer[guardbands.BAND + 20 : guardbands.BAND + 24] = 0  # one float past the end
    record.buffer[guardbands.BAND - 2] = 1  # a byte before it
    (breach,) = guard.breaches()
    assert breach.ranges == ((-2, -1), (20, 24)) and breach.nbytes == 20
    assert (
        str(breach)
        == "float32[5] from out (20 bytes): written outside at bytes [-2, -1) before, bytes [20, 24) past the end"
    )
    assert y.sum().item() == 0


def test_every_allocation_under_the_guard_is_banded_and_says_where():
    guard = guardbands.Guard()
    with guardbands.guarded(guard):
        a = torch.empty(3, 4)
        b = torch.zeros_like(a)
        c = a.new_empty((2,))
    assert len(guard.records) == 3 and c.shape == (2,) and torch.equal(b, torch.zeros(3, 4))
    assert all("test_guardbands.py:" in r.label for r in guard.records), [r.label for r in guard.records]


def test_the_emulator_guard_and_the_bands_agree_on_a_planted_store_past_the_end():
    before = device.counters().get("oob_stores", 0)
    with pytest.raises(Exception, match="stored 2 element") as raised:  # plain memory: the emulator's fault
        _past[(1,)](torch.empty(5), 5, EXTRA=2, BLOCK=8)
    assert isinstance(raised.value.__cause__ or raised.value, (EmulatedDeviceFault, Exception))
    assert device.counters()["oob_stores"] - before == 2
    guard = guardbands.Guard()
    with guardbands.guarded(guard):  # in bands: the same 2 lanes land in the band, named by byte range
        out = torch.empty(5)
        _past[(1,)](out, 5, EXTRA=2, BLOCK=8)
    message = guardbands.verdict("planted", guard, guardbands.settle("cpu"))
    assert message is not None and "bytes [20, 28) past the end" in message, message  # 2 lanes * 4 bytes
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_correct_kernel_leaves_its_bands_alone():
    guard = guardbands.Guard()
    with guardbands.guarded(guard):
        out = torch.empty(5)
        _past[(1,)](out, 5, EXTRA=0, BLOCK=8)
    assert guardbands.verdict("clean", guard, guardbands.settle("cpu")) is None


def test_a_fault_is_the_cases_and_comes_first():
    guard = guardbands.Guard()
    assert guardbands.verdict("case", guard, "RuntimeError: illegal memory access") == (
        "case: device fault after the call (synchronise and canary): RuntimeError: illegal memory access"
    )
    assert guardbands.settle("cpu") is None
    assert guardbands.settle("nosuchdevice").startswith("RuntimeError")


def test_the_injected_store_bound_stores_one_lane_past_each_prefix_row():
    mask = np.array(
        [[True, True, False, False], [True, True, True, True], [False, False, False, False], [True, False, True, False]]
    )
    assert one_lane_past(mask).tolist() == [
        [True, True, True, False],
        [True] * 4,
        [False] * 4,
        [True, False, True, False],
    ]
    assert one_lane_past(np.ones(3, bool)) is None and one_lane_past(np.array(True)) is None


def test_the_probe_catches_the_injected_store_and_passes_without(injected):
    probe = BY_ID["store_past_tensor"]
    assert not probe.run("cpu").passed
    device.disable("store_past_tensor")
    assert probe.run("cpu").passed
    assert not probe.run("cpu", probe.mutant).passed


@pytest.mark.slow
def test_the_guard_contract_fails_on_the_injected_store_and_holds_without():
    select = "test_guard and (softmax-inner-one-tile or cumsum-K-1-one-block)"

    def run(*extra: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("FL_PLATFORM", None)
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_fl_contract.cli",
                "contracts",
                "reductions",
                "--",
                "--platform",
                "cpu",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                "-k",
                select,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=ROOT,
        )

    clean = run()
    assert clean.returncode == 0 and re.search(r"\b[1-9]\d* passed", clean.stdout), clean.stdout[-1500:]
    broken = run("--fl-inject", "store_past_tensor")
    assert broken.returncode == 1 and re.search(r"\b[1-9]\d* failed", broken.stdout), broken.stdout[-1500:]
    assert re.search(
        r"writes outside the tensors: \w+\[[\d, ]+\] from aten::\S+ at flag_gems/ops/\w+\.py:\d+ "
        r"\(\d+ bytes\): written outside at bytes \[\d+, \d+\) past the end",
        broken.stdout,
    ), broken.stdout[-3000:]
