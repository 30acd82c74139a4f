"""One call of an op in a fresh interpreter, for the cases that can fault the device.

A kernel that indexes past 2**31 elements with int32 offsets ends in ``CUDA error: an
illegal memory access``, and that poisons the process's CUDA context: every later test
in the worker would fail too.  Here the call runs in a child process with the lane's
workaround (when it has one); the parent gets a verdict line, or the child's death (its
signal or the device error from its output) as one failed case.  Hardware lanes only.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Any

from .slabs import slabs


@dataclass(frozen=True)
class Spec:
    op: str
    shape: tuple[int, ...]
    dim: int
    dtype: str
    device: str
    workaround: str | None = None  # module to install() before the call
    seed: int = 0
    autotune: str | None = None  # the lane's --fl-autotune mode, for FlagGems' tuners in the child


@dataclass(frozen=True)
class Verdict:
    ok: bool
    detail: str


def run(spec: Spec, timeout: float = 600) -> Verdict:
    argv = [sys.executable, "-m", "pytest_fl_contract.hardware.isolation", json.dumps(asdict(spec))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Verdict(False, f"the call did not finish in {timeout:g}s")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode == 0 and lines:
        result = json.loads(lines[-1])
        return Verdict(bool(result["ok"]), str(result["detail"]))
    tail = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
    error = next((ln for ln in reversed(tail) if "CUDA error" in ln or "illegal memory" in ln), None) or next(
        (ln for ln in reversed(tail) if "error" in ln.lower()), tail[-1] if tail else "")
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return Verdict(False, f"the call killed its process ({how}): {error.strip()[:300]}")


def _child(spec: Spec) -> dict[str, Any]:
    import importlib

    from ..registry import ops
    from . import autotune

    if spec.autotune in autotune.MODES:
        autotune.install(autotune.plan(spec.autotune, emulated=False))  # before FlagGems' tuners exist
    import flag_gems  # noqa: F401 - the entry points, as the lane has them
    import torch

    if spec.workaround:
        importlib.import_module(spec.workaround).install()
    op = ops.get(spec.op)
    g = torch.Generator(device=spec.device).manual_seed(spec.seed)
    x = torch.randn(spec.shape, generator=g, device=spec.device, dtype=getattr(torch, spec.dtype))
    got = op.call(x, spec.dim)
    getattr(torch, spec.device).synchronize()
    return compare(op, x, got, spec.dim)


def compare(op: Any, x: Any, got: Any, dim: int, elements: int = 1 << 26) -> dict[str, Any]:
    """The child's verdict on ``got``, against torch on the same device: indices equal, or
    values within a relative error of 1e-4 of torch's largest |value|."""
    if op.kind == "index":
        same = float((got == op.torch_fn(x, dim, False)).double().mean())
        return {"ok": same == 1.0, "detail": f"{same:.6%} of the indices equal torch's"}
    # torch's result a slab of one kept axis at a time: a whole 8 GiB softmax result beside
    # ours and their difference held 24 GiB more than the input (float64 copies: 34 GiB)
    scale, gap = 0.0, 0.0
    for src, dst in slabs(tuple(x.shape), dim, False, op.kind == "along", elements):
        want = op.torch_fn(x[src], dim, False)
        scale = max(scale, float(want.max()), -float(want.min()))
        # NaN counts as an infinite gap: Python's max() would drop it (max(0.0, nan) is 0.0)
        gap = max(gap, float(got[dst].sub(want).abs_().nan_to_num_(nan=math.inf).max()))
    error = gap / max(scale, 1e-30)
    bound = 1e-4
    return {"ok": error <= bound, "detail": f"relative error {error:.3g} against torch on the device (bound {bound:g})"}


if __name__ == "__main__":
    data = json.loads(sys.argv[1])
    print(json.dumps(_child(Spec(**{**data, "shape": tuple(data["shape"])}))), flush=True)
