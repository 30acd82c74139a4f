"""Every kernel code path the op's heuristics choose, once (the registry rows' ``paths``):
one tile or a loop over tiles, inner and non-inner, the K == 1 and split-K kernels, dim=None
and dim=[] full reductions, several dims, the backward kernels.  The quick sweep's own
shapes take one tile everywhere; a kernel that loses its running max or its tile offset
past the first tile passes them all and fails here.  ``tests/test_kernel_paths.py`` checks
that each case really launches its path's kernel and that every kernel has a case."""

import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import make_input, tolerance


def test_path(flag_gems, fl_device, path_op, path, path_case, dtype):
    op = path_op
    x = make_input(path_case, dtype, fl_device, op=op)
    if path.entry is None:
        kwargs = dict(path.kwargs)  # vector_norm's ord: each ord its kernel
        assert_agrees(
            op,
            lambda: op.call(x, path.dim, **kwargs),
            x,
            path.dim,
            torch_kwargs=kwargs,
            what=f"{path.name}: {path.shape} dim={path.dim}",
        )
        return
    check_backward(op, op.fn(path.entry), x, path.dim, f"{path.name}: {path.shape} dim={path.dim}")


def check_backward(op, backward, x, dim, what: str, layout: str = "contiguous") -> None:
    """A backward entry point (grad_output, output, dim, input_dtype) against torch autograd
    in float64: the gradient of ``op``'s torch function at ``x`` along ``grad_output``."""
    cpu = x.detach().cpu().double().requires_grad_(True)
    out64 = op.torch_fn(cpu, dim, False)
    g = torch.Generator().manual_seed(11)
    grad64 = torch.randn(out64.shape, generator=g, dtype=torch.float64)
    (want,) = torch.autograd.grad(out64, cpu, grad64)
    output = out64.detach().to(x.dtype).to(x.device)
    grad_output = grad64.to(x.dtype).to(x.device)
    if layout == "column_major_output":  # the same values in a column-major buffer
        output = output.mT.contiguous().mT if output.dim() >= 2 else output
    got = backward(grad_output, output, dim, x.dtype).detach().cpu().double()
    assert got.shape == want.shape, f"{what}: gradient of shape {tuple(got.shape)}, torch {tuple(want.shape)}"
    tol = tolerance(str(x.dtype).removeprefix("torch."), x.shape[dim], "along")
    torch.testing.assert_close(
        got,
        want,
        rtol=tol["rtol"] * 8,
        atol=tol["atol"] * 8 * max(1.0, float(grad64.abs().max())),
        msg=lambda m: f"{what}: {m}",
    )
