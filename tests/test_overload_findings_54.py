"""The overload suite's findings on the 5.4 line's cpu lane (issue 57): what was the suite's own
error (a random op held to moments it has not, an unordered result compared in order, a
complex result without torch's own error allowed), and the catalogue's FlagGems defects - each
predicate applies to the calls that meet its defect and not to the neighbouring ones FlagGems
answers right, and each description's reproduction still fails on 5.4."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import torch

from pytest_fl_contract.overloads import defects
from pytest_fl_contract.overloads.cases import Case, _judged
from pytest_fl_contract.overloads.oracle import Verdict, compare, first_difference, random_verdict
from pytest_fl_contract.overloads.samples import Source
from pytest_fl_contract.registry.schema import in_line

from .conftest import ROOT, fresh_result

N = 4097  # a boundary-transformed random op's size


def _draws(draw, seeds=range(1, 5)):
    return [draw(torch.Generator().manual_seed(s)) for s in seeds]


def _verdict(got, draws) -> Verdict:
    return random_verdict(got, got.clone(), got, draws)


# -- random ops: by the distribution's quantiles, not its moments -------------------------


def _cauchy(location=0.0, scale=0.5):
    return lambda gen: torch.empty(N).cauchy_(location, scale, generator=gen)


def test_a_cauchy_draw_is_held_to_its_quantiles_not_to_a_std_it_has_not():
    """torch's own cauchy draw failed against torch's other draws (a Cauchy law has no std:
    the sample std is the largest value's); by quantiles it is what it is."""
    got = _cauchy()(torch.Generator().manual_seed(0))
    assert _verdict(got, _draws(_cauchy())).status == "PASS"


@pytest.mark.parametrize(
    "wrong",
    [_cauchy(location=0.25), _cauchy(scale=1.0), lambda gen: torch.randn(N, generator=gen) * 0.5],
    ids=["shifted", "twice-as-wide", "normal"],
)
def test_a_draw_of_another_law_is_wrong(wrong):
    got = wrong(torch.Generator().manual_seed(0))
    verdict = _verdict(got, _draws(_cauchy()))
    assert verdict.status == "WRONG" and "quantile" in verdict.detail


def test_discrete_draws_are_compared_by_their_shares():
    def bernoulli(p):
        return lambda gen: torch.bernoulli(torch.full((N,), p), generator=gen)

    assert _verdict(bernoulli(0.3)(torch.Generator().manual_seed(0)), _draws(bernoulli(0.3))).status == "PASS"
    assert _verdict(bernoulli(0.4)(torch.Generator().manual_seed(0)), _draws(bernoulli(0.3))).status == "WRONG"


def _fast_log(u):
    """FlagGems' safe_fast_log_f32 in torch: the exponent's ln 2 and four terms of log(1 + m)."""
    mantissa, exponent = torch.frexp(u.double())  # u = mantissa * 2 ** exponent, mantissa in [0.5, 1)
    m = 2 * mantissa - 1
    return m * (1 + m * (-0.5 + m * (1 / 3 - m * 0.25))) + (exponent - 1) * math.log(2)


def test_an_exponential_draw_short_of_its_lower_tail_is_wrong():
    """FlagGems' exponential_ (exponential_truncated_log_series): its mean and spread passed
    the moments test (1.9968 against 1.9654), the first decile shows no value below 0.1098."""
    lambd = 0.5

    def flag_gems_like(gen):
        return (-_fast_log(torch.rand(N, generator=gen)) / lambd).float()

    def torchs(gen):
        return torch.empty(N).exponential_(lambd, generator=gen)

    assert _verdict(torchs(torch.Generator().manual_seed(0)), _draws(torchs)).status == "PASS"
    verdict = _verdict(flag_gems_like(torch.Generator().manual_seed(0)), _draws(torchs))
    assert verdict.status == "WRONG" and "0.1 quantile" in verdict.detail, verdict


# -- complex and unordered results ---------------------------------------------------------


def _eigvals_case():
    gen = torch.Generator().manual_seed(57)
    for _ in range(20):  # a matrix whose fp32 eigenvalues LAPACK orders otherwise than float64's
        a = torch.randn(33, 33, generator=gen)
        meta, ref = torch.linalg.eigvals(a), torch.linalg.eigvals(a.double())
        if (meta.to(torch.complex128) - ref).abs().max() > 0.1:
            return meta, ref
    pytest.fail("no matrix of 20 has its eigenvalues in another order in fp32")


def test_a_complex_result_as_far_from_float64_as_torchs_own_passes():
    meta, ref = _eigvals_case()
    assert first_difference(meta, ref.to(meta.dtype), {"rtol": 1e-6, "atol": 1e-6}, meta) is None


def test_eigenvalues_are_a_set_matched_to_float64s():
    """torch's own eigvals in fp32 are FlagGems' answer (it calls them): PASS; a 0.1 % error,
    which the allowance for torch's order-scrambled error hid, is WRONG."""
    meta, ref = _eigvals_case()
    case = Case("_linalg_eigvals", Source("linalg.eigvals", "op"), 0, "float32", "none")
    assert _judged(case, meta.clone(), (None,), None, None, meta, ref, [], False).status == "PASS"
    verdict = _judged(case, meta * 1.001, (None,), None, None, meta, ref, [], False)
    assert verdict.status == "WRONG", verdict
    assert compare(meta * 1.001, meta, ref) is None  # in order: the allowance hides it


# -- the catalogue's predicates --------------------------------------------------------------


def _applies(defect: str, case: Case, sample, version: str = "5.4.0.dev0") -> bool:
    found = [k for k in defects.KNOWN if k.id == defect and in_line(k.flag_gems, version)]
    return any(defects._applies(k, case, sample) for k in found)


def _case(overload: str, opinfo: str, caller: str = "op") -> Case:
    return Case(overload, Source(opinfo, caller), 0, "float32", "none")


T = torch.randn


@pytest.mark.parametrize(
    "defect, case, sample, applies",
    [
        ("reflection_pad3d_backward_unbatched_refused",
         _case("reflection_pad3d_backward", "nn.functional.pad.reflect", "backward"),
         (T(3, 3, 5, 5), ((1,) * 6, "reflect"), {}), True),
        ("reflection_pad3d_backward_unbatched_refused",
         _case("reflection_pad3d_backward", "nn.functional.pad.reflect", "backward"),
         (T(2, 3, 3, 5, 5), ((1,) * 6, "reflect"), {}), False),
        ("unsafe_masked_index_first_index_flat", _case("_unsafe_masked_index", "_unsafe_masked_index"),
         (T(5, 5), (torch.ones(2, dtype=torch.bool), [torch.tensor([0, 1]), torch.tensor([2, 3])], 0.0), {}), True),
        ("unsafe_masked_index_first_index_flat", _case("_unsafe_masked_index", "_unsafe_masked_index"),
         (T(5), (torch.ones(2, dtype=torch.bool), [torch.tensor([0, 1])], 0.0), {}), False),
        ("unsafe_masked_index_put_indices_not_broadcast",
         _case("_unsafe_masked_index_put_accumulate", "_unsafe_masked_index_put_accumulate"),
         (T(3, 4), (torch.ones(2, 2, dtype=torch.bool), [torch.zeros(2, 1).long(), torch.zeros(1, 2).long()],
                    T(2, 2)), {}), True),
        ("unsafe_masked_index_put_indices_not_broadcast",
         _case("_unsafe_masked_index_put_accumulate", "_unsafe_masked_index_put_accumulate"),
         (T(3, 4), (torch.ones(2, 2, dtype=torch.bool), [torch.zeros(2, 2).long(), torch.zeros(2, 2).long()],
                    T(2, 2)), {}), False),
        ("logcumsumexp_shifts_by_row_max", _case("logcumsumexp", "logcumsumexp"),
         (torch.tensor([[0.0, 200.0]]), (1,), {}), True),
        ("logcumsumexp_shifts_by_row_max", _case("logcumsumexp", "logcumsumexp"),
         (torch.tensor([[0.0, 200.0]]), (0,), {}), False),  # along dim 0 each row is one element
        ("logcumsumexp_shifts_by_row_max", _case("logcumsumexp", "logcumsumexp"),
         (torch.tensor([[200.0, 0.0]]), (1,), {}), False),  # the max first: every prefix holds it
        ("mse_loss_backward_scalar_grad_per_element", _case("mse_loss_backward", "nn.functional.mse_loss", "backward"),
         (T(5), (T(5),), {"reduction": "mean"}), True),
        ("mse_loss_backward_scalar_grad_per_element", _case("mse_loss_backward", "nn.functional.mse_loss", "backward"),
         (T(5), (T(5),), {}), True),  # mean by default
        ("mse_loss_backward_scalar_grad_per_element", _case("mse_loss_backward", "nn.functional.mse_loss", "backward"),
         (T(5), (T(5),), {"reduction": "none"}), False),
        ("mse_loss_backward_scalar_grad_per_element", _case("mse_loss_backward", "nn.functional.mse_loss", "backward"),
         (T(()), (T(()),), {"reduction": "sum"}), False),
        ("cdist_backward_p_ignored", _case("_cdist_backward", "cdist", "backward"),
         (T(5, 5, 2), (T(5, 6, 2), 0.0, "use_mm_for_euclid_dist"), {}), True),
        ("cdist_backward_p_ignored", _case("_cdist_backward", "cdist", "backward"),
         (T(5, 5, 2), (T(5, 6, 2), 2.0), {}), False),
        ("rot90_matrix_only", _case("rot90", "rot90"), (T(5, 5, 5), (), {}), True),
        ("rot90_matrix_only", _case("rot90", "rot90"), (T(5, 6), (1, [1, 0]), {}), True),
        ("rot90_matrix_only", _case("rot90", "rot90"), (T(5, 6), (3, [0, 1]), {}), False),
        ("rot90_matrix_only", _case("rot90", "rot90"), (T(5, 6, 1), (), {}), False),
        ("upsample_nearest_exact_takes_nearest_index",
         _case("_upsample_nearest_exact2d_backward", "nn.functional.interpolate.nearest-exact", "backward"),
         (T(2, 3, 4, 4), ((3, 3),), {"mode": "nearest-exact"}), True),
        ("upsample_nearest_exact_takes_nearest_index",
         _case("_upsample_nearest_exact2d_backward", "nn.functional.interpolate.nearest-exact", "backward"),
         (T(2, 3, 4, 4), ((8, 8),), {"mode": "nearest-exact"}), False),  # an integer upscale
        ("adaptive_avg_pool2d_window_end_floored", _case("_adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool2d"),
         (T(1, 8, 8, 8), ((5, 7),), {}), True),
        ("adaptive_avg_pool2d_window_end_floored", _case("_adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool2d"),
         (T(8, 8, 8), ((4, 4),), {}), True),  # unbatched
        ("adaptive_avg_pool2d_window_end_floored", _case("_adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool2d"),
         (T(1, 8, 8, 9), ((4, 3),), {}), False),
        ("adaptive_avg_pool2d_window_end_floored", _case("_adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool2d"),
         (T(1, 8, 8, 9), (1,), {}), False),
        ("upsample_bilinear2d_aa_no_antialias", _case("_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa"),
         (T(6, 3, 10, 20), (), {"output_size": (3, 3), "align_corners": False, "scale_factors": None}), True),
        ("upsample_bilinear2d_aa_no_antialias", _case("_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa"),
         (T(6, 3, 10, 20), (), {"output_size": (12, 20), "align_corners": False, "scale_factors": None}), False),
        ("ldl_factor_rows_stored_64_wide", _case("linalg_ldl_factor", "linalg.ldl_factor"),
         (T(5, 5), (), {"hermitian": False}), True),
        ("ldl_factor_rows_stored_64_wide", _case("linalg_ldl_factor", "linalg.ldl_factor"),
         (T(64, 64), (), {"hermitian": False}), False),
        ("ldl_factor_at_most_64", _case("linalg_ldl_factor", "linalg.ldl_factor"),
         (T(65, 65), (), {"hermitian": False}), True),
        ("ldl_factor_at_most_64", _case("linalg_ldl_factor", "linalg.ldl_factor"),
         (T(64, 64), (), {"hermitian": False}), False),
        ("exponential_truncated_log_series", _case("exponential_", "exponential", "inplace"), (T(4097), (0.5,), {}),
         True),
        ("exponential_truncated_log_series", _case("exponential_", "exponential", "inplace"), (T(10), (0.5,), {}),
         False),  # too few values for the decile test to see
        ("median_reads_tensor_names", _case("median.dim", "median"), (T(5), (0,), {}), not hasattr(torch.Tensor, "names")),
    ],
)  # fmt: skip
def test_a_predicate_applies_to_the_calls_its_defect_meets(defect, case, sample, applies):
    assert _applies(defect, case, sample) is applies
    # exponential_ is 5.0.2's too, with the same kernel; no other of these overloads is
    assert _applies(defect, case, sample, "5.0.2") is (applies and defect == "exponential_truncated_log_series")


REPRODUCTIONS = textwrap.dedent("""
    import json
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import torch, flag_gems
    A = torch.ops.aten

    def gems(f):
        try:
            with flag_gems.use_gems():
                result = f()
            return result.tolist() if hasattr(result, "tolist") else repr(result)
        except Exception as exc:
            return type(exc).__name__

    # every input made before FlagGems is on: its arange takes int64 for arange(5.0) (dtype None)
    x1, x2 = torch.tensor([[[0.0, 0.0]]]), torch.tensor([[[1.0, 2.0]]])
    d1 = torch.cdist(x1, x2, p=1.0)
    median_in, lcse_in = torch.tensor([3.0, 1.0, 2.0]), torch.tensor([0.0, 200.0])
    grad3d, self3d = torch.randn(3, 5, 7, 7), torch.randn(3, 3, 5, 5)
    grid25, mask2, i0, i1 = torch.arange(25.0).reshape(5, 5), torch.tensor([True, True]), torch.tensor([0, 1]), torch.tensor([2, 3])
    cube, matrix = torch.arange(8.0).reshape(2, 2, 2), torch.arange(6.0).reshape(2, 3)
    ones13, row5, row4, eye5 = torch.ones(1, 1, 1, 3), torch.arange(5.0).reshape(1, 1, 1, 5), torch.arange(4.0).reshape(1, 1, 1, 4), torch.eye(5)
    found = {
        "median": gems(lambda: torch.median(median_in)),
        "pad3d": gems(lambda: A.reflection_pad3d_backward(grad3d, self3d, [1] * 6)),
        "masked_index": gems(lambda: A._unsafe_masked_index(grid25, mask2, [i0, i1], 0.0)),
        "logcumsumexp": gems(lambda: torch.logcumsumexp(lcse_in, 0)),
        "cdist_p1": gems(lambda: A._cdist_backward(torch.ones_like(d1), x1, x2, 1.0, d1)),
        "rot90": gems(lambda: torch.rot90(cube, 1, [0, 1]).flatten()),
        "rot90_matrix": gems(lambda: torch.rot90(matrix, 1, [0, 1]).flatten()),
        "nearest_exact2d_bw": gems(lambda: A._upsample_nearest_exact2d_backward(ones13, [1, 3], [1, 1, 1, 5], None, None).flatten()),
        "adaptive": gems(lambda: A._adaptive_avg_pool2d(row5, [1, 3]).flatten()),
        "aa": gems(lambda: A._upsample_bilinear2d_aa(row4, [1, 2], False, None, None).flatten()),
        "ldl": gems(lambda: torch.linalg.ldl_factor(eye5)),
        "ldl65": gems(lambda: torch.linalg.ldl_factor(torch.eye(65))),
    }
    torch.manual_seed(0)
    drawn = torch.empty(100000)
    with flag_gems.use_gems():
        drawn.exponential_(1.0)
    found["exponential_min"] = drawn.min().item()
    print("RESULT " + json.dumps(found))
""")


@pytest.mark.slow
def test_the_catalogues_reproductions_fail_on_54(fg54_site):
    """Each new entry's minimal reproduction, as its description gives it, on FlagGems 5.4."""
    found = fresh_result(REPRODUCTIONS, pythonpath=[str(fg54_site), str(ROOT)])
    assert found["median"] == ("AttributeError" if not hasattr(torch.Tensor, "names") else 2.0)
    assert found["pad3d"] == "ValueError"
    assert found["masked_index"] == [0.0, 1.0]  # torch: [2, 8]
    assert found["logcumsumexp"][0] == float("-inf")  # torch: 0
    assert found["cdist_p1"][0][0] == pytest.approx([-1 / 3, -2 / 3])  # torch: [-1, -1]
    assert found["rot90"] == [2.0, 6.0, 2.0, 6.0, 0.0, 4.0, 0.0, 4.0]  # torch: [2, 3, 6, 7, 0, 1, 4, 5]
    assert found["rot90_matrix"] == [2.0, 5.0, 1.0, 4.0, 0.0, 3.0]  # a matrix is right
    assert found["nearest_exact2d_bw"] == [1.0, 1.0, 0.0, 1.0, 0.0]  # torch: [1, 0, 1, 0, 1]
    assert found["adaptive"] == [0.0, 1.5, 3.5]  # torch: [0.5, 2, 3.5]
    assert found["aa"] == [0.5, 2.5]  # torch: [0.714, 2.286]
    assert found["ldl"] == "InterpreterError"  # the emulator's store guard: 39 elements past LD
    assert found["ldl65"] == "ValueError"  # "matrix size 65 exceeds maximum 64"; torch factors it
    assert found["exponential_min"] == pytest.approx(0.1098, abs=1e-4)  # torch's: 1.9e-5


def test_the_reproductions_torch_side():
    """What the reproductions above give in torch (float64), as the descriptions say."""
    A = torch.ops.aten
    assert A._unsafe_masked_index(
        torch.arange(25.0).reshape(5, 5), torch.tensor([True, True]), [torch.tensor([0, 1]), torch.tensor([2, 3])], 0.0
    ).tolist() == [2.0, 8.0]
    assert torch.logcumsumexp(torch.tensor([0.0, 200.0], dtype=torch.float64), 0).tolist() == [0.0, 200.0]
    x1, x2 = torch.tensor([[[0.0, 0.0]]]), torch.tensor([[[1.0, 2.0]]])
    d1 = torch.cdist(x1, x2, p=1.0)
    assert A._cdist_backward(torch.ones_like(d1), x1, x2, 1.0, d1).tolist() == [[[-1.0, -1.0]]]
    assert torch.rot90(torch.arange(8.0).reshape(2, 2, 2), 1, [0, 1]).flatten().tolist() == [2, 3, 6, 7, 0, 1, 4, 5]
    grad = A._upsample_nearest_exact2d_backward(torch.ones(1, 1, 1, 3), [1, 3], [1, 1, 1, 5], None, None)
    assert grad.flatten().tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    pooled = A._adaptive_avg_pool2d(torch.arange(5.0, dtype=torch.float64).reshape(1, 1, 1, 5), [1, 3])
    assert pooled.flatten().tolist() == [0.5, 2.0, 3.5]
    aa = A._upsample_bilinear2d_aa(
        torch.arange(4.0, dtype=torch.float64).reshape(1, 1, 1, 4), [1, 2], False, None, None
    )
    assert aa.flatten().tolist() == pytest.approx([5 / 7, 16 / 7])
    assert json.dumps(A.reflection_pad3d_backward(torch.randn(3, 5, 7, 7), torch.randn(3, 3, 5, 5), [1] * 6).shape) == (
        "[3, 3, 5, 5]"
    )


# -- the second batch: the generators' overloads (issue 57's 5.4 scoreboard, no uncatalogued failure)


def _adam(weight_decay=0.0, amsgrad=False, dtype=torch.float32, param=None):
    params = [torch.randn(17, 33).to(dtype) if param is None else param]
    state = [[torch.rand(17, 33).to(dtype)] for _ in range(3)]
    maxes = [torch.rand(17, 33).to(dtype)] if amsgrad else []
    kwargs = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    return (
        params,
        (*state, maxes, [torch.tensor(3.0)]),
        {**kwargs, "weight_decay": weight_decay, "amsgrad": amsgrad, "maximize": True},
    )


JAGGED = [torch.tensor([0, 5, 5, 17])]
GEN = "gen:"


@pytest.mark.parametrize(
    "defect, case, sample, applies",
    [
        ("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _case("_fused_adam", GEN + "_fused_adam"),
         _adam(weight_decay=0.01), True),
        ("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _case("_fused_adam", GEN + "_fused_adam"),
         _adam(amsgrad=True), True),
        ("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _case("_fused_adam", GEN + "_fused_adam"),
         _adam(), False),  # Adam without decay or amsgrad: FlagGems' is torch's
        ("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _case("_fused_adam", GEN + "_fused_adam"),
         _adam(weight_decay=0.01, param=torch.zeros(17, 33)), False),  # nothing to decay
        ("fused_adam_decoupled_decay_and_corrected_amsgrad_max", _case("_fused_adam", GEN + "_fused_adam"),
         _adam(weight_decay=0.01, dtype=torch.float16), False),  # refused: float32 only
        ("jagged_to_padded_dense_values_1d_uncut",
         _case("_jagged_to_padded_dense_forward", GEN + "_jagged_to_padded_dense_forward"),
         (T(17, 33), (JAGGED, [13], 0.0), {}), True),  # 2-D values
        ("jagged_to_padded_dense_values_1d_uncut",
         _case("_jagged_to_padded_dense_forward", GEN + "_jagged_to_padded_dense_forward"),
         (T(17), (JAGGED, [9], 0.0), {}), True),  # the 12-long sequence is cut to 9
        ("jagged_to_padded_dense_values_1d_uncut",
         _case("_jagged_to_padded_dense_forward", GEN + "_jagged_to_padded_dense_forward"),
         (T(17), (JAGGED, [13], 0.0), {}), False),
        ("prelu_kernel_backward_slope_on_last_dim",
         _case("_prelu_kernel_backward", GEN + "_prelu_kernel_backward", "backward"),
         (T(2, 17, 33), (T(2, 17, 33), T(1, 17, 1)), {}), True),  # as torch's prelu passes it
        ("prelu_kernel_backward_slope_on_last_dim",
         _case("_prelu_kernel_backward", GEN + "_prelu_kernel_backward", "backward"),
         (T(2, 17, 33), (T(2, 17, 33), T(33)), {}), False),  # a slope per element of the last dim
        ("prelu_kernel_backward_slope_on_last_dim",
         _case("_prelu_kernel_backward", GEN + "_prelu_kernel_backward", "backward"),
         (T(129), (T(129), T(1)), {}), False),  # one shared slope
        ("prelu_kernel_backward_slope_on_last_dim", _case("_prelu_kernel_backward", "nn.functional.prelu", "backward"),
         (T(2, 3, 4), (T(3),), {}), True),  # F.prelu's autograd: channels on dim 1
        ("prelu_kernel_backward_slope_on_last_dim", _case("_prelu_kernel_backward", "nn.functional.prelu", "backward"),
         (T(2, 3), (T(3),), {}), False),  # a 2-D input's channels are its last dim
        ("thnn_fused_lstm_cell_workspace_not_activated",
         _case("_thnn_fused_lstm_cell", GEN + "_thnn_fused_lstm_cell"), (T(3, 68), (T(3, 68), T(3, 17)), {}), True),
        ("small_n_ignores_k", _case("special_log_softmax", GEN + "special_log_softmax"), (T(17, 33), (0,), {}), True),
        ("small_n_ignores_k", _case("special_log_softmax", GEN + "special_log_softmax"), (T(17, 33), (-2,), {}), True),
        ("small_n_ignores_k", _case("special_log_softmax", GEN + "special_log_softmax"), (T(17, 33), (1,), {}), False),
        ("small_n_ignores_k", _case("special_log_softmax", GEN + "special_log_softmax"), (T(1, 33), (0,), {}), False),
        ("small_n_ignores_k", _case("special_log_softmax", GEN + "special_log_softmax"), (T(1025, 3), (0,), {}),
         False),  # the two-pass kernel
        ("special_gammainc_out_none", _case("special_gammainc", GEN + "special_gammainc"), (T(5), (T(5),), {}), True),
        ("special_gammainc_out_none", _case("special_gammainc", "special.gammainc", "out"), (T(5), (T(5),), {}),
         False),
        ("hermite_polynomial_h_expanded_fp32",
         _case("special_hermite_polynomial_h", GEN + "special_hermite_polynomial_h"),
         (torch.tensor([-2.93, 0.5]), (torch.tensor([8.0, 8.0]),), {}), True),
        ("hermite_polynomial_h_expanded_fp32",
         _case("special_hermite_polynomial_h", GEN + "special_hermite_polynomial_h"),
         (torch.tensor([-2.93, 0.5]), (torch.tensor([3.0, 3.0]),), {}), False),  # a low degree
        ("hermite_polynomial_h_expanded_fp32",
         _case("special_hermite_polynomial_h", GEN + "special_hermite_polynomial_h"),
         (torch.tensor([-2.93]).half(), (torch.tensor([8.0]).half(),), {}), False),  # refused
        ("hermite_polynomial_h_expanded_fp32",
         _case("special_hermite_polynomial_h", GEN + "special_hermite_polynomial_h"),
         (torch.tensor([-2.93]), (torch.tensor([10.0]),), {}), False),  # refused: n > 9
        ("arange_float_bounds_give_int64", _case("arange.start_step", "arange"), (0, (3, 0.5), {}), True),
        ("arange_float_bounds_give_int64", _case("arange", "arange"), (5.0, (), {}), True),
        ("arange_float_bounds_give_int64", _case("arange", "arange"), (0, (), {"end": 3.1}), True),
        ("arange_float_bounds_give_int64", _case("arange.start_step", "arange"),
         (0, (3, 0.5), {"dtype": torch.float32}), False),
        ("arange_float_bounds_give_int64", _case("arange.start", "arange"), (0, (5,), {}), False),
    ],
)  # fmt: skip
def test_a_generated_overloads_predicate_applies_to_the_calls_its_defect_meets(defect, case, sample, applies):
    assert _applies(defect, case, sample) is applies
    # 5.0.2 registers arange alone of these, with the same arange_start
    assert _applies(defect, case, sample, "5.0.2") is (applies and defect == "arange_float_bounds_give_int64")


@pytest.mark.parametrize(
    "overload, caller, index, transform, found",
    [
        ("_fused_adam", "op", 0, "none", ["fused_adam_decoupled_decay_and_corrected_amsgrad_max"]),
        ("_fused_adam", "op", 1, "boundary", ["fused_adam_decoupled_decay_and_corrected_amsgrad_max"]),
        ("_jagged_to_padded_dense_forward", "op", 0, "none", ["jagged_to_padded_dense_values_1d_uncut"]),
        ("_prelu_kernel_backward", "backward", 0, "boundary", ["prelu_kernel_backward_slope_on_last_dim"]),
        ("_prelu_kernel_backward", "backward", 1, "none", []),
        ("_thnn_fused_lstm_cell", "op", 0, "none", ["thnn_fused_lstm_cell_workspace_not_activated"]),
        ("_thnn_fused_lstm_cell_backward_impl", "op", 0, "none", []),
        ("special_log_softmax", "op", 0, "none", ["small_n_ignores_k"]),
        ("special_log_softmax", "op", 1, "boundary", []),
        ("special_gammainc", "op", 0, "none", ["special_gammainc_out_none"]),
        ("special_hermite_polynomial_h", "op", 0, "boundary", ["hermite_polynomial_h_expanded_fp32"]),
        ("special_hermite_polynomial_h", "op", 0, "none", []),  # every element within the allowance
        ("special_hermite_polynomial_h", "op", 1, "boundary", []),
    ],
)
def test_the_suites_own_samples_are_held_where_they_meet_a_defect(overload, caller, index, transform, found):
    """The generators' cases as the 5.4 cpu lane plans them (its quick sweep's budget): the
    catalogue holds the ones that failed there and no neighbour."""
    from pytest_fl_contract.overloads.contract import BUDGET

    case = Case(overload, Source(GEN + overload, caller), index, "float32", transform)
    assert defects.known(case, "5.4.0.dev0", BUDGET[("quick", True)]) == found


def test_the_oracle_holds_arange_to_torchs_dtype():
    """arange's STRICT on the scoreboard is no oracle blind spot: OpInfo's samples all pass a
    dtype. FlagGems' answer to torch.arange(0, 3, 0.5) is WRONG by its dtype."""
    meta = torch.arange(0, 3, 0.5)
    flag_gems_like = torch.tensor([0, 0, 1, 1, 2, 2])
    assert compare(flag_gems_like, meta, torch.arange(0, 3, 0.5, dtype=torch.float64)) == (
        "dtype torch.int64, torch torch.float32"
    )
    assert compare(meta.clone(), meta, torch.arange(0, 3, 0.5, dtype=torch.float64)) is None


REPRODUCTIONS_GENERATED = textwrap.dedent("""
    import json
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import torch, flag_gems
    from pytest_fl_contract.overloads.defects import _hermite_expanded
    A = torch.ops.aten
    FN = {name: fn for name, fn, *_ in flag_gems._FULL_CONFIG}

    def listed(result):
        if isinstance(result, (tuple, list)):
            return [listed(r) for r in result]
        return result.tolist() if hasattr(result, "tolist") else result

    def gems(f):
        try:
            with flag_gems.use_gems():
                return listed(f())
        except Exception as exc:
            return type(exc).__name__ + ": " + str(exc)[:80]

    found = {"arange": gems(lambda: [str(torch.arange(5.0).dtype), torch.arange(0, 3, 0.5)])}
    if "_fused_adam" in FN:
        adam = dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, maximize=False)
        one, zero, step = torch.ones(1), torch.zeros(1), torch.tensor(1.0)
        found["adam_decay"] = listed(FN["_fused_adam"]([one.clone()], [zero.clone()], [zero.clone()], [zero.clone()], [],
                                                       [step], weight_decay=0.1, amsgrad=False, **adam))
        found["adam_amsgrad"] = listed(FN["_fused_adam"]([zero.clone()], [one.clone()], [zero.clone()], [zero.clone()],
                                                         [torch.full((1,), 0.01)], [step], weight_decay=0.0,
                                                         amsgrad=True, **adam))
        offsets = [torch.tensor([0, 2, 5])]
        found["jagged_cut"] = gems(lambda: A._jagged_to_padded_dense_forward(torch.arange(5.0), offsets, [2]))
        found["jagged_2d"] = gems(lambda: list(A._jagged_to_padded_dense_forward(torch.ones(5, 3), offsets, [3]).shape))
        w = torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1)
        found["prelu_4"] = gems(lambda: A._prelu_kernel_backward(torch.ones(1, 3, 4), -torch.ones(1, 3, 4), w)[0])
        found["prelu_3"] = gems(lambda: A._prelu_kernel_backward(torch.ones(1, 3, 3), -torch.ones(1, 3, 3), w)[0])
        gates = torch.zeros(1, 4)
        hy, cy, ws = FN["_thnn_fused_lstm_cell"](gates, gates, torch.zeros(1, 1))
        back = FN["_thnn_fused_lstm_cell_backward_impl"](torch.ones(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), cy, ws, True)
        found["lstm"] = {"workspace": listed(ws), "grad_gates": listed(back[0]), "grad_cx": listed(back[1])}
        found["log_softmax"] = listed(FN["special_log_softmax"](torch.arange(6.0).reshape(2, 3), 0)[0])
        one = torch.tensor([1.0])
        found["gammainc"] = gems(lambda: torch.special.gammainc(one, one))
        x, n = torch.tensor([-2.93, -2.27]), torch.tensor([8.0, 9.0])
        found["hermite"] = gems(lambda: torch.special.hermite_polynomial_h(x, n))
        grid = torch.linspace(-3, 3, 601).repeat(10, 1)
        degrees = torch.arange(10.0).reshape(10, 1).expand(10, 601)
        found["hermite_emulated"] = torch.equal(FN["special_hermite_polynomial_h"](grid, degrees), _hermite_expanded(grid, degrees))
    print("RESULT " + json.dumps(found))
""")


def _arange_reproduced(found):
    assert found["arange"] == ["torch.int64", [0, 0, 1, 1, 2, 2]]  # torch: float32, [0, 0.5, ..., 2.5]


@pytest.mark.slow
def test_the_generated_overloads_reproductions_fail_on_54(fg54_site):
    """Each new entry's minimal reproduction, as its description gives it, on FlagGems 5.4."""
    found = fresh_result(REPRODUCTIONS_GENERATED, pythonpath=[str(fg54_site), str(ROOT)])
    _arange_reproduced(found)
    assert found["adam_decay"][0] == [pytest.approx([0.99])] and found["adam_decay"][2] == [[0.0]]  # torch: 0.9, 0.01
    assert found["adam_amsgrad"][0] == [pytest.approx([-0.1])] and found["adam_amsgrad"][4] == [[1.0]]  # -0.0316, 0.01
    assert "_jagged_to_padded_dense_forward_kernel stored 1 element(s)" in found["jagged_cut"]  # the store guard
    assert found["jagged_2d"] == [2, 3]  # torch: [2, 3, 3]
    assert found["prelu_4"] == "AssertionError: Weight numel (3) must equal last dimension size (4)."
    assert found["prelu_3"] == [[[1.0, 2.0, 3.0]] * 3]  # torch: rows [1, 1, 1], [2, 2, 2], [3, 3, 3]
    assert found["lstm"] == {"workspace": [[0.0] * 4], "grad_gates": [[0.0] * 4], "grad_cx": [[0.0]]}
    assert found["log_softmax"] == pytest.approx([-1.3133] * 3, abs=1e-4)  # row 0; torch: -3.0486
    assert found["gammainc"] == "AttributeError: 'NoneType' object has no attribute 'device'"
    assert found["hermite"] == pytest.approx([-272.1328, 1258.2031], abs=1e-4)  # torch: -272.3785, 1257.7782
    assert found["hermite_emulated"] is True  # the predicate's arithmetic is FlagGems', bit for bit


@pytest.mark.slow
def test_arange_reproduction_fails_on_502():
    """The venv's FlagGems (5.0.2) has arange's defect too; the other overloads it registers not."""
    found = fresh_result(REPRODUCTIONS_GENERATED)
    _arange_reproduced(found)
    assert set(found) == {"arange"}


def test_the_generated_overloads_reproductions_torch_side():
    """What the reproductions above give in torch (float64 where it has the kernel)."""
    A = torch.ops.aten
    adam = {"lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "maximize": False}
    one, zero, step = torch.ones(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64), torch.tensor(1.0)
    decay = A._fused_adam([one.clone()], [zero.clone()], [zero.clone()], [zero.clone()], [], [step],
                          weight_decay=0.1, amsgrad=False, **adam)  # fmt: skip
    assert decay[0][0].item() == pytest.approx(0.9) and decay[2][0].item() == pytest.approx(0.01)
    ams = A._fused_adam([zero.clone()], [one.clone()], [zero.clone()], [zero.clone()], [torch.full((1,), 0.01).double()],
                        [step], weight_decay=0.0, amsgrad=True, **adam)  # fmt: skip
    assert ams[0][0].item() == pytest.approx(-0.1 / math.sqrt(10), rel=1e-6) and ams[4][0].item() == pytest.approx(0.01)
    offsets = [torch.tensor([0, 2, 5])]
    assert A._jagged_to_padded_dense_forward(torch.arange(5.0), offsets, [2]).tolist() == [[0, 1], [2, 3]]
    assert list(A._jagged_to_padded_dense_forward(torch.ones(5, 3), offsets, [3]).shape) == [2, 3, 3]
    w = torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1)
    grad = A._prelu_kernel_backward(torch.ones(1, 3, 4), -torch.ones(1, 3, 4), w)[0]
    assert grad.tolist() == [[[1.0] * 4, [2.0] * 4, [3.0] * 4]]
    gates = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
    cx = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    i, f, g, o = gates.chunk(4, 1)
    (torch.sigmoid(o) * torch.tanh(torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g))).sum().backward()
    assert gates.grad.tolist() == [[0.0, 0.0, 0.25, 0.0]] and cx.grad.tolist() == [[0.25]]
    assert torch.special.log_softmax(torch.arange(6.0).reshape(2, 3), 0)[0].tolist() == pytest.approx([-3.0486] * 3,
                                                                                                       abs=1e-4)  # fmt: skip
    assert torch.special.gammainc(torch.tensor([1.0]), torch.tensor([1.0])).item() == pytest.approx(0.6321, abs=1e-4)
    herm = torch.special.hermite_polynomial_h(torch.tensor([-2.93, -2.27]).double(), torch.tensor([8.0, 9.0]).double())
    assert herm.tolist() == pytest.approx([-272.3749, 1257.7735], abs=1e-3)
    assert torch.arange(0, 3, 0.5).dtype == torch.float32
