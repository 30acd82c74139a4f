"""The one table of reduction ops that drives every contract module, and the sweeps.

Each row says how to call FlagGems' entry point (dim form, keepdim, out=), how to call
it through torch dispatch, and the float64 CPU reference.  Entry points are looked up
at call time, so whatever the lane installed (a workaround) is what gets called.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

# -- ops --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    name: str
    module: str  # flag_gems module holding the entry point and its kernels
    entry: str
    kind: str  # "reduce" (drops dim) | "along" (keeps shape) | "index" (argmax)
    dim_form: str  # "list" | "int": the form the entry point accepts
    reference: Callable[[Any, int, bool], Any]  # float64 CPU reference
    torch_call: Callable[[Any, int, bool], Any]  # the same op through torch dispatch
    gems_names: tuple[str, ...]  # function names for flag_gems.use_gems(include=...)
    keepdim: bool = True
    out_entry: str | None = None
    in_quick: bool = True  # part of the interpreter's quick sweep
    quick_cases: tuple[str, ...] | None = None  # case ids for the quick sweep, when not the sweep's own

    def fn(self, attr: str | None = None) -> Callable[..., Any]:
        return getattr(sys.modules[self.module], attr or self.entry)

    def dim_arg(self, d: int, form: str | None = None) -> Any:
        return [d] if (form or self.dim_form) == "list" else d

    def call(self, x: Any, d: int, keepdim: bool = False, form: str | None = None) -> Any:
        dim = self.dim_arg(d, form)
        if self.kind == "along":
            return self.fn()(x, dim)
        return self.fn()(x, dim, keepdim)


def _softmax_ref(x: Any, d: int, keepdim: bool) -> Any:
    return x.softmax(d)


OPS: tuple[Op, ...] = (
    Op("sum", "flag_gems.ops.sum", "sum_dim", "reduce", "list",
       lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: x.sum(d, keepdim=k),
       ("sum_dim", "sum_dim_out"), out_entry="sum_dim_out"),
    Op("mean", "flag_gems.ops.mean", "mean_dim", "reduce", "list",
       lambda x, d, k: x.mean(d, keepdim=k), lambda x, d, k: x.mean(d, keepdim=k), ("mean_dim",)),
    Op("softmax", "flag_gems.ops.softmax", "softmax", "along", "int",
       _softmax_ref, lambda x, d, k: x.softmax(d), ("softmax",), keepdim=False),
    Op("log_softmax", "flag_gems.ops.log_softmax", "log_softmax", "along", "int",
       lambda x, d, k: x.log_softmax(d), lambda x, d, k: x.log_softmax(d), ("log_softmax",), keepdim=False,
       in_quick=False),  # 5.0.2's kernel keeps M as tile rows: unaffected, and slow on the interpreter
    Op("argmax", "flag_gems.ops.argmax", "argmax", "index", "int",
       lambda x, d, k: x.argmax(d, keepdim=k), lambda x, d, k: x.argmax(d, keepdim=k), ("argmax",)),
    # prod's tl.reduce combine runs element by element on the interpreter: toy shapes there
    Op("prod", "flag_gems.ops.prod", "prod_dim", "reduce", "int",
       lambda x, d, k: x.prod(d, keepdim=k), lambda x, d, k: x.prod(d, keepdim=k), ("prod_dim",),
       quick_cases=("3x5x4-d1", "5x4-d0", "3x4x5-d-1")),
)  # fmt: skip
OPS_BY_NAME = {op.name: op for op in OPS}

# -- sweeps -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dim: int

    @property
    def id(self) -> str:
        return "x".join(map(str, self.shape)) + f"-d{self.dim}"

    @property
    def n(self) -> int:
        return self.shape[self.dim]

    @property
    def non_inner(self) -> bool:
        """True when FlagGems takes its non-inner (2-D row mask) kernel for this dim."""
        d = self.dim % len(self.shape)
        return math.prod(self.shape[d + 1 :]) > 1


def _grid(ns: list[int], ks: list[int], ms: list[int]) -> list[Case]:
    cases = []
    for n in ns:
        for k in ks:
            for m in ms:
                cases.append(Case((m, n, k), 1))  # middle axis: non-inner when k > 1
            cases.append(Case((n, k), 0))  # leading axis
            cases.append(Case((ms[-1], k, n), -1))  # last axis: always inner
    return list(dict.fromkeys(cases))


def sweep(name: str) -> list[Case]:
    """quick: small grids for the interpreter; full: the issue's sweep, for accelerators."""
    if name == "quick":
        return _grid([5, 13], [1, 64], [1, 3]) + [Case((2, 556, 8), 1)]
    return _grid([*range(1, 17), 556, 4099], [1, 64, 256, 1024], [1, 3])


# Cases for the determinism and real-case contracts: non-inner, partial row tiles.
PARTIAL_TILE_CASES = {
    "quick": [Case((3, 5, 64), 1), Case((13, 64), 0), Case((2, 300, 8), 1)],
    "full": [Case((3, 5, 64), 1), Case((13, 1024), 0), Case((64, 557, 256), 1), Case((4099, 64), 0)],
}
REAL_CASE = {  # Qwen-VL vision tower: bilinear position embedding, sum(dim=1)
    "full": Case((556, 4, 1024), 1),
    "quick": Case((16, 4, 64), 1),  # same N and mask shape; the moved-axis path costs M*K interpreter programs
}

KEEPDIM_CASES = [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 5), -1)]
FORM_CASES = {"non-inner": Case((3, 4, 64), 1), "inner": Case((3, 64, 4), 2)}  # N a power of two: argmax compiles


def known_defects(op: Op, case: Case) -> tuple[str, ...]:
    """Defects of the installed FlagGems a case runs into (the registry says on which lanes).

    flag_gems 5.0.2's argmax_heur_tile_n_non_inner returns TILE_N = N for N <= 128, and
    tl.arange needs a power of two: a non-inner argmax over such an N cannot compile.
    """
    n = case.n
    if op.name == "argmax" and case.non_inner and n <= 128 and n & (n - 1):
        return ("argmax_tile_not_pow2",)
    return ()


DTYPES = {"quick": ("float32",), "full": ("float32",)}
HALF_DTYPES = ("bfloat16", "float16")
# Half types run on a subset: their kernels are the fp32 ones with a cast at load and
# store, so partial row tiles (N = 5, 556, 4099) at every K cover them.
QUICK_HALF_CASES = [Case((3, 5, 64), 1), Case((13, 64), 0), Case((3, 64, 13), -1), Case((2, 556, 8), 1)]


def half_cases(sweep_name: str) -> list[Case]:
    if sweep_name == "quick":
        return QUICK_HALF_CASES
    return [c for c in sweep("full") if c.n in (5, 556, 4099)]


DTYPE_CAPABILITY = {"bfloat16": "bf16", "float64": "fp64"}
_EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def tolerance(dtype: str, n: int) -> dict[str, float]:
    """assert_close tolerances against float64 of the same inputs.

    FlagGems accumulates in fp32 and rounds once to the output dtype, so a half-type
    result is off by at most half an ulp (rtol = eps of the dtype: a kernel that
    accumulates in fp16/bf16 drifts well past it); fp32 results differ by summation order
    (rtol 4 eps).  atol bounds fp32 accumulation over n terms, for sums that cancel."""
    rtol = _EPS[dtype] if dtype != "float32" else 4 * _EPS["float32"]
    return {"rtol": rtol, "atol": 8 * _EPS["float32"] * max(n, 1) + (_EPS[dtype] / 64 if dtype != "float32" else 0)}


def make_input(case: Case, dtype: str, device: str, seed: int = 0) -> Any:
    import torch

    g = torch.Generator().manual_seed(seed + hash(case.shape) % 10_000)
    x = torch.randn(case.shape, generator=g, dtype=torch.float32)
    return x.to(getattr(torch, dtype)).to(device)


def case_from_id(text: str) -> Case:
    """ "3x5x4-d1" -> Case((3, 5, 4), 1): how the op table names its own small cases."""
    shape, dim = text.rsplit("-d", 1)
    return Case(tuple(int(s) for s in shape.split("x")), int(dim))


def cases_for(op: Op, sweep_name: str) -> list[Case]:
    if sweep_name == "quick" and op.quick_cases:
        return [case_from_id(c) for c in op.quick_cases]
    return sweep(sweep_name)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("raises", exception type name): forwarded calls must agree on it."""
    try:
        return ("ok", call())
    except Exception as exc:  # the outcome is the exception type itself
        return ("raises", type(exc).__name__)


def check(op: Op, got: Any, x: Any, d: int, keepdim: bool = False) -> None:
    """Compare a result with the float64 CPU reference (argmax: by the value it points at)."""
    import torch

    ref_in = x.detach().cpu().double()
    expected = op.reference(ref_in, d, keepdim)
    got = got.detach().cpu()
    assert got.shape == expected.shape, f"shape {tuple(got.shape)} != expected {tuple(expected.shape)}"
    if op.kind == "index":
        assert got.dtype == torch.int64, f"argmax returned {got.dtype}"
        in_range = bool(((got >= 0) & (got < x.shape[d])).all())
        assert in_range, f"argmax index out of range [0, {x.shape[d]}): {got.flatten()[:8].tolist()}"
        idx = got if keepdim else got.unsqueeze(d)
        picked = ref_in.gather(d, idx)
        best = ref_in.amax(d, keepdim=True)
        torch.testing.assert_close(picked, best, rtol=0, atol=0, msg=lambda m: f"argmax points at a non-maximum: {m}")
        return
    dtype = str(x.dtype).removeprefix("torch.")
    torch.testing.assert_close(got.double(), expected, **tolerance(dtype, x.shape[d]), equal_nan=False)
