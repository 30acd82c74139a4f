"""``rejit``: the zoo's one-expression mutations of real kernels under the interpreter.

This session runs on the CPU lane (pyproject ``fl_platform = cpu``): triton interprets, the
emulator's honest ``and`` is in the interpreter's rewriter."""

from __future__ import annotations

import linecache
import sys

import pytest
import torch
import triton
import triton.language as tl

from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.testing import rejit as rj
from pytest_fl_contract.testing import zoo
from pytest_fl_contract.util import FlContractError

HERE = sys.modules[__name__]


@triton.jit
def window_scaled(x_ptr, out_ptr, LO, HI, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = offs >= LO
    below = offs < HI
    mask = inside and below
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, v * 2.0 + 0.0 * 2.0, mask=mask)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["N"])})
@triton.jit
def add_one(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) + 1.0, mask=mask)


@pytest.fixture
def restored():
    """Put back every kernel of this module a test mutated (rejit changes them for good)."""
    saved = {name: (k.fn, k.rewriter) for name in ("window_scaled", "add_one") for k in [rj.interpreted(HERE, name)]}
    yield
    for name, (fn, rewriter) in saved.items():
        k = rj.interpreted(HERE, name)
        k.fn, k.rewriter = fn, rewriter


def _window() -> list[float]:
    x, out = torch.arange(8.0), torch.full((8,), -1.0)
    window_scaled[(1,)](x, out, 2, 6, BLOCK=8)
    return out.tolist()


def _add_one(n: int = 5) -> list[float]:
    x, out = torch.arange(float(n)), torch.zeros(n)
    add_one[(1,)](x, out, n)
    return out.tolist()


def test_the_kernels_unmutated():
    assert _window() == [-1, -1, 4, 6, 8, 10, -1, -1]
    assert _add_one() == [1, 2, 3, 4, 5]


def test_rejit_changes_the_kernel_and_keeps_the_honest_and(restored):
    rj.rejit(HERE, "window_scaled", "v * 2.0", "v * 3.0")
    # lanes 0, 1 unwritten: the mutated source went through the emulator's `and` again
    assert _window() == [-1, -1, 6, 9, 12, 15, -1, -1]
    assert "v * 3.0" in rj.source(HERE, "window_scaled")


def test_count_replaces_that_many_occurrences(restored):
    rj.rejit(HERE, "window_scaled", "* 2.0", "* 4.0", count=-1)
    assert rj.source(HERE, "window_scaled").count("* 4.0") == 2
    assert _window() == [-1, -1, 8, 12, 16, 20, -1, -1]


def test_rejit_reaches_under_the_heuristics_layer(restored):
    interp = rj.rejit(HERE, "add_one", "+ 1.0", "+ 2.0")
    assert interp is add_one.fn
    assert _add_one() == [2, 3, 4, 5, 6]


def test_the_mutation_outlives_a_cleared_linecache(restored):
    rj.rejit(HERE, "add_one", "+ 1.0", "- 1.0")
    linecache.clearcache()
    assert _add_one(3) == [-1, 0, 1]


@pytest.mark.parametrize("old, count", [("tl.atomic_add", 1), ("+ 1.0", 2)])
def test_an_expression_not_in_the_kernel_is_an_error(restored, old, count):
    before = add_one.fn.fn
    with pytest.raises(FlContractError, match=r"cannot mutate tests\.test_zoo_kernels\.add_one: .* occurs"):
        rj.rejit(HERE, "add_one", old, "x", count=count)
    assert add_one.fn.fn is before and _add_one() == [1, 2, 3, 4, 5]


def test_a_kernel_not_in_the_module_is_an_error():
    with pytest.raises(FlContractError, match="no such kernel"):
        rj.rejit(HERE, "no_such_kernel", "a", "b")
    with pytest.raises(FlContractError, match="no InterpretedFunction"):
        rj.interpreted(HERE, "HERE")


def test_every_kernel_edit_of_the_zoo_is_in_this_flag_gems():
    """A FlagGems that rewrote a mutated kernel fails here, before any zoo run."""
    import flag_gems  # noqa: F401  (the emulator is active: its kernels are interpreted)

    assert set(zoo.KERNEL_EDITS) <= set(zoo.MUTANTS)
    for name, edits in zoo.KERNEL_EDITS.items():
        for module, kernel, old, _new, count in edits:
            found = rj.source(module, kernel).count(old)
            assert found >= max(count, 1), f"{name}: {old!r} occurs {found} time(s) in {module}.{kernel}"


def test_every_mutant_names_its_op_and_contract():
    ops_ = set(ROWS.names())
    for m in zoo.MUTANTS.values():
        assert m.description and m.select
        if m.name in zoo.KERNEL_EDITS:
            assert any(op in m.select for op in ops_) and " and " in m.select, m.name
