"""Which FlagGems op breaks a reduction's gradient when FlagGems is enabled for every op
(reductions/test_enabled.py's backward cases on an H100 with 5.0.2: aminmax "derivative ...
not implemented", prod/amax/std/var_mean/vector_norm "invalid gradient ... got [3, 1, 64]").
For each row: the gradient under use_gems() against torch's, then the FlagGems ops it needs
excluded found by halving use_gems(exclude=...).  Prints one line per row."""

from __future__ import annotations

import sys

import flag_gems
import torch

from pytest_fl_contract.registry import ROWS


def attempt(op, exclude, device):
    x = torch.randn(3, 5, 64, device=device, generator=torch.Generator(device).manual_seed(1)).requires_grad_()
    ref = x.detach().double().cpu().requires_grad_()
    up = torch.randn(3, 64, dtype=torch.float64)
    want = op.torch_fn(ref, 1, False)
    (want if isinstance(want, torch.Tensor) else want[0]).backward(up)
    try:
        with flag_gems.use_gems(exclude=list(exclude)):
            got = op.torch_fn(x, 1, False)
            (got if isinstance(got, torch.Tensor) else got[0]).backward(up.to(device, torch.float32))
        ok = torch.allclose(x.grad.double().cpu(), ref.grad, rtol=1e-3, atol=1e-4)
        return ok, "" if ok else "gradient differs"
    except Exception as exc:
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def trace(op, device):
    """The aten calls of the forward and backward under use_gems(), with their shapes, and
    the dispatch facts of the ops whose result is not the broadcast of their inputs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    def shapes(values):
        return [tuple(v.shape) if isinstance(v, torch.Tensor) else v for v in values][:4]

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            outs = out if isinstance(out, (tuple, list)) else [out]
            print(f"    {func}: {shapes(args)} -> {shapes(outs)}")
            return out

    x = torch.randn(3, 5, 64, device=device).requires_grad_()
    up = torch.randn(3, 64, device=device)
    try:
        with flag_gems.use_gems():
            got = op.torch_fn(x, 1, False)
            with Log():
                (got if isinstance(got, torch.Tensor) else got[0]).backward(up)
    except Exception as exc:
        print(f"    raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    for key in ("CompositeImplicitAutograd", "Autograd", "AutogradCUDA", "CUDA"):
        print(f"    aten::{op.name} {key}:", torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op.name}", key))


def main(names):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    every = sorted({item[1].__name__ for item in flag_gems._FULL_CONFIG})
    for name in names:
        op = ROWS.get(name)
        ok, why = attempt(op, [], device)
        if "--trace" in sys.argv:
            print(f"{name}: trace")
            trace(op, device)
        if ok:
            print(f"{name}: holds with every op enabled")
            continue
        culprits = list(every)
        # smallest set to exclude: drop halves that are not needed
        if not attempt(op, culprits, device)[0]:
            print(f"{name}: {why}; still wrong with every FlagGems function excluded")
            continue
        need = culprits
        changed = True
        while changed and len(need) > 1:
            changed = False
            half = len(need) // 2
            for part in (need[:half], need[half:]):
                if attempt(op, part, device)[0]:
                    need, changed = part, True
                    break
        rest = [n for n in need if not attempt(op, [m for m in need if m != n], device)[0]] if len(need) <= 8 else need
        print(f"{name}: {why}; holds once FlagGems' {', '.join(rest or need)} is excluded")


if __name__ == "__main__":
    main(
        [a for a in sys.argv[1:] if not a.startswith("--")]
        or ["aminmax", "prod", "amax", "std", "var_mean", "vector_norm"]
    )
