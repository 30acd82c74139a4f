"""The matmul K-tail route (workarounds/matmul.py): the second operand becomes a view of
zero-padded memory in its own memory order, K and values unchanged, so rows a dropped row
condition reads past K are zeros; the emulated lanes' determinism contract is the end-to-end
proof (tensorops_contract)."""

from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch")

from pytest_fl_contract.workarounds import matmul  # noqa: E402


def _past_k(view, rows):
    """The memory the kernel's dropped row condition reads: K..rows-1 of each column."""
    k = view.shape[-2]
    full = torch.as_strided(view, (*view.shape[:-2], rows, view.shape[-1]), view.stride(), view.storage_offset())
    return full[..., k:, :]


@pytest.mark.parametrize("layout", ["row-major", "column-major", "batched", "batched-column-major", "strided"])
@pytest.mark.parametrize("k", [1, 19, 70, 129])
def test_the_padded_operand_keeps_values_and_order_and_zeros_past_k(layout, k):
    n = 17
    b = torch.randn(3, k, n) if layout.startswith("batched") else torch.randn(k, n)
    if layout.endswith("column-major"):
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "strided":
        b = torch.randn(k, 2 * n)[:, ::2]
    padded = matmul._pad_k(b, 64)
    assert padded.shape == b.shape and torch.equal(padded, b)
    assert (padded.stride(-2) == 1) == (b.stride(-2) == 1 and n > 1)  # K-major stays K-major
    rows = -(-k // 64) * 64
    assert torch.count_nonzero(_past_k(padded, rows)) == 0


def test_a_k_on_the_tile_or_an_empty_operand_is_left_alone():
    b = torch.randn(128, 5)
    assert matmul._pad_k(b, 64) is b
    empty = torch.randn(0, 5)
    assert matmul._pad_k(empty, 64) is empty


def test_the_transpose_pair_is_kept_for_the_symmetric_kernel():
    a = torch.randn(13, 19)
    seen = {}

    def mm(x, y):
        seen["pair"] = x.data_ptr() == y.data_ptr() and x.stride() == y.stride()[::-1]
        seen["past"] = torch.count_nonzero(_past_k(y, 64))
        return x @ y

    routed = matmul._k_tail(mm, "mm", "tests.nowhere")
    matmul.k_tile.cache_clear()
    out = routed(a, a.t())
    assert torch.allclose(out, a @ a.t()) and seen == {"pair": True, "past": 0}


def test_the_operand_is_found_by_position_or_by_name():
    got = {}

    def addmm(bias, mat1, mat2, *, beta=1, alpha=1):
        got["mat2"] = mat2
        return bias + mat1 @ mat2

    routed = matmul._k_tail(addmm, "addmm", "tests.nowhere")
    bias, a, b = torch.randn(5), torch.randn(4, 19), torch.randn(19, 5)
    for call in (lambda: routed(bias, a, b), lambda: routed(bias, a, mat2=b)):
        assert torch.allclose(call(), bias + a @ b)
        assert got["mat2"] is not b and torch.equal(got["mat2"], b)


def test_the_tile_is_the_largest_k_tile_of_the_modules_configs(monkeypatch):
    config = types.SimpleNamespace
    tuner = types.SimpleNamespace(
        configs=[config(kwargs={"BLOCK_K": 32, "BLOCK_M": 512}), config(kwargs={"BLOCK_K": 128})]
    )
    module = types.ModuleType("fake_gemm")
    module.kernel = types.SimpleNamespace(fn=tuner)  # libentry around an autotuner
    module.other = types.SimpleNamespace(fn=types.SimpleNamespace(configs=[config(kwargs={"TILE_K": 64})]))
    monkeypatch.setitem(sys.modules, "fake_gemm", module)
    matmul.k_tile.cache_clear()
    assert matmul.k_tile("fake_gemm") == 128
    monkeypatch.setitem(sys.modules, "fake_gemm", types.ModuleType("fake_gemm"))
    matmul.k_tile.cache_clear()
    assert matmul.k_tile("fake_gemm") == matmul._FALLBACK_TILE  # no configs found: the largest tile of every line
    matmul.k_tile.cache_clear()
