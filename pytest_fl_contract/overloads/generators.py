"""Explicit sample generators: overloads OpInfo has no samples for, each small.

A generator takes a dtype and returns a few ``SampleInput``s; ``samples.candidates`` offers it as the
source ``gen:<base>`` next to the OpInfo matches, and the probe (``samples.reaches``) still proves each
sample dispatches to the overload.  Kept apart from ``samples`` so the table can grow without touching
the OpInfo matching; imports go one way (``samples`` imports this module, never the reverse).
"""

from __future__ import annotations

from typing import Any, Callable

GENERATED_DTYPES = ("float32", "float16", "bfloat16")


def _sample(*args: Any, **kwargs: Any) -> Any:
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(args[0], args=tuple(args[1:]), kwargs=kwargs)


def _copy(dtype: Any) -> list[Any]:
    import torch

    return [
        _sample(torch.empty(5, 7, dtype=dtype), torch.randn(5, 7).to(dtype)),
        _sample(torch.empty(5, 7, dtype=dtype), torch.randn(7).to(dtype)),  # broadcast
        _sample(torch.empty(5, 7, dtype=dtype), torch.randint(-9, 9, (5, 7))),
    ]  # another dtype


def _to_copy(dtype: Any) -> list[Any]:
    import torch

    x = torch.randn(5, 7).to(dtype) * 4
    return [
        _sample(x, dtype=torch.float32 if dtype != torch.float32 else torch.float16),
        _sample(x, dtype=torch.int32),
        _sample(x.t(), dtype=dtype),
        _sample(x, dtype=torch.bool),
    ]


def _weight_norm(dtype: Any) -> list[Any]:
    import torch

    return [
        _sample(torch.randn(6, 5).to(dtype), torch.randn(6, 1).to(dtype), 0),
        _sample(torch.randn(4, 3, 5).to(dtype), torch.randn(1, 1, 5).to(dtype), 2),
    ]


def _rand(dtype: Any) -> list[Any]:
    return [_sample([40, 33], dtype=dtype), _sample([1025], dtype=dtype)]


def _randperm(dtype: Any) -> list[Any]:
    import torch

    return [_sample(257, dtype=torch.int64), _sample(17, dtype=torch.int64)]


def _assert_async(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.tensor(True)), _sample(torch.tensor(3.0).to(dtype))]


def _is_all_true(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.ones(33, dtype=torch.bool)), _sample(torch.rand(17) > 0.1)]


def _lift(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.randn(5, 7).to(dtype))]


def _native_dropout(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.randn(33, 40).to(dtype), 0.3, True), _sample(torch.randn(1025).to(dtype), 0.5, True)]


def _native_dropout_backward(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.randn(33, 40).to(dtype), torch.rand(33, 40) > 0.3, 1 / 0.7)]


def _weight_norm_backward(dtype: Any) -> list[Any]:
    """(grad_w, saved_v, saved_g, saved_norms, dim): the norms as torch's forward saves them."""
    import torch

    found = []
    for v, g, dim in ((torch.randn(6, 5), torch.randn(6, 1), 0), (torch.randn(4, 3, 5), torch.randn(1, 1, 5), 2)):
        w, norms = torch._weight_norm_interface(v, g, dim)
        found.append(_sample(torch.randn(w.shape).to(dtype), v.to(dtype), g.to(dtype), norms, dim))
    return found


# -- ops a model calls that OpInfo files no samples for: sizes past tile edges (17, 33, 129) where cheap


def _unary(lo: float, hi: float) -> Callable[[Any], list[Any]]:
    """An elementwise op of one tensor, on its domain [lo, hi]: a 2-D tensor past a tile edge and
    a 1-D one past a block."""

    def generate(dtype: Any) -> list[Any]:
        import torch

        return [
            _sample((torch.rand(17, 33) * (hi - lo) + lo).to(dtype)),
            _sample((torch.rand(129) * (hi - lo) + lo).to(dtype)),
        ]

    return generate


def _polynomial(lo: float, hi: float) -> Callable[[Any], list[Any]]:
    """``special_*_polynomial_*(x, n)``: x on the polynomial's interval, n small whole degrees
    broadcast along the last dim (their values stay within a half type's range)."""

    def generate(dtype: Any) -> list[Any]:
        import torch

        x = (torch.rand(17, 33) * (hi - lo) + lo).to(dtype)
        return [
            _sample(x, torch.randint(0, 7, (33,)).to(dtype)),
            _sample(x, torch.full((17, 33), 5.0).to(dtype)),
        ]

    return generate


def _batch_norm_no_update(dtype: Any) -> list[Any]:
    """(input, weight, bias, running_mean, running_var, momentum, eps): inference batch norm, the
    statistics in the input's dtype (torch's CPU kernel takes no other); and without an affine."""
    import torch

    c = 17
    mean, var = torch.randn(c).to(dtype), (torch.rand(c) + 0.5).to(dtype)
    return [
        _sample(
            torch.randn(2, c, 33).to(dtype), torch.randn(c).to(dtype), torch.randn(c).to(dtype), mean, var, 0.1, 1e-5
        ),
        _sample(torch.randn(3, c).to(dtype), None, None, mean, var, 0.1, 1e-3),
    ]


def _euclidean_dist(dtype: Any) -> list[Any]:
    import torch

    return [
        _sample(torch.randn(17, 5).to(dtype), torch.randn(33, 5).to(dtype)),
        _sample(torch.randn(2, 7, 3).to(dtype), torch.randn(2, 9, 3).to(dtype)),
    ]


def _prelu_kernel_backward(dtype: Any) -> list[Any]:
    """(grad_output, self, weight): one slope per channel (dim 1), shaped to broadcast as
    ``prelu`` passes it, and one shared."""
    import torch

    x = torch.randn(2, 17, 33)
    return [
        _sample(torch.randn(2, 17, 33).to(dtype), x.to(dtype), torch.rand(1, 17, 1).to(dtype)),
        _sample(torch.randn(129).to(dtype), torch.randn(129).to(dtype), torch.rand(1).to(dtype)),
    ]


def _resize_output(dtype: Any) -> list[Any]:
    """(self, size, device): an out= buffer already the size (kept as it is) and one larger than
    needed (shrunk: its values are its storage's first ones, defined)."""
    import torch

    return [
        _sample(torch.randn(5, 7).to(dtype), [5, 7], torch.device("cpu")),
        _sample(torch.randn(4, 9).to(dtype), [3, 7], torch.device("cpu")),
    ]


def _fused_adam(dtype: Any) -> list[Any]:
    """The functional fused Adam step over two parameters (one past a tile edge, one 1-D past a
    block), with weight decay; and with amsgrad and maximize.  Steps are float32 scalars, as
    ``torch.optim.Adam(fused=True)`` keeps them."""
    import torch

    def group(amsgrad: bool) -> list[list[Any]]:
        shapes = ((17, 33), (129,))
        params = [torch.randn(s).to(dtype) for s in shapes]
        grads = [torch.randn(s).to(dtype) for s in shapes]
        exp_avgs = [(torch.randn(s) * 0.1).to(dtype) for s in shapes]
        exp_avg_sqs = [(torch.rand(s) * 0.1).to(dtype) for s in shapes]
        maxes = [(torch.rand(s) * 0.2).to(dtype) for s in shapes] if amsgrad else []
        steps = [torch.tensor(3.0), torch.tensor(7.0)]
        return [params, grads, exp_avgs, exp_avg_sqs, maxes, steps]

    common = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    return [
        _sample(*group(False), **common, weight_decay=0.01, amsgrad=False, maximize=False),
        _sample(*group(True), **common, weight_decay=0.0, amsgrad=True, maximize=True),
    ]


def _grouped_mm(dtype: Any) -> list[Any]:
    """(self, mat2, offs): a 2-D stack of two groups' rows (17 and 33) against a 3-D batch of
    weights, the MoE layout; row strides multiples of 16 bytes, as torch requires."""
    import torch

    offs = torch.tensor([17, 50], dtype=torch.int32)
    return [_sample(torch.randn(50, 32).to(dtype), torch.randn(2, 32, 24).to(dtype), offs)]


def _jagged_to_padded_dense_forward(dtype: Any) -> list[Any]:
    """(values, offsets, max_lengths, padding_value): three sequences of 5, 0 and 12 rows padded
    to 9 (the longest cut), and padded past every sequence."""
    import torch

    offsets = [torch.tensor([0, 5, 5, 17])]
    values = torch.randn(17, 33).to(dtype)
    return [_sample(values, offsets, [9], 0.0), _sample(values, offsets, [13], -1.5)]


def _unsafe_view(dtype: Any) -> list[Any]:
    import torch

    x = torch.randn(17, 33).to(dtype)
    return [_sample(x, [33, 17]), _sample(x, [561])]


def _affine_grid_generator(dtype: Any) -> list[Any]:
    """(theta, size, align_corners): 2-D grids, H and W past tile edges."""
    import torch

    theta = torch.randn(2, 2, 3).to(dtype)
    return [_sample(theta, [2, 3, 17, 33], False), _sample(theta, [2, 1, 5, 7], True)]


def _col2im(dtype: Any) -> list[Any]:
    """(self, output_size, kernel_size, dilation, padding, stride): fold of 2 channels, 2x3
    windows over a 9x11 image; and strided, padded and dilated."""
    import torch

    return [
        _sample(torch.randn(1, 12, 72).to(dtype), [9, 11], [2, 3], [1, 1], [0, 0], [1, 1]),
        _sample(torch.randn(2, 8, 30).to(dtype), [9, 11], [2, 2], [2, 1], [1, 1], [2, 2]),
    ]


def _dequantize(dtype: Any) -> list[Any]:
    """A float tensor's dequantize is its float32 copy (torch's CPU kernel)."""
    import torch

    return [_sample(torch.randn(17, 33).to(dtype))]


def _feature_dropout(dtype: Any) -> list[Any]:
    """(input, p, train): the draws' values are the generator's, so the cases are the ones whose
    result is defined: evaluation (identity), p=0 (identity) and p=1 (zeros)."""
    import torch

    x = torch.randn(2, 17, 5, 3).to(dtype)
    return [_sample(x, 0.5, False), _sample(x, 0.0, True), _sample(x, 1.0, True)]


def _is_nonzero(dtype: Any) -> list[Any]:
    import torch

    return [_sample(torch.tensor([0.5]).to(dtype)), _sample(torch.tensor(0.0).to(dtype))]


def _nonzero_numpy(dtype: Any) -> list[Any]:
    import torch

    x = torch.randn(17, 33)
    return [_sample((x * (x.abs() > 0.7)).to(dtype)), _sample(torch.zeros(5).to(dtype))]


def _poisson(dtype: Any) -> list[Any]:
    """Rates from 0 to 12: a random op, judged by its draws' properties."""
    import torch

    return [_sample((torch.rand(33, 40) * 12).to(dtype))]


def _range(dtype: Any) -> list[Any]:
    """(start, end, dtype=): both ends included, a count past a block."""
    return [_sample(-3.5, 126.5, dtype=dtype), _sample(0, 16, dtype=dtype)]


def _special_log_softmax(dtype: Any) -> list[Any]:
    import torch

    x = torch.randn(17, 33).to(dtype)
    return [_sample(x, 0), _sample(x, 1), _sample(x, 1, dtype=torch.float32)]


def _special_logsumexp(dtype: Any) -> list[Any]:
    import torch

    x = (torch.randn(17, 33) * 4).to(dtype)
    return [_sample(x, [0]), _sample(x, [1], True)]


def _special_gammainc(dtype: Any) -> list[Any]:
    import torch

    return [_sample((torch.rand(17, 33) * 5 + 0.5).to(dtype), (torch.rand(17, 33) * 10).to(dtype))]


def _unique_dim(dtype: Any) -> list[Any]:
    """(self, dim, sorted, return_inverse, return_counts): 17 rows drawn from 4, along dim 0 and
    along dim 1 of its transpose."""
    import torch

    rows = torch.randint(-3, 4, (4, 5)).float()
    x = rows[torch.randint(0, 4, (17,))].to(dtype)
    return [_sample(x, 0, True, True, True), _sample(x.t().contiguous(), 1, True, False, True)]


# -- device-only overloads: torch's float64 reference is ``references``' (registered on the CPU)


def _masked_scale(dtype: Any) -> list[Any]:
    """(self, mask, scale): dropout's apply step, the mask uint8 as torch's CUDA dropout keeps it."""
    import torch

    return [
        _sample(torch.randn(33, 40).to(dtype), (torch.rand(33, 40) > 0.3).to(torch.uint8), 1 / 0.7),
        _sample(torch.randn(129).to(dtype), (torch.rand(129) > 0.5).to(torch.uint8), 2.0),
    ]


def _conv_depthwise2d(dtype: Any) -> list[Any]:
    """(self, weight, kernel_size, bias, stride, padding, dilation): two outputs a channel, a
    width past a tile edge; and strided, dilated, without a bias."""
    import torch

    x = torch.randn(2, 4, 9, 17).to(dtype)
    return [
        _sample(x, torch.randn(8, 1, 3, 3).to(dtype), [3, 3], torch.randn(8).to(dtype), [1, 1], [1, 1], [1, 1]),
        _sample(x, torch.randn(4, 1, 3, 2).to(dtype), [3, 2], None, [2, 1], [0, 1], [2, 1]),
    ]


def _cudnn_convolution(dtype: Any) -> list[Any]:
    """(self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)."""
    import torch

    x = torch.randn(2, 4, 9, 17).to(dtype)
    return [
        _sample(x, torch.randn(6, 4, 3, 3).to(dtype), [1, 1], [1, 1], [1, 1], 1, False, False, False),
        _sample(x, torch.randn(6, 2, 3, 3).to(dtype), [0, 1], [2, 1], [1, 2], 2, False, True, False),
    ]


def _linear_backward(dtype: Any) -> list[Any]:
    """(self, grad_output, weight, output_mask): a 3-D input (batch dims folded into the
    weight's gradient)."""
    import torch

    return [
        _sample(
            torch.randn(2, 9, 33).to(dtype), torch.randn(2, 9, 17).to(dtype), torch.randn(17, 33).to(dtype), [True] * 3
        )
    ]


def _max_pool2d_backward(dtype: Any) -> list[Any]:
    """(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode): overlapping
    padded windows, and ceil mode with a stride equal to the window."""
    import torch
    import torch.nn.functional as F

    x = torch.randn(2, 3, 9, 17)
    found = []
    for k, s, p, c in (([3, 3], [2, 2], [1, 1], False), ([2, 2], [2, 2], [0, 0], True)):
        shape = F.max_pool2d(x, k, s, p, 1, ceil_mode=c).shape
        found.append(_sample(torch.randn(shape).to(dtype), x.to(dtype), k, s, p, [1, 1], c))
    return found


def _lstm_cell(dtype: Any) -> list[Any]:
    """(input_gates, hidden_gates, cx, input_bias, hidden_bias): hidden size 17, with and
    without biases."""
    import torch

    b, h = 3, 17
    gates = [torch.randn(b, 4 * h).to(dtype) for _ in range(2)]
    cx = torch.randn(b, h).to(dtype)
    return [
        _sample(*gates, cx, torch.randn(4 * h).to(dtype), torch.randn(4 * h).to(dtype)),
        _sample(*gates, cx),
    ]


def _lstm_cell_backward(dtype: Any) -> list[Any]:
    """(grad_hy, grad_cy, cx, cy, workspace, has_bias): the saved tensors of a forward step
    (``references``' cell, as the CUDA kernel saves them)."""
    import torch

    from .references import REFERENCES

    b, h = 3, 17
    cx = torch.randn(b, h)
    _, cy, workspace = REFERENCES["_thnn_fused_lstm_cell"](torch.randn(b, 4 * h), torch.randn(b, 4 * h), cx)
    grads = [torch.randn(b, h).to(dtype) for _ in range(2)]
    return [_sample(*grads, cx.to(dtype), cy.to(dtype), workspace.to(dtype), True)]


# -- overloads OpInfo's samples never reach: the call they make is not the one a model's dispatch makes


def _conj(dtype: Any) -> list[Any]:
    """``_conj`` takes complex tensors only (the case's dtype names their real part's type; no
    complex bfloat16 exists): OpInfo's conj samples are drawn in real dtypes, where conj is the
    identity and never dispatches to it."""
    import torch

    complex_of = {torch.float32: torch.complex64, torch.float16: torch.complex32}
    if dtype not in complex_of:
        return []
    return [
        _sample(torch.randn(17, 33, dtype=torch.complex64).to(complex_of[dtype])),
        _sample(torch.randn(129, dtype=torch.complex64).to(complex_of[dtype])),
    ]


def _soft_margin_loss_backward(dtype: Any) -> list[Any]:
    """(grad_output, self, target, reduction): torch's soft_margin_loss is composite, so autograd
    of it never calls this; every reduction (0 none, 1 mean, 2 sum)."""
    import torch

    x = torch.randn(17, 33).to(dtype)
    target = (torch.randint(0, 2, (17, 33)) * 2 - 1).to(dtype)
    return [
        _sample(torch.randn(17, 33).to(dtype), x, target, 0),
        _sample(torch.randn(()).to(dtype), x, target, 1),
        _sample(torch.randn(()).to(dtype), x, target, 2),
    ]


def _rrelu_with_noise_functional(dtype: Any) -> list[Any]:
    """(self, noise, lower, upper, training): evaluation (the slope the mean of the bounds, the
    noise returned as it came) and training (drawn slopes: a random op, judged by property)."""
    import torch

    x = torch.randn(33, 40).to(dtype)
    return [
        _sample(x, torch.ones(33, 40).to(dtype), 0.125, 1 / 3, False),
        _sample(x, torch.ones(33, 40).to(dtype), 0.1, 0.3, True),
    ]


def _upsample_bicubic2d_aa_backward(dtype: Any) -> list[Any]:
    """(grad_output, output_size, input_size, align_corners, scales_h, scales_w): antialiased
    downsampling (where the filter spans several inputs) and upsampling; OpInfo's interpolate
    samples have no antialias."""
    import torch

    return [
        _sample(torch.randn(2, 3, 5, 7).to(dtype), [5, 7], [2, 3, 17, 33], False, None, None),
        _sample(torch.randn(1, 2, 17, 9).to(dtype), [17, 9], [1, 2, 5, 4], True, None, None),
    ]


GENERATORS: dict[str, Callable[[Any], list[Any]]] = {
    "native_dropout": _native_dropout,
    "native_dropout_backward": _native_dropout_backward,
    "_weight_norm_interface_backward": _weight_norm_backward,
    "copy_": _copy,
    "_to_copy": _to_copy,
    "_weight_norm_interface": _weight_norm,
    "rand": _rand,
    "randperm": _randperm,
    "_assert_async": _assert_async,
    "_is_all_true": _is_all_true,
    "lift_fresh_copy": _lift,
    "_batch_norm_no_update": _batch_norm_no_update,
    "_euclidean_dist": _euclidean_dist,
    "_prelu_kernel_backward": _prelu_kernel_backward,
    "_resize_output": _resize_output,
    "_fused_adam": _fused_adam,
    "_grouped_mm": _grouped_mm,
    "_jagged_to_padded_dense_forward": _jagged_to_padded_dense_forward,
    "_unsafe_view": _unsafe_view,
    "affine_grid_generator": _affine_grid_generator,
    "col2im": _col2im,
    "dequantize": _dequantize,
    "feature_dropout": _feature_dropout,
    "feature_dropout_": _feature_dropout,
    "is_nonzero": _is_nonzero,
    "lift": _lift,
    "nonzero_numpy": _nonzero_numpy,
    "poisson": _poisson,
    "range": _range,
    "special_airy_ai": _unary(-8.0, 4.0),
    "special_digamma": _unary(0.5, 10.0),
    "special_erfinv": _unary(-0.99, 0.99),
    "special_gammainc": _special_gammainc,
    "special_log_softmax": _special_log_softmax,
    "special_logsumexp": _special_logsumexp,
    "special_chebyshev_polynomial_v": _polynomial(-1.0, 1.0),
    "special_chebyshev_polynomial_w": _polynomial(-1.0, 1.0),
    "special_hermite_polynomial_h": _polynomial(-2.0, 2.0),
    "special_shifted_chebyshev_polynomial_u": _polynomial(0.0, 1.0),
    "unique_dim": _unique_dim,
    "_masked_scale": _masked_scale,
    "_conv_depthwise2d": _conv_depthwise2d,
    "cudnn_convolution": _cudnn_convolution,
    "linear_backward": _linear_backward,
    "max_pool2d_backward": _max_pool2d_backward,
    "_thnn_fused_lstm_cell": _lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": _lstm_cell_backward,
    "_conj": _conj,
    "soft_margin_loss_backward": _soft_margin_loss_backward,
    "rrelu_with_noise_functional": _rrelu_with_noise_functional,
    "_upsample_bicubic2d_aa_backward": _upsample_bicubic2d_aa_backward,
}
