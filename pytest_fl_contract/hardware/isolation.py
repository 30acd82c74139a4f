"""Calls of ops in a fresh interpreter.

``run``: one call for the cases that can fault the device.  A kernel that indexes past
2**31 elements with int32 offsets ends in ``CUDA error: an illegal memory access``, and
that poisons the process's CUDA context: every later test in the worker would fail too.
Here the call runs in a child process with the lane's workaround (when it has one); the
parent gets a verdict line, or the child's death (its signal or the device error from its
output) as one failed case.  Hardware lanes only.

``run_row``: the same for any row with a family behaviour (``families.of``): FlagGems through
torch dispatch against torch's own kernels on the device, gradients too.

``run_batch``: many calls in one fresh process - its kernels compiled cold (an empty Triton
cache directory) or warm (a cache another process filled) - whose results come back for
the parent to compare: with float64 and, bit for bit, with its own.  Every lane: an
emulated one brings its emulator (profile and injected defects) up in the child.

``run_rows``: such a batch for the rows of any family (``RowBatch``), gradients too.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from ..families.slabs import slabs


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
    sources: tuple[tuple[str, str], ...] = field(default_factory=lambda: _sources())


def _sources() -> tuple[tuple[str, str], ...]:
    """The modules that registered rows in this process: a child imports them again."""
    from ..registry import ROWS

    return ROWS.sources()


@dataclass(frozen=True)
class Verdict:
    ok: bool
    detail: str


def run(spec: Spec, timeout: float = 600) -> Verdict:
    return _verdict([sys.executable, "-m", "pytest_fl_contract.hardware.isolation", json.dumps(asdict(spec))], timeout)


def _verdict(argv: list[str], timeout: float) -> Verdict:
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
        (ln for ln in reversed(tail) if "error" in ln.lower()), tail[-1] if tail else ""
    )
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return Verdict(False, f"the call killed its process ({how}): {error.strip()[:300]}")


@dataclass(frozen=True)
class RowSpec:
    """One call of a registry row: its name, its case's fields (the row's ``case_type``), the
    dtype and device, and the lane's workaround and tuning."""

    op: str
    case: dict[str, Any]
    dtype: str
    device: str
    backward: bool = False
    workaround: str | None = None
    seed: int = 0
    autotune: str | None = None
    sources: tuple[tuple[str, str], ...] = field(default_factory=lambda: _sources())

    @staticmethod
    def of(row: Any, case: Any, dtype: str, device: str, **kwargs: Any) -> RowSpec:
        return RowSpec(row.name, asdict(case), dtype, device, **kwargs)


def run_row(spec: RowSpec, timeout: float = 900) -> Verdict:
    return _verdict(
        [sys.executable, "-m", "pytest_fl_contract.hardware.isolation", "--row", json.dumps(asdict(spec))], timeout
    )


def excess(got: Any, want: Any, rtol: float, atol: float, elements: int = 1 << 26) -> float:
    """The largest |got - want| / (atol + rtol * |want|) over slabs of ``elements`` (an 8 GiB
    pair's difference is never held whole): above 1, an element is off; NaN is infinitely off."""
    g, w = got.reshape(-1), want.reshape(-1)
    worst = 0.0
    for start in range(0, w.numel(), elements):
        a, b = g[start : start + elements].float(), w[start : start + elements].float()
        ratio = a.sub(b).abs_().div_(b.abs().mul_(rtol).add_(atol)).nan_to_num_(nan=math.inf)
        worst = max(worst, float(ratio.max()))
    return worst


def _row_child(spec: RowSpec) -> dict[str, Any]:
    """FlagGems' outputs against torch's on the device, each within twice the family's
    tolerance against torch's own result there (itself rounded to the dtype)."""
    import importlib

    from ..families import of
    from ..registry import ROWS
    from . import autotune

    if spec.autotune in autotune.MODES:
        autotune.install(autotune.plan(spec.autotune, emulated=False))  # before FlagGems' tuners exist
    import flag_gems
    import torch

    if spec.workaround:
        importlib.import_module(spec.workaround).install()
    ROWS.load_sources(spec.sources)
    row = ROWS.get(spec.op)
    family = of(row)
    case = row.case_type(**{**spec.case, "shape": tuple(spec.case["shape"])})
    drawn = family.inputs(row, case, seed=spec.seed, device=spec.device, dtype=spec.dtype, backward=spec.backward)
    ours = family.outputs(row, case, drawn, gems=flag_gems, backward=spec.backward)
    theirs = family.outputs(row, case, drawn, backward=spec.backward)
    getattr(torch, spec.device.split(":")[0]).synchronize()
    errors = {}
    for key, want in theirs.items():
        got = ours.get(key)
        if got is None or tuple(got.shape) != tuple(want.shape):
            return {
                "ok": False,
                "detail": f"{key}: shape {None if got is None else tuple(got.shape)}, torch {tuple(want.shape)}",
            }
        tol = family.tolerance(row, case, spec.dtype, key, on_device=True)
        errors[key] = excess(got, want, 2 * tol["rtol"], tol["atol"])
    off = {k: v for k, v in errors.items() if v > 1}
    shown = ", ".join(f"{k} {v:.3g}" for k, v in (off or errors).items())
    return {
        "ok": not off,
        "detail": f"{'off' if off else 'within'} torch's result on the device by "
        f"{shown} of the tolerance (1: at its edge)",
    }


def _child(spec: Spec) -> dict[str, Any]:
    import importlib

    from ..registry import ROWS
    from . import autotune

    if spec.autotune in autotune.MODES:
        autotune.install(autotune.plan(spec.autotune, emulated=False))  # before FlagGems' tuners exist
    import flag_gems  # noqa: F401 - the entry points, as the lane has them
    import torch

    if spec.workaround:
        importlib.import_module(spec.workaround).install()
    ROWS.load_sources(spec.sources)
    op = ROWS.get(spec.op)
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
    sources: tuple[tuple[str, str], ...] = field(default_factory=lambda: _sources())

    @staticmethod
    def from_json(data: dict[str, Any]) -> Batch:
        return Batch(
            **{
                **data,
                "calls": tuple((c[0], tuple(c[1]), c[2], c[3]) for c in data["calls"]),
                "sources": tuple(map(tuple, data.get("sources", ()))),
                "emulation": (data["emulation"][0], tuple(data["emulation"][1])) if data["emulation"] else None,
            }
        )


def run_batch(batch: Batch, timeout: float = 600) -> str:
    """Why the child gave no results ("" when they are in ``batch.out``: a tensor, or the
    error it raised as a string, per call; ``torch.load`` them)."""
    return _spawn("--batch", batch, timeout)


def _spawn(flag: str, batch: Batch | RowBatch, timeout: float) -> str:
    """``batch`` run by this module in a fresh process (its own Triton cache where it names
    one); why it gave no results, "" when it did."""
    import os

    env = {**os.environ, **({"TRITON_CACHE_DIR": batch.cache_dir} if batch.cache_dir else {})}
    argv = [sys.executable, "-m", "pytest_fl_contract.hardware.isolation", flag, json.dumps(asdict(batch))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"the fresh process did not finish in {timeout:g}s"
    if done.returncode != 0:
        tail = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        return f"the fresh process exited {done.returncode}: {tail[-1].strip()[:300] if tail else ''}"
    return ""


def _as_the_lane(batch: Batch | RowBatch) -> Any:
    """A child brought up as the lane runs: its emulator (profile, injected defects) or its
    autotune mode, FlagGems, its workaround, the rows its plugins registered.  Returns
    flag_gems."""
    import importlib

    if batch.emulation is not None:
        from ..emulation.interpreter import bring_up

        bring_up(batch.emulation[0], tuple(batch.emulation[1]))
    else:
        from . import autotune

        if batch.autotune in autotune.MODES:  # else FlagGems times its configs: other picks, other bits
            autotune.install(autotune.plan(batch.autotune, emulated=False))
    import flag_gems  # the entry points, as the lane has them

    from ..registry import ROWS

    if batch.workaround:
        importlib.import_module(batch.workaround).install()
    ROWS.load_sources(batch.sources)
    return flag_gems


def _batch_child(batch: Batch) -> None:
    _as_the_lane(batch)  # first: the emulator comes up before anything imports torch here
    import torch

    from ..registry import ROWS

    results: list[Any] = []
    for name, shape, dim, dtype in batch.calls:
        op = ROWS.get(name)
        g = torch.Generator().manual_seed(batch.seed + hash(tuple(shape)) % 10_000)
        x = torch.randn(tuple(shape), generator=g).to(getattr(torch, dtype)).to(batch.device)
        try:
            results.append(op.call(x, dim).cpu())
        except Exception as exc:  # what it raised is its result: the parent compares
            results.append(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
    torch.save(results, batch.out)


@dataclass(frozen=True)
class RowBatch:
    """Calls of registry rows of any family (``families.of``) in one fresh process: each
    row's case drawn from ``seed`` as the parent draws it, FlagGems' outputs (gradients too
    where ``backward``) saved for the parent to compare bit for bit with its own."""

    calls: tuple[tuple[str, dict[str, Any], str, bool], ...]  # (row, its case's fields, dtype, backward)
    device: str
    out: str  # torch.save: per call, {output: tensor} or the error it raised as a string
    workaround: str | None = None
    emulation: tuple[str, tuple[str, ...]] | None = None  # (profile, injected defects)
    seed: int = 0
    cache_dir: str | None = None  # TRITON_CACHE_DIR for the child (None: the lane's own)
    autotune: str | None = None
    sources: tuple[tuple[str, str], ...] = field(default_factory=lambda: _sources())

    @staticmethod
    def from_json(data: dict[str, Any]) -> RowBatch:
        return RowBatch(
            **{
                **data,
                "calls": tuple((c[0], c[1], c[2], c[3]) for c in data["calls"]),
                "sources": tuple(map(tuple, data.get("sources", ()))),
                "emulation": (data["emulation"][0], tuple(data["emulation"][1])) if data["emulation"] else None,
            }
        )


def case_of(row: Any, fields: dict[str, Any]) -> Any:
    """A row's case from its fields as JSON carried them (lists back to tuples)."""
    return row.case_type(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def run_rows(batch: RowBatch, timeout: float = 600) -> str:
    """Why the child gave no results ("" when they are in ``batch.out``)."""
    return _spawn("--rows", batch, timeout)


def _rows_child(batch: RowBatch) -> None:
    flag_gems = _as_the_lane(batch)  # first: the emulator comes up before anything imports torch here
    import torch

    from ..families import of
    from ..registry import ROWS

    results: list[Any] = []
    for name, fields, dtype, backward in batch.calls:
        row = ROWS.get(name)
        family, case = of(row), case_of(row, fields)
        try:
            drawn = family.inputs(row, case, seed=batch.seed, device=batch.device, dtype=dtype, backward=backward)
            outs = family.outputs(row, case, drawn, gems=flag_gems, backward=backward)
            results.append({key: value.detach().cpu() for key, value in outs.items()})
        except Exception as exc:  # what it raised is its result: the parent compares
            results.append(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
    torch.save(results, batch.out)


if __name__ == "__main__":
    if sys.argv[1] == "--row":
        data = json.loads(sys.argv[2])
        print(
            json.dumps(_row_child(RowSpec(**{**data, "sources": tuple(map(tuple, data.get("sources", ())))}))),
            flush=True,
        )
    elif sys.argv[1] == "--rows":
        _rows_child(RowBatch.from_json(json.loads(sys.argv[2])))
    elif sys.argv[1] == "--batch":
        data = json.loads(sys.argv[2])
        _batch_child(Batch.from_json(data))
    else:
        data = json.loads(sys.argv[1])
        print(
            json.dumps(
                _child(
                    Spec(
                        **{**data, "shape": tuple(data["shape"]), "sources": tuple(map(tuple, data.get("sources", ())))}
                    )
                )
            ),
            flush=True,
        )
