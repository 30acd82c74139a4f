"""The fast path's launch sites (``fastpath._Site``): the first launch of each alignment goes
through the launch cache, later ones straight to the compiled kernel with every parameter in
the kernel's order; anything unexpected sends the site back to the launch cache for good.

No GPU here: the compiled kernel and the launch cache are recorders, the kernel a real
``JITFunction`` (what the site checks its parameters against)."""

from __future__ import annotations

import types

import pytest
import torch
import triton
import triton.language as tl

from pytest_fl_contract.workarounds import fastpath


def _probe_kernel(out_ptr, in_ptr, N, scale, BLOCK: tl.constexpr, FLAG: tl.constexpr = False):
    pass


SIGNATURE = {
    "out_ptr": "*fp32",
    "in_ptr": "*fp32",
    "N": "i32",
    "scale": "fp32",
    "BLOCK": "constexpr",
    "FLAG": "constexpr",
}


class _Compiled:
    def __init__(self, log: list, signature: dict, fail: bool = False) -> None:
        self.src = types.SimpleNamespace(signature=signature)
        self.log, self.fail = log, fail

    def __getitem__(self, grid):
        def runner(*args):
            if self.fail:
                raise TypeError("function takes exactly 7 arguments")
            self.log.append(("direct", grid, args))

        return runner


class _Cache:
    def __init__(self, kernel, log: list) -> None:
        self.kernel, self.log = kernel, log

    def __getitem__(self, grid):
        return lambda *args, **meta: self.log.append(("cache", grid, args, meta, self.kernel))


@pytest.fixture
def site(monkeypatch):
    """A site of ``_probe_kernel`` (a module global of the fast path, as its kernels are) and
    the log of every launch."""
    log: list = []
    jit = triton.runtime.JITFunction(_probe_kernel)
    state = {"signature": SIGNATURE, "fail": False, "warmups": 0}

    def warmup(*args, grid, **meta):
        state["warmups"] += 1
        return _Compiled(log, state["signature"], state["fail"])

    monkeypatch.setattr(jit, "warmup", warmup, raising=False)
    monkeypatch.setattr(fastpath, "fl_probe_kernel", jit, raising=False)
    monkeypatch.setattr(fastpath, "_launch", lambda kernel: _Cache(kernel, log))
    monkeypatch.setattr(fastpath, "_TRITON", (3, 6))
    monkeypatch.setattr(fastpath, "DIRECT", True)
    return fastpath._Site("fl_probe_kernel", (7,), {"BLOCK": 64, "num_warps": 4}), log, state, jit


def test_later_launches_go_straight_to_the_compiled_kernel(site):
    s, log, state, _ = site
    out, x = torch.empty(4), torch.empty(8)
    for _ in range(3):
        s(out, x, 8, 0.5)
    assert [entry[0] for entry in log] == ["cache", "direct", "direct"]
    assert log[0][2:4] == ((out, x, 8, 0.5), {"BLOCK": 64, "num_warps": 4})
    # every parameter in the kernel's order, the constexprs' values included (FLAG's default)
    assert log[1] == ("direct", (7, 1, 1), (out, x, 8, 0.5, 64, False))
    assert state["warmups"] == 1


def test_each_alignment_is_compiled_and_learned_once(site):
    s, log, state, _ = site
    out, aligned = torch.empty(4), torch.empty(9)
    unaligned = aligned[1:]  # 4 bytes past a 16-byte boundary: Triton compiles another kernel
    for x in (aligned[:8], unaligned, unaligned, aligned[:8]):
        s(out, x, 8, 0.5)
    assert [entry[0] for entry in log] == ["cache", "cache", "direct", "direct"]
    assert state["warmups"] == 2


def test_a_replaced_kernel_is_launched_through_the_launch_cache(site, monkeypatch):
    """A test's launch spy or a mutant replaces the module global: a runner of the old kernel
    is never used for it."""
    s, log, _, _ = site
    out, x = torch.empty(4), torch.empty(8)
    s(out, x, 8, 0.5)
    spy = object()
    monkeypatch.setattr(fastpath, "fl_probe_kernel", spy)
    s(out, x, 8, 0.5)
    s(out, x, 8, 0.5)
    assert [(entry[0], entry[-1] is spy) for entry in log] == [("cache", False), ("cache", True), ("cache", True)]


def test_a_refused_launch_goes_back_to_the_launch_cache_for_good(site):
    s, log, state, _ = site
    state["fail"] = True
    out, x = torch.empty(4), torch.empty(8)
    for _ in range(3):
        s(out, x, 8, 0.5)
    assert [entry[0] for entry in log] == ["cache", "cache", "cache"]  # each call launched exactly once
    assert s.runners is None


@pytest.mark.parametrize(
    "signature",
    [
        {k: v for k, v in SIGNATURE.items() if v != "constexpr"},  # a launcher without the constexprs
        {**SIGNATURE, "N": "constexpr"},  # a parameter specialised away
        dict(reversed(SIGNATURE.items())),  # another order
        None,
    ],
    ids=["no-constexprs", "constexpr-mismatch", "order", "no-source"],
)
def test_a_compiled_kernel_of_another_convention_is_never_launched_directly(site, signature):
    s, log, state, _ = site
    state["signature"] = signature
    out, x = torch.empty(4), torch.empty(8)
    for _ in range(3):
        s(out, x, 8, 0.5)
    assert [entry[0] for entry in log] == ["cache", "cache", "cache"]


def test_older_triton_and_the_switch_keep_the_launch_cache(site, monkeypatch):
    s, log, _, _ = site
    out, x = torch.empty(4), torch.empty(8)
    monkeypatch.setattr(fastpath, "_TRITON", (3, 2))
    s(out, x, 8, 0.5)
    s(out, x, 8, 0.5)
    assert [entry[0] for entry in log] == ["cache", "cache"]
    fresh = fastpath._Site("fl_probe_kernel", (7,), {"BLOCK": 64})
    monkeypatch.setattr(fastpath, "_TRITON", (3, 6))
    monkeypatch.setattr(fastpath, "DIRECT", False)
    fresh(out, x, 8, 0.5)
    fresh(out, x, 8, 0.5)
    assert [entry[0] for entry in log[2:]] == ["cache", "cache"]


def test_the_interpreter_and_a_spy_are_launched_as_they_are(site, monkeypatch):
    """Under the interpreter (the CPU lanes) or a test's launch spy the kernel is no
    JITFunction: every launch is the kernel's own, so the emulated defect and the spies see
    them all, and the site learns nothing from them (the real kernel, back, is learned)."""
    s, log, state, jit = site
    out, x = torch.empty(4), torch.empty(8)
    spy = types.SimpleNamespace()
    monkeypatch.setattr(fastpath, "fl_probe_kernel", spy)
    s(out, x, 8, 0.5)
    s(out, x, 8, 0.5)
    assert [(entry[0], entry[-1] is spy) for entry in log] == [("cache", True), ("cache", True)]
    assert s.runners == {} and state["warmups"] == 0
    monkeypatch.setattr(fastpath, "fl_probe_kernel", jit)
    s(out, x, 8, 0.5)
    s(out, x, 8, 0.5)
    assert [entry[0] for entry in log[2:]] == ["cache", "direct"]
