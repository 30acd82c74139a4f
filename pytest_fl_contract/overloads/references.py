"""Host references of device-only overloads: torch has no CPU kernel for them, so no float64
reference either, and the suite left them UNTESTED.

Each reference is the overload's math written with other torch CPU ops (depthwise convolution
is ``conv2d`` with one group a channel; ``_masked_scale`` is ``x * mask * scale``), returning
exactly the outputs of its aten schema.  ``install`` registers them as the overload's CPU
kernel (one ``torch.library`` registration a process, never where torch has a CPU kernel of
its own): from then on everything that asks torch alone - the probe (``samples.reaches``),
torch's call in the case's dtype and in float64 (``cases.run``), the host-kernel test - reaches
the reference as it would reach a kernel of torch's, and FlagGems' function, registered over it
for one case, replaces it only while the case runs.
"""

from __future__ import annotations

from typing import Any, Callable

_LIBRARY: list[Any] = []  # the Library holding the registrations (alive as long as the process)


def _masked_scale(self: Any, mask: Any, scale: float) -> Any:
    return self * mask.to(self.dtype) * scale


def _conv_depthwise2d(
    self: Any, weight: Any, kernel_size: Any, bias: Any, stride: Any, padding: Any, dilation: Any
) -> Any:
    import torch.nn.functional as F

    return F.conv2d(self, weight, bias, list(stride), list(padding), list(dilation), groups=self.shape[1])


def _cudnn_convolution(
    self: Any,
    weight: Any,
    padding: Any,
    stride: Any,
    dilation: Any,
    groups: int,
    benchmark: bool,
    deterministic: bool,
    allow_tf32: bool,
) -> Any:
    import torch

    dims = self.dim() - 2
    return torch.convolution(self, weight, None, list(stride), list(padding), list(dilation), False, [0] * dims, groups)


def _linear_backward(self: Any, grad_output: Any, weight: Any, output_mask: Any) -> Any:
    """(grad_input, grad_weight, grad_bias) of ``y = x W^T + b`` over every leading dim."""
    go = grad_output.reshape(-1, grad_output.shape[-1])
    x = self.reshape(-1, self.shape[-1])
    return grad_output @ weight, go.t() @ x, go.sum(0)


def _max_pool2d_backward(
    grad_output: Any,
    self: Any,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Any:
    """Each window's gradient to the element ``max_pool2d`` picked (its first maximum)."""
    import torch
    import torch.nn.functional as F

    _, indices = F.max_pool2d(
        self, kernel_size, list(stride) or None, padding, dilation, ceil_mode=ceil_mode, return_indices=True
    )
    flat = torch.zeros(*self.shape[:-2], self.shape[-2] * self.shape[-1], dtype=grad_output.dtype)
    flat.scatter_add_(-1, indices.flatten(-2), grad_output.flatten(-2))
    return flat.reshape(self.shape)


def _lstm_cell(input_gates: Any, hidden_gates: Any, cx: Any, input_bias: Any = None, hidden_bias: Any = None) -> Any:
    """(hy, cy, workspace): gates in PyTorch's order (input, forget, cell, output); the
    workspace holds them activated, in that order, as the CUDA kernel saves them for backward."""
    import torch

    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias
    if hidden_bias is not None:
        gates = gates + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    cy = f * cx + i * g
    return o * torch.tanh(cy), cy, torch.cat([i, f, g, o], 1)


def _lstm_cell_backward(grad_hy: Any, grad_cy: Any, cx: Any, cy: Any, workspace: Any, has_bias: bool) -> Any:
    """(grad_gates, grad_cx, grad_bias) from the forward's workspace (grad_bias: the gates'
    gradient summed over the batch; torch gives none without a bias)."""
    import torch

    i, f, g, o = workspace.chunk(4, 1)
    gh = torch.zeros_like(cy) if grad_hy is None else grad_hy
    gc = torch.zeros_like(cy) if grad_cy is None else grad_cy
    tcy = torch.tanh(cy)
    gcy = gh * o * (1 - tcy * tcy) + gc
    grad_gates = torch.cat(
        [gcy * g * (1 - i) * i, gcy * cx * (1 - f) * f, gcy * i * (1 - g * g), gh * tcy * (1 - o) * o], 1
    )
    return grad_gates, gcy * f, grad_gates.sum(0) if has_bias else None


def _resize_output_(self: Any, size: Any, device: Any) -> Any:
    """Resized in place where its shape differs (``at::native::resize_output``)."""
    if list(self.shape) != list(size):
        self.resize_(list(size))
    return self


REFERENCES: dict[str, Callable[..., Any]] = {
    "_masked_scale": _masked_scale,
    "_conv_depthwise2d": _conv_depthwise2d,
    "cudnn_convolution": _cudnn_convolution,
    "linear_backward": _linear_backward,
    "max_pool2d_backward": _max_pool2d_backward,
    "_thnn_fused_lstm_cell": _lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": _lstm_cell_backward,
    "_resize_output_": _resize_output_,  # what torch's composite ``_resize_output`` calls
}


def install() -> None:
    """Register each reference as its overload's CPU kernel, once a process, where torch has
    none of its own (a later torch that gains one keeps it)."""
    if _LIBRARY:
        return
    import torch

    lib = torch.library.Library("aten", "IMPL")
    _LIBRARY.append(lib)
    for name, fn in REFERENCES.items():
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "CPU"):
            lib.impl(name, fn, "CPU")
