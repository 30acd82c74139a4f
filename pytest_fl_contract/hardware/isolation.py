"""Calls of ops in a fresh interpreter.

``run``: one call for the cases that can fault the device.  A kernel that indexes past
2**31 elements with int32 offsets ends in ``CUDA error: an illegal memory access``, and
that poisons the process's CUDA context: every later test in the worker would fail too.
Here the call runs in a child process with the lane's workaround (when it has one); the
parent gets a verdict line, or the child's death (its signal or the device error from its
output) as one failed case.  Hardware lanes only.

``run_batch``: many calls in one fresh process - its kernels compiled cold (an empty Triton
cache directory) or warm (a cache another process filled) - whose results come back for
the parent to compare: with float64 and, bit for bit, with its own.  Every lane: an
emulated one brings its emulator (profile and injected defects) up in the child.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Any, Callable

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
    for src, dst in slabs(tuple(x.shape), dim, False, op.keeps_shape, elements):
        want = op.torch_fn(x[src], dim, False)
        scale = max(scale, float(want.max()), -float(want.min()))
        # NaN counts as an infinite gap: Python's max() would drop it (max(0.0, nan) is 0.0)
        gap = max(gap, float(got[dst].sub(want).abs_().nan_to_num_(nan=math.inf).max()))
    error = gap / max(scale, 1e-30)
    bound = 1e-4
    return {"ok": error <= bound, "detail": f"relative error {error:.3g} against torch on the device (bound {bound:g})"}


@dataclass(frozen=True)
class Batch:
    calls: tuple[tuple[str, tuple[int, ...], Any, str], ...]  # (op, shape, dim, dtype)
    device: str
    out: str  # where the child saves its results (torch.save: a list, a tensor or an error per call)
    workaround: str | None = None
    emulation: tuple[str, tuple[str, ...]] | None = None  # (profile, injected defects)
    seed: int = 0
    cache_dir: str | None = None  # TRITON_CACHE_DIR for the child (None: the lane's own)
    autotune: str | None = None  # the lane's --fl-autotune mode: the child picks the lane's configs


def run_batch(batch: Batch, timeout: float = 600) -> tuple[list[Any] | None, str]:
    """The child's results per call (a tensor, or the error it raised as a string), or None
    and why the child gave none."""
    import os

    env = {**os.environ, **({"TRITON_CACHE_DIR": batch.cache_dir} if batch.cache_dir else {})}
    argv = [sys.executable, "-m", "pytest_fl_contract.hardware.isolation", "--batch", json.dumps(asdict(batch))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"the fresh process did not finish in {timeout:g}s"
    if done.returncode != 0:
        tail = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        return None, f"the fresh process exited {done.returncode}: {tail[-1].strip()[:300] if tail else ''}"
    import torch

    return torch.load(batch.out, weights_only=False), ""


def _batch_child(batch: Batch) -> None:
    import importlib

    if batch.emulation is not None:
        from ..emulation.interpreter import bring_up

        bring_up(batch.emulation[0], tuple(batch.emulation[1]))
    else:
        from . import autotune

        if batch.autotune in autotune.MODES:  # else FlagGems times its configs: other picks, other bits
            autotune.install(autotune.plan(batch.autotune, emulated=False))
    import flag_gems  # noqa: F401 - the entry points, as the lane has them
    import torch

    from ..registry import ops

    if batch.workaround:
        importlib.import_module(batch.workaround).install()
    results: list[Any] = []
    for name, shape, dim, dtype in batch.calls:
        op = ops.get(name)
        g = torch.Generator().manual_seed(batch.seed + hash(tuple(shape)) % 10_000)
        x = torch.randn(tuple(shape), generator=g).to(getattr(torch, dtype)).to(batch.device)
        try:
            results.append(op.call(x, dim).cpu())
        except Exception as exc:  # what it raised is its result: the parent compares
            results.append(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
    torch.save(results, batch.out)


if __name__ == "__main__":
    if sys.argv[1] == "--batch":
        data = json.loads(sys.argv[2])
        _batch_child(Batch(**{**data, "calls": tuple((c[0], tuple(c[1]), c[2], c[3]) for c in data["calls"]),
                              "emulation": (data["emulation"][0], tuple(data["emulation"][1]))
                              if data["emulation"] else None}))
    else:
        data = json.loads(sys.argv[1])
        print(json.dumps(_child(Spec(**{**data, "shape": tuple(data["shape"])}))), flush=True)


def once_per_run(directory: str, name: str, make: Callable[[], Any]) -> Any:
    """``make()`` once for every process of a run that shares ``directory`` (xdist's workers
    share the parent of their base temp), the others reading what it saved: a fresh-process
    batch that every worker would otherwise start again, 16 at once on a 16-worker lane."""
    import fcntl
    import os

    import torch

    path = os.path.join(directory, f"{name}.pt")
    with open(os.path.join(directory, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if make() raises
        if os.path.exists(path):
            return torch.load(path, weights_only=False)
        value = make()
        torch.save(value, path + ".part")
        os.replace(path + ".part", path)
        return value
