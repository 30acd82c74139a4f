"""The reductions' rows: every FlagGems op that folds a dim (sums, softmax-likes, index ops,
min/max, variance and norms, scans), as data of the one row schema (``schema.Row``).

A row says where the op lives in FlagGems (module, entry points, out= and backward
bindings), how its entry point is called (dim form, keepdim, keyword-only parameters),
how torch computes it (the float64 reference and the dispatch call), whether the
workaround's fast path takes it, what it costs on the interpreter, and which contract
properties do not apply to it and why.  The contracts, the workaround's targets, the
fast path, the defect catalogue's reach, the benchmarks, the mutants and the project's
tests read the rows through the registry (``registry.ROWS``): adding an op is adding a row
(keywords, one per fact).

Nothing here imports torch: callables receive tensors and call their methods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

from .schema import GRID_LIMITS, Defect, Param, Row

# drops the dim | keeps the shape (softmax) | returns int64 indices | keeps the shape, each
# element folding its prefix (cumsum: a reduction's tolerance, over the prefix's terms)
KINDS = ("reduce", "along", "index", "scan")


@dataclass(frozen=True)
class EntryPoint:
    """One FlagGems function the workaround may wrap."""

    attr: str
    kind: str
    out: str | None = None  # name of the out= parameter of an out binding
    tensors: tuple[str, ...] = ()  # parameters moved with the axis; default: the first

    @property
    def backward(self) -> bool:
        """A backward entry point: (grad_output, output, dim, input_dtype)."""
        return "grad_output" in self.tensors


@dataclass(frozen=True)
class Path:
    """A code path an op's FlagGems kernels take, as its heuristics choose it, and the
    smallest call that reaches it on the CPU lane's device profiles (4 SMs): the kernel it
    launches and the value of its ``ONE_TILE_PER_CTA``-style switch (``tiles``: True one
    tile, False a loop over tiles, None no such switch).  ``lines``: the FlagGems lines that
    have it (version prefixes; none: every line)."""

    name: str
    shape: tuple[int, ...]
    dim: Any
    kernel: str
    tiles: bool | None = None
    dtype: str = "float32"
    lines: tuple[str, ...] = ()
    switch: str = "ONE_TILE_PER_CTA"  # the constexpr that chooses one tile or a loop
    entry: str | None = None  # the entry point the path is reached through (default: the row's)
    loop: bool | None = None  # walks N in several tiles (default: where its switch says a loop)
    kwargs: tuple[tuple[str, Any], ...] = ()  # keyword arguments the call takes (vector_norm's ord)

    @property
    def id(self) -> str:
        return self.name

    @property
    def multi_tile(self) -> bool:
        """The kernel walks N in several tiles here: values can cross tiles (test_tiles)."""
        return self.loop if self.loop is not None else self.tiles is False

    def in_version(self, version: str | None) -> bool:
        return not self.lines or any((version or "").startswith(v) for v in self.lines)


INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "bool")
DENSE_PERMUTED = ("transposed", "permute")  # layouts torch.empty_like keeps (dense, not contiguous)


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dim: Any  # an int; a list or None where a contract checks those forms

    @property
    def id(self) -> str:
        dim = "all" if self.dim is None else "_".join(map(str, self.dim)) if isinstance(self.dim, list) else self.dim
        return "x".join(map(str, self.shape)) + f"-d{dim}"

    @property
    def n(self) -> int:
        return self.shape[self.dim]

    @property
    def non_inner(self) -> bool:
        """True when FlagGems takes its non-inner (2-D row mask) kernel for this dim."""
        d = self.dim % len(self.shape)
        return math.prod(self.shape[d + 1 :]) > 1


@dataclass(frozen=True)
class Call:
    """What a contract case asks of an op, as far as a known defect can depend on it."""

    shape: tuple[int, ...]
    dim: Any  # an int, a list, or None
    dtype: str = "float32"
    layout: str = "contiguous"  # contiguous | transposed | permute | step | expand | offset
    values: str = "normal"  # normal, or a special-value kind: nan, pos_inf, inf_minus_inf, huge, ...
    routed: bool = False  # a workaround wraps the op: a non-inner call may run FlagGems' inner kernel
    placement: str = "current"  # current | other: the input lives on another device than the current one
    kwargs: tuple[tuple[str, Any], ...] = ()  # a swept keyword parameter and its value (test_params)
    contract: str = ""  # the contract asking (aliasing checks storage, not values)
    backward: bool = False  # the case takes the input's gradient through autograd
    dispatched: bool = False  # torch's call reaches FlagGems through the overload its arguments pick

    @property
    def reduced(self) -> tuple[int, ...]:
        """The normalised reduced dims (all of them for dim=None)."""
        if self.dim is None:
            return tuple(range(len(self.shape)))
        dims = self.dim if isinstance(self.dim, (list, tuple)) else [self.dim]
        return tuple(sorted({d % max(len(self.shape), 1) for d in dims}))

    @property
    def reduced_size(self) -> int:
        return math.prod(self.shape[d] for d in self.reduced)

    @property
    def non_inner(self) -> bool:
        dims = self.reduced
        return len(dims) == 1 and math.prod(self.shape[dims[0] + 1 :]) > 1


def _argmax_tile_not_pow2(call: Call) -> bool:
    """argmax_heur_tile_n_non_inner returns TILE_N = N for N <= 128 (flag_gems 5.0.2 and
    5.4.0.dev0), and tl.arange needs a power of two: a non-inner argmax over such an N
    cannot compile."""
    n = call.reduced_size  # (bool input: torch refuses it too, and a compile error refuses it alike)
    return call.non_inner and call.dtype != "bool" and 0 < n <= 128 and n & (n - 1) != 0


def _mnk(call: Call) -> tuple[int, int, int]:
    from ..util import mnk

    return mnk(call.shape, call.reduced[0] if len(call.reduced) == 1 else 0)


# Value patterns that put -inf in every slice: the last row's own -inf ties with the -inf the
# contracts store past the tensor (sweeps.on_device), and the tie keeps the earlier index.
_HOLD_NEG_INF = ("inf_minus_inf", "all_neg_inf", "infs")


def _argmin_rows_past_end(call: Call) -> bool:
    """argmin_kernel_opt_k1 (K == 1) loads BLOCK_N = next_pow2(N) columns with mask=True:
    for N not a power of two each row also reads what follows it - the next row's first
    values (a wrong index with the contracts' ramp; planted values repeat in every row and
    can tie, not win) and, after the last row, what follows the tensor (the -inf the
    contracts put there; on hardware otherwise whatever memory holds)."""
    m, n, k = _mnk(call)
    return (
        call.dim is not None
        and k == 1
        and m >= 1
        and n & (n - 1) != 0
        and call.dtype not in ("int16", "int32")
        and call.values not in _HOLD_NEG_INF
    )


def _argmin_stores_past_end(call: Call) -> bool:
    """... and stores BLOCK_M = 4 rows with mask=True: for M not a multiple of 4 it writes
    past its output."""
    m, n, k = _mnk(call)
    return call.dim is not None and k == 1 and n > 0 and m % 4 != 0 and call.dtype not in ("int16", "int32")


def _past_int32(call: Call) -> bool:
    """A non-inner slice of more than 2**31 - 1 elements: FlagGems' kernels form the row
    offset n * K in int32 (seen on an H200 with 5.0.2 and 5.4.0.dev0: sum, mean, softmax
    and argmax die with an illegal memory access)."""
    m, n, k = _mnk(call)
    return call.non_inner and n * k > 2**31 - 1


def _past_grid_y(call: Call, columns: int) -> bool:
    """A non-inner call whose kernel puts a program per ``columns`` inner columns on grid
    axis y, and more of them than the axis takes (a routed call runs the moved axis: K = 1)."""
    return call.non_inner and not call.routed and -(-_mnk(call)[2] // columns) > GRID_LIMITS[1]


def _argmin_grid_y(call: Call) -> bool:
    """argmin launches (cdiv(M, BLOCK_M), K) for a non-inner dim, and its split-K path
    ((N % 64 == 0 or N == 512), K % 32 == 0, M % 8 == 0, a float) (cdiv(M, 8), cdiv(K, 32)):
    past 65535 on grid axis y the launch fails (seen on an H200: (2, 5, 127, 129), dim 0)."""
    m, n, k = _mnk(call)
    split = (n % 64 == 0 or n == 512) and k % 32 == 0 and m % 8 == 0 and call.dtype.startswith(("float", "bfloat"))
    return _past_grid_y(call, 32 if split else 1)


def _column_tiles_past_grid_y(fp32: int, half: int) -> Callable[[Call], bool]:
    """Non-inner kernels that put column tiles of at most ``fp32`` (``half`` for fp16/bf16)
    columns on grid axis y: past 65535 tiles the launch fails (mean's vector path tiles
    512 / 1024, argmax's TILE_K stops at 512; seen on an H200: (2, 67108867), dim 0; 5.0.2's
    log_softmax launches (cdiv(M, BLOCK_M), K): one column a program)."""
    return lambda call: _past_grid_y(call, half if call.dtype in ("float16", "bfloat16") else fp32)


def _nan_dropped(*values: str) -> Callable[[Call], bool]:
    """Slices holding a NaN (``values``: planted patterns that make one) of more than one element."""
    return lambda call: call.values in values and call.reduced_size > 1


def _dtype_in(*dtypes: str) -> Callable[[Call], bool]:
    return lambda call: call.dtype in dtypes


def _asks_float64(call: Call) -> bool:
    """dtype=torch.float64 asked of a lower-precision input: FlagGems accumulates in the
    input's dtype and only writes the result in float64."""
    return dict(call.kwargs).get("dtype") == "float64" and call.dtype != "float64"


def _correction_past_n(call: Call) -> bool:
    """std with N - correction <= 0: torch divides by it (inf, NaN where every value is
    equal), FlagGems returns NaN at once (both lines)."""
    correction = dict(call.kwargs).get("correction")
    return correction is not None and call.reduced_size > 0 and call.reduced_size - correction <= 0


# a workaround that wraps the backward makes its tensors contiguous first (routed)
_BACKWARD_STRIDES = Defect(
    "backward_output_strides_ignored", lambda c: c.layout == "column_major_output" and not c.routed
)


def _small_n_ignores_k(call: Call) -> bool:
    """special_log_softmax (5.4.0.dev0) sends N <= 1024 to small_n_log_softmax_kernel, one
    program per (m, k) reading N contiguous values from row m * stride(dim - 1): over a
    non-inner dim (K > 1) it reads and writes the wrong elements (past the tensor, too) -
    except over dim 0 with N == 1, where the stride it takes is 1 and every (m, k) is one element."""
    return call.non_inner and 0 < call.reduced_size <= 1024 and not (call.reduced == (0,) and call.reduced_size == 1)


def _empty(call: Call) -> bool:
    return 0 in call.shape


def _empty_reduced(call: Call) -> bool:
    return call.reduced_size == 0


def _no_torch_fn(*args: Any, **kwargs: Any) -> Any:
    raise TypeError("a reduction row needs torch_fn: torch's own call of the op")


@dataclass(frozen=True)
class Op(Row):
    """A reduction row: the schema's fields (name, module, gems_names, family, lines, features,
    defects, unreached), and how its entry points are called and checked."""

    suite: ClassVar[str] = "reductions"  # the contract suite and family behaviour (families.reductions)
    case_type: ClassVar[type] = Case

    family: str = "reductions"  # the op family (issue 29): the README's defect table, per family
    entry: str = ""  # the entry point contracts call
    kind: str = ""  # KINDS
    dim_forms: tuple[str, ...] = ()  # forms the entry point accepts, the one torch dispatch passes first
    torch_fn: Callable[..., Any] = (
        _no_torch_fn  # (x, dim, keepdim, **kwargs) -> torch's result; float64 = the reference
    )
    entries: tuple[EntryPoint, ...] = ()  # everything the workaround may wrap (the entry point first)
    out_entry: str | None = None  # the out= binding contracts call
    # "positional" | "keyword" (std) | "none" (softmax-like) | "dim_keyword": dim and keepdim by
    # name (vector_norm(x, ord=2, dim=None, keepdim=False): ord comes second)
    keepdim: str = "positional"
    dtype_arg: bool = False  # takes dtype= (sum, mean, prod)
    accepts_none: bool = False  # dim=None reduces everything
    fastpath: str | None = None  # "sum" | "mean" | "softmax": the workaround's own kernel takes it
    # "fast" | "toy": tl.reduce with a combine_fn runs per element there | "rows": one program
    # per output row of a moved axis (std: 65537 rows of two take half a minute there)
    interpreter: str = "fast"
    real_case: bool = False  # the seed's Qwen-VL case is this op
    seed_table: bool = False  # in the seed's verification table (N=4, K=1024, dim=1)
    extreme: str | None = None  # index ops: "max" or "min", the value the index points at
    exempt: Mapping[str, str] = field(default_factory=dict)  # contract property -> why it does not apply
    reference_fn: Callable[[Any, Any, bool], Any] | None = None  # torch_fn's values by a faster route
    composed_of: str | None = None  # where FlagGems lacks the op, aten composes it through this op's out=
    params: tuple[Param, ...] = ()  # keyword parameters beyond dim: each a sweep axis (test_params)
    paths: tuple[Path, ...] = ()  # the kernel paths its heuristics choose (test_paths)
    absorbing: float | None = None  # a value that decides the result wherever it is (prod: 0)
    running_max: bool = False  # keeps a running maximum across tiles (softmax-like: exp(x - max))
    picks: str | None = None  # "max" | "min": the result is that extremum of its slice (amax, max.dim)
    # the entry point returns a tuple, torch a named one with these fields (max.dim: values,
    # indices; aminmax: min, max): the row checks ``result`` (the first), a view each other field
    fields: tuple[str, ...] = ()
    result: str | None = None  # the field of a tuple result this row checks (None: the result itself)
    torch_tuple: Callable[..., Any] | None = None  # (x, dim, keepdim) -> torch's named tuple (fields)
    # where the answer turns on exact zeros (all, any, count_nonzero), inputs hold them:
    # "sparse" a few nonzero values a slice, "dense" a few zeros a slice, "half" zeros half the time -
    # so that about half the slices answer each way and a kernel that reads the wrong rows shows
    zeros: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if "." in self.name and self.result is None:
            raise ValueError(f"op {self.name!r}: '.' names a row's view (max_dim.indices), not a row")
        if self.kind not in KINDS or not self.entry or not self.dim_forms or self.torch_fn is _no_torch_fn:
            raise ValueError(
                f"op {self.name!r}: a reduction row needs an entry point, a kind ({', '.join(KINDS)}), "
                "its dim forms and torch's call"
            )

    def entry_names(self) -> tuple[str, ...]:
        return (self.entry,)

    def row_masked(self, version: str | None) -> tuple[str, ...]:
        """FlagGems names them ``*_non_inner``: the kernels of its paths in the line so named."""
        return tuple(dict.fromkeys(p.kernel for p in self.paths_in(version) if p.kernel.endswith("non_inner")))

    def paths_in(self, version: str | None) -> tuple[Path, ...]:
        return tuple(p for p in self.paths if p.in_version(version))

    @property
    def dim_form(self) -> str:
        return self.dim_forms[0]

    @property
    def keeps_shape(self) -> bool:
        """The result has the input's shape (softmax, cumsum), not one with the dim reduced."""
        return self.kind in ("along", "scan")

    def dim_arg(self, d: Any, form: str | None = None) -> Any:
        if d is None or isinstance(d, (list, tuple)):
            return d
        return [d] if (form or self.dim_form) == "list" else d

    def invoke(self, fn: Callable[..., Any], x: Any, dim: Any, keepdim: bool = False, **kwargs: Any) -> Any:
        """Call ``fn`` (this op's entry point, wrapped or not) with this op's conventions."""
        if self.keepdim == "none":
            out = fn(x, dim, **kwargs)
        elif self.keepdim == "dim_keyword":
            out = fn(x, dim=dim, keepdim=keepdim, **kwargs)
        elif self.keepdim == "keyword":
            out = fn(x, dim, keepdim=keepdim, **kwargs)
        else:
            out = fn(x, dim, keepdim, **kwargs)
        return out if self.result is None else out[self.fields.index(self.result)]  # FlagGems': a plain tuple too

    def views(self) -> tuple[Op, ...]:
        """One op per field of a tuple result past the first (``name.field``), each checked as
        an op of its own: max.dim's indices as an index op (ties, first index, points at the
        extremum), aminmax's max as the maximum it is; the row's defects apply to each."""
        if self.torch_tuple is None:
            return ()
        out: list[Op] = []
        for name in self.fields[1:]:
            torch_fn = _first_field(self.torch_tuple, name)
            if name == "indices" and self.kind == "scan":  # cummax's: torch's own indices, exactly
                out.append(
                    replace(
                        self,
                        name=f"{self.name}.indices",
                        result=name,
                        torch_fn=torch_fn,
                        reference_fn=None,
                        exempt={**self.exempt, "large_inputs": _INDEX},
                    )
                )
            elif name == "indices":
                out.append(
                    replace(
                        self,
                        name=f"{self.name}.indices",
                        kind="index",
                        extreme=self.picks,
                        result=name,
                        torch_fn=torch_fn,
                        reference_fn=None,
                        exempt={**self.exempt, "large_inputs": _INDEX},
                        absorbing=None,
                        params=tuple(p for p in self.params if p.name == "keepdim"),
                    )
                )
            else:
                out.append(
                    replace(
                        self,
                        name=f"{self.name}.{name}",
                        result=name,
                        torch_fn=torch_fn,
                        reference_fn=None,
                        picks=name if name in ("max", "min") else self.picks,
                    )
                )
        return tuple(out)

    def view(self, name: str) -> Op | None:
        return next((v for v in self.views() if v.name == f"{self.name}.{name}"), None)

    def call(
        self, x: Any, d: Any, keepdim: bool = False, form: str | None = None, attr: str | None = None, **kwargs: Any
    ) -> Any:
        """Call the entry point (or ``attr``) as installed now, the way torch dispatch calls it."""
        return self.invoke(self.fn(attr), x, self.dim_arg(d, form), keepdim, **kwargs)

    def reference(self, x: Any, d: Any, keepdim: bool = False, **kwargs: Any) -> Any:
        """torch on float64 CPU: what every contract compares against (``kwargs``: torch's
        keyword arguments for a swept parameter; a faster ``reference_fn`` takes none)."""
        if x.is_floating_point():
            fn = self.torch_fn if kwargs or self.reference_fn is None else self.reference_fn
            return fn(x.detach().cpu().double(), d, keepdim, **kwargs)
        return self.torch_fn(x.detach().cpu(), d, keepdim, **kwargs)

    def exempt_from(self, prop: str) -> str | None:
        """Why ``prop`` does not apply to this op, or None."""
        return self.exempt.get(prop)

    def spoils(self, defect: Defect) -> bool:
        """The defect reaches the field this row (or view) checks."""
        return not defect.fields or (self.result or "") in defect.fields


def _torch(method: str, takes_keepdim: bool = True) -> Callable[[Any, Any, bool], Any]:
    """torch's own op as ``(x, dim, keepdim) -> result``; dim None reduces everything."""

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        fn = getattr(x, method)
        if not takes_keepdim:
            return fn(d, **kwargs)
        return fn(dim=d, keepdim=k, **kwargs)

    call.__name__ = f"torch_{method}"
    return call


def _two_pass(x: Any, d: Any, k: bool, root: bool) -> Any:
    """torch's std (``root``) or var, correction 1, of a float64 tensor from two passes of
    torch's sums: its values to float64 rounding, without its CPU kernel's per-output loop
    over a non-inner dim, which made the grid-limit cases the slowest of a hardware lane
    (figures: benchmarks/results/README.md, "Figures formerly in docstrings").  NaN
    where fewer than two values are reduced, as torch gives.  The deviations are scaled by
    their largest magnitude first: squares of deviations near 1e-162 are subnormal and lose
    their digits (hypothesis found a std 15% off there)."""
    import torch

    mean = x.mean(dim=d, keepdim=True)
    n = x.numel() // max(mean.numel(), 1)
    if n < 2:
        return torch.full_like(x.sum(dim=d, keepdim=k), math.nan)
    dev = x - mean
    dims = tuple(range(x.dim())) if d is None else (d,) if isinstance(d, int) else tuple(d)
    scale = dev.abs().amax(dim=dims, keepdim=True) if dev.numel() else torch.ones_like(mean)
    scale = torch.where(torch.isfinite(scale) & (scale > 0), scale, torch.ones_like(scale))
    spread = (dev / scale).square_().sum(dim=d, keepdim=True).div_(n - 1)
    out = spread.sqrt_().mul_(scale) if root else spread.mul_(scale).mul_(scale)
    return out if k else out.squeeze(dims) if dims else out


def _std_two_pass(x: Any, d: Any, k: bool) -> Any:
    return _two_pass(x, d, k, root=True)


def _var_two_pass(x: Any, d: Any, k: bool) -> Any:
    return _two_pass(x, d, k, root=False)


def _norm_inner(x: Any, d: Any, k: bool) -> Any:
    """torch's 2-norm over one dim of a float64 tensor, that dim moved innermost first: its
    CPU kernel over a non-inner dim is several times slower (the figure: benchmarks/results/
    README.md, "Figures formerly in docstrings")."""
    import torch

    single = d if isinstance(d, int) else d[0] if isinstance(d, (list, tuple)) and len(d) == 1 else None
    if single is None or x.dim() == 0:
        return torch.linalg.vector_norm(x, 2, dim=d, keepdim=k)
    single %= x.dim()
    out = torch.linalg.vector_norm(x.movedim(single, -1).contiguous(), 2, dim=-1)
    return out.unsqueeze(single) if k else out


_NO_KEEPDIM = "the op keeps the input's shape: no keepdim"
_INDEX = "an index: large values change nothing it can show"
_INTS = ("int8", "int16", "int32", "uint8")  # promoted to int64 by torch's sum and prod

# FlagGems' own defects (the catalogue: config/platforms.yaml, defects: whose flag_gems), seen on
# the interpreter and the H200; each predicate says which calls run into it.
_NOT_PROMOTED = Defect("int_sum_not_promoted", _dtype_in(*_INTS))
_ACCEPTED = Defect("int_input_accepted", _dtype_in(*INTEGERS))
_EMPTY = Defect("empty_input_diverges", _empty)
_EMPTY_REDUCED = Defect("empty_input_diverges", _empty_reduced)
_FP64 = Defect("fp64_computed_in_fp32", _dtype_in("float64"))
_FP64_ASKED = Defect("fp64_computed_in_fp32", _asks_float64)
_INT32 = Defect("int32_offset_overflow", _past_int32)  # every line seen: 5.0.2 and 5.4.0.dev0
_NAN_DROPPED = "nan_dropped_by_max"

# Compiler features (defect catalogue ids, config/platforms.yaml) every reduction kernel here
# relies on: masked loads and loops, partial tiles, half loads reduced in fp32.
_KERNEL = (
    "runtime_loop",
    "masked_1d_load",
    "masked_2d_col_load",
    "masked_load_other",
    "mask_2d_logic",
    "masked_loop_tail",
    "reduce_partial_tile",
    "half_accumulation",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
)
_TILED = ("masked_2d_row_load", "partial_2d_tiles", "grid_axes", "int64_offset_arith")  # 2-D (rows, columns) tiles
_LARGE_NOT_RUN = (
    "not in the hardware lane's large-index set: each case holds 8 to 16 GiB and ten seconds; the "
    "set is the ops seen to overflow int32 offsets (int32_offset_overflow)"
)


def _dtype_param(values: tuple[Any, ...], dtypes: tuple[str, ...]) -> Param:
    return Param("dtype", values, lambda v: {} if v is None else {"dtype": v}, dtypes)


_KEEPDIM_PARAM = Param("keepdim", (False, True))
_REDUCE_PARAMS = (
    _KEEPDIM_PARAM,
    _dtype_param((None, "float64"), ("float32",)),
    _dtype_param(("float32",), ("float16",)),
)
_H2F = Param("half_to_float", (False, True), lambda v: {"dtype": "float32"} if v else {}, ("float16",), dims="one")
_WHOLE_PROD = "prod() without a dim (aten prod): not an entry point of this row"
P = Path  # the path tables below: (name, shape, dim, kernel, tiles, ...)

# Paths read from the kernels and their heuristics with the CPU lane's 4-SM profiles
# (nvidia-small and iluvatar-small choose the same; softmax_heur_tile_k doubles TILE_K while
# the grid has more than one wave, TILE_N = cdiv(8192, TILE_K); inner tiles next_pow2(N) up
# to 32768, else 4096 in a loop).
_SUM_PATHS = (
    P("full reduction, two stages (dim=[])", (5, 7), [], "sum_kernel_1"),
    P("inner, one tile", (3, 5), 1, "sum_dim_kernel_inner", True),
    P("inner, a loop over 4096-wide tiles", (1, 32769), 1, "sum_dim_kernel_inner", False),
    P("non-inner, one tile", (3, 5, 64), 1, "sum_dim_kernel_non_inner", True),
    P("non-inner, a loop over row tiles", (1, 513, 64), 1, "sum_dim_kernel_non_inner", False),
    P("non-inner, one-row tiles over a wide K", (3, 32768), 0, "sum_dim_kernel_non_inner", False),
    P("several dims, one block", (3, 5, 6), [0, 2], "sum_dim_kernel"),
    P("several dims, a loop past BLOCK_N", (2, 33, 33), [1, 2], "sum_dim_kernel"),
)
_MEAN_PATHS = (
    P("full reduction, two stages (dim=[])", (5, 7), [], "mean_kernel_1"),
    P("non-inner, K >= 1024: vector loads", (1, 5, 1024), 1, "mean_dim_kernel_non_inner_vec"),
    P(
        "non-inner, K >= 1024: vector loads, half precision",
        (1, 64, 1024),
        1,
        "mean_dim_kernel_non_inner_vec",
        dtype="float16",
    ),
    # the grid's later column programs: past one 512-wide tile (float32) and past one program's
    # 128 x 8 half-precision vector block (its base must count the vector width)
    P("non-inner, vector loads past one 512-column program", (2, 5, 1500), 1, "mean_dim_kernel_non_inner_vec"),
    P(
        "non-inner, half-precision vector loads past one 1024-column program",
        (2, 5, 1500),
        1,
        "mean_dim_kernel_non_inner_vec",
        dtype="float16",
    ),
    P("non-inner, one tile", (3, 5, 64), 1, "mean_dim_kernel_non_inner", True),
    P("non-inner, a loop over row tiles", (3, 65, 64), 1, "mean_dim_kernel_non_inner", False),
    P("inner, one tile", (3, 5), 1, "mean_dim_kernel_inner", True),
    P("inner, a loop over 4096-wide tiles", (1, 32769), 1, "mean_dim_kernel_inner", False),
    P("several dims", (3, 5, 6), [0, 2], "mean_dim_kernel"),
    P("several dims past two column tiles", (64, 5, 70), [0, 2], "mean_dim_kernel"),
)
_SOFTMAX_PATHS = (
    P("non-inner, one tile", (3, 5, 64), 1, "softmax_kernel_non_inner", True),
    P("non-inner, online max across row tiles", (1, 513, 64), 1, "softmax_kernel_non_inner", False),
    # two m: a pass that drops pid_m's offset writes the second m over the first
    P("non-inner, row tiles of two m", (2, 513, 64), 1, "softmax_kernel_non_inner", False),
    P("inner, one tile", (3, 5), 1, "softmax_kernel_inner", True),
    P("inner, tiles and a partial last one", (1, 32769), 1, "softmax_kernel_inner", False),
    P("inner, whole tiles only", (1, 36864), 1, "softmax_kernel_inner", False),
    P(
        "backward, non-inner, one tile",
        (3, 5, 4),
        1,
        "softmax_backward_kernel_non_inner",
        True,
        entry="softmax_backward",
    ),
    P(
        "backward, non-inner, a loop over row tiles",
        (1, 33, 2),
        1,
        "softmax_backward_kernel_non_inner",
        False,
        entry="softmax_backward",
    ),
    P("backward, inner, one tile", (3, 5), 1, "softmax_backward_kernel_inner", True, entry="softmax_backward"),
    P(
        "backward, inner, a loop over tiles",
        (3, 33),
        1,
        "softmax_backward_kernel_inner",
        False,
        entry="softmax_backward",
    ),
)
_LOG_SOFTMAX_PATHS = (
    P("one kernel, N <= 256", (3, 5), 1, "log_softmax_kernel"),
    P("one kernel, a loop past 256", (3, 257), 1, "log_softmax_kernel", loop=True),
    P("one kernel over a non-inner dim", (3, 5, 4), 1, "log_softmax_kernel", lines=("5.0",)),
    P("non-inner, one tile", (3, 5, 4), 1, "log_softmax_kernel_non_inner", True, lines=("5.4",)),
    P("non-inner, online max across row tiles", (1, 513, 64), 1, "log_softmax_kernel_non_inner", False, lines=("5.4",)),
    P("backward, N <= 256", (3, 5), 1, "log_softmax_backward_kernel", entry="log_softmax_backward"),
    P("backward over a non-inner dim", (3, 5, 4), 1, "log_softmax_backward_kernel", entry="log_softmax_backward"),
    P("backward, a loop past 256", (3, 257), 1, "log_softmax_backward_kernel", entry="log_softmax_backward"),
)
_ARGMAX_PATHS = (
    P("every dim (dim=None), two stages", (5, 7), None, "argmax_kernel_1", loop=True),
    P("non-inner, one tile of N <= 128 rows", (3, 4, 64), 1, "argmax_kernel_non_inner", True),
    P("non-inner, one tile past 128 rows", (2, 556, 8), 1, "argmax_kernel_non_inner", True),
    P("non-inner, a loop over row tiles", (1, 4097, 2), 1, "argmax_kernel_non_inner", False),
    P("inner, one tile", (3, 5), 1, "argmax_kernel_inner", True),
    P("inner, whole 4096-wide tiles", (1, 36864), 1, "argmax_kernel_inner", False),
    P("inner, tiles and a partial last one", (1, 32769), 1, "argmax_kernel_inner", False),
)
_ARGMIN_PATHS = (
    P("every dim (dim=None), two stages", (5, 7), None, "argmin_kernel_1", loop=True),
    P("K == 1, one tile", (4, 8), 1, "argmin_kernel_opt_k1"),
    P("K == 1, a loop over 4096-wide tiles", (4, 8192), 1, "argmin_kernel_opt_k1", loop=True),
    P("K == 1 for int32 (the general kernel)", (4, 8), 1, "argmin_kernel", dtype="int32"),
    P("split K (N % 64 == 0, K % 32 == 0, M % 8 == 0)", (8, 64, 32), 1, "argmin_split_K_kernel_merged"),
    P("split K, a loop over row tiles", (8, 1024, 32), 1, "argmin_split_K_kernel_merged", loop=True),
    P("general, one tile", (3, 5, 4), 1, "argmin_kernel"),
    P("general, a loop past 4096 rows", (1, 4097, 2), 1, "argmin_kernel", loop=True),
)
_PROD_PATHS = (
    P("one kernel over the moved dim", (3, 5), 1, "prod_kernel", lines=("5.0",)),
    P("one kernel, a loop over 1024-wide chunks", (1, 8193), 1, "prod_kernel", lines=("5.0",), loop=True),
    P("inner, one tile", (3, 5), 1, "prod_dim_kernel_inner", True, lines=("5.4",)),
    P("inner, a loop over 4096-wide tiles", (1, 32769), 1, "prod_dim_kernel_inner", False, lines=("5.4",)),
    P("non-inner, one tile", (3, 5, 4), 1, "prod_dim_kernel_non_inner", True, lines=("5.4",)),
    P("non-inner, a loop over row tiles", (1, 8193, 2), 1, "prod_dim_kernel_non_inner", False, lines=("5.4",)),
)
_STD_PATHS = (
    P("every dim (dim=None): map, then reduce", (5, 7), None, "_std_map_kernel"),
    P("every dim over several map blocks", (3000,), None, "_std_reduce_kernel"),
    # the reduce pass loops over its partials 1024 at a time only past 1024 map blocks of 1024
    P(
        "every dim past 2**20 elements: the reduce pass loops over its partials",
        (2**20 + 8195,),
        None,
        "_std_reduce_kernel",
        loop=True,
    ),
    P("fused, the moved dim", (3, 5), 1, "_std_fused_dim_kernel", lines=("5.0",)),
    P("fused over a non-inner dim", (3, 5, 4), 1, "_std_fused_dim_kernel", lines=("5.0",)),
    P("fused, a loop past 1024", (2, 1025), 1, "_std_fused_dim_kernel", lines=("5.0",), loop=True),
    P("inner, one tile", (3, 5), 1, "_std_dim_kernel_inner", True, lines=("5.4",)),
    P("inner, a loop over tiles", (1, 32769), 1, "_std_dim_kernel_inner", False, lines=("5.4",)),
    P("non-inner, one tile", (3, 5, 4), 1, "_std_dim_kernel_non_inner", True, lines=("5.4",)),
    P("non-inner, a loop over row tiles", (1, 8193, 2), 1, "_std_dim_kernel_non_inner", False, lines=("5.4",)),
    P("several dims, fused", (3, 5, 6), [0, 2], "_std_fused_dim_kernel", lines=("5.4",)),
)
_LOGSUMEXP_PATHS = (
    P("several dims, one at a time", (3, 5, 4), [0, 2], "logsumexp_kernel_non_inner"),
    P("inner, one tile", (3, 5), 1, "logsumexp_kernel_inner", True),
    P("inner, a loop over tiles", (1, 32769), 1, "logsumexp_kernel_inner", False),
    P("non-inner, one tile", (3, 5, 4), 1, "logsumexp_kernel_non_inner", True),
    P("non-inner, online max across row tiles", (1, 513, 64), 1, "logsumexp_kernel_non_inner", False),
)
# flag_gems 5.4's torch.special.logsumexp: its own module, the same kernels as logsumexp's
# (several dims: one at a time, the last first, keepdim between)
_SPECIAL_LOGSUMEXP_PATHS = (
    P("several dims, one at a time", (3, 5, 4), [0, 2], "logsumexp_kernel_non_inner", lines=("5.4",)),
    P("inner, one tile", (3, 5), 1, "logsumexp_kernel_inner", True, lines=("5.4",)),
    P("inner, a loop over tiles", (1, 32769), 1, "logsumexp_kernel_inner", False, lines=("5.4",)),
    P("non-inner, one tile", (3, 5, 4), 1, "logsumexp_kernel_non_inner", True, lines=("5.4",)),
    P("non-inner, online max across row tiles", (1, 513, 64), 1, "logsumexp_kernel_non_inner", False, lines=("5.4",)),
)
# flag_gems 5.4's torch.special.log_softmax: N <= 1024 one program a row of next_pow2(N), else
# an online (BLOCK_M, BLOCK_N) walk over N with the rows of M masked
_SPECIAL_LOG_SOFTMAX_PATHS = (
    P("N <= 1024, one program a row", (3, 5), 1, "small_n_log_softmax_kernel", lines=("5.4",)),
    P(
        "N past 1024, two passes over column tiles",
        (3, 1025),
        1,
        "large_n_log_softmax_kernel",
        loop=True,
        lines=("5.4",),
    ),
    P("N past 1024 over a non-inner dim", (2, 1025, 3), 1, "large_n_log_softmax_kernel", loop=True, lines=("5.4",)),
)


# min/max (issue 29): FlagGems' amax / amin / max.dim / min.dim move the reduced dims to the
# back (dim_compress: a permuted copy), then one kernel tiles (BLOCK_M output rows, BLOCK_N
# columns) with the row condition bounding outputs, whose stores keep their own mask: a
# dropped row condition reads rows past the end into tile rows never stored.  The autotuner's
# naive_reduction configs (BLOCK_M 1..8, BLOCK_N 1024; the interpreter takes the first):
# N <= 1024 is one column tile, more a loop; dim=None two stages of next_pow2(sqrt(numel)).
def _minmax_paths(kernel: str, *, full: bool, lines: tuple[str, ...] = ()) -> tuple[Path, ...]:
    rows = (
        P("one column tile (N <= BLOCK_N)", (3, 5, 64), 1, kernel, lines=lines),
        P("inner, one column tile", (3, 64, 5), -1, kernel, lines=lines),
        P("a loop over 1024-wide column tiles", (3, 1100, 2), 1, kernel, loop=True, lines=lines),
    )
    if not full:
        return rows
    return (
        P("every dim (dim=None), two stages", (5, 7), None, f"{kernel}_1", lines=lines, loop=True),
        *rows,
        P("several dims, compressed to the back", (3, 5, 6), [0, 2], kernel, lines=lines),
    )


def _torch_amin_amax(method: str) -> Callable[..., Any]:
    """torch's amax / amin as ``(x, dim, keepdim)``: dim None reduces everything (aten's dim=[])."""

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        return getattr(x, method)(dim=() if d is None else d, keepdim=k)

    call.__name__ = f"torch_{method}"
    return call


def _torch_tuple(method: str) -> Callable[..., Any]:
    """torch's max.dim / min.dim / aminmax as ``(x, dim, keepdim)``: its named tuple."""

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        return getattr(x, method)(dim=d, keepdim=k, **kwargs)

    call.__name__ = f"torch_{method}"
    return call


def _first_field(whole: Callable[..., Any], name: str) -> Callable[..., Any]:
    """One field of ``whole``'s named tuple, as ``(x, dim, keepdim)``."""

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        return getattr(whole(x, d, k, **kwargs), name)

    call.__name__ = f"{getattr(whole, '__name__', 'torch')}_{name}"
    return call


_MINMAX_FEATURES = (*_KERNEL, "partial_2d_tiles", "grid_axes", "int64_offset_arith")
_NOT_ROW = "{}() without a dim (aten {}): not an entry point of this row"


def _minmax(name: str, module: str, picks: str, lines: tuple[str, ...] = (), defects: tuple[Defect, ...] = ()) -> Op:
    """A min/max row: ``amax`` / ``amin`` (dims and dim=None) or ``max_dim`` / ``min_dim``
    (one dim; values and indices: the row and its indices view, ``Op.views``) of
    ``flag_gems.ops.<module>``."""
    kernel = f"{module}_kernel"
    common: dict[str, Any] = dict(
        module=f"flag_gems.ops.{module}",
        entry=name,
        kind="reduce",
        entries=(EntryPoint(name, "reduce"),),
        picks=picks,
        family="min/max",
        interpreter="rows",
        params=(_KEEPDIM_PARAM,),
        exempt={"large_index": _LARGE_NOT_RUN},
        defects=(Defect(_NAN_DROPPED, _nan_dropped("nan")), *defects),
    )
    if not name.endswith("_dim"):
        return Op(
            name=name,
            dim_forms=("list", "int"),
            torch_fn=_torch_amin_amax(name),
            gems_names=(name,),
            accepts_none=True,
            paths=_minmax_paths(kernel, full=True, lines=lines),
            features=_MINMAX_FEATURES,
            unreached={f"{kernel}_2": f"the second stage of dim=None: launched with {kernel}_1"},
            **common,
        )
    whole = _NOT_ROW.format(module, module)
    return Op(
        name=name,
        dim_forms=("int",),
        torch_fn=_first_field(_torch_tuple(module), "values"),
        gems_names=(f"{module}.dim",),
        fields=("values", "indices"),
        result="values",
        torch_tuple=_torch_tuple(module),
        paths=_minmax_paths(kernel, full=False, lines=lines),
        features=(*_MINMAX_FEATURES, "argmax_tie_break"),
        unreached={f"{kernel}_1": whole, f"{kernel}_2": whole},
        **common,
    )


def _aminmax() -> Op:
    """aminmax: (min, max) of a dim or of everything, one kernel for both (FlagGems returns a
    plain tuple); the row checks the min, its ``aminmax.max`` view the max."""
    kernel = "aminmax_kernel"
    return Op(
        name="aminmax",
        module="flag_gems.ops.aminmax",
        entry="aminmax",
        kind="reduce",
        dim_forms=("int",),
        torch_fn=_first_field(_torch_tuple("aminmax"), "min"),
        gems_names=("aminmax",),
        entries=(EntryPoint("aminmax", "reduce"),),
        accepts_none=True,
        picks="min",
        fields=("min", "max"),
        result="min",
        torch_tuple=_torch_tuple("aminmax"),
        family="min/max",
        interpreter="rows",
        params=(_KEEPDIM_PARAM,),
        exempt={"large_index": _LARGE_NOT_RUN},
        features=_MINMAX_FEATURES,
        paths=tuple(p for p in _minmax_paths(kernel, full=True) if not isinstance(p.dim, list)),
        unreached={f"{kernel}_2": f"the second stage of dim=None: launched with {kernel}_1"},
        defects=(Defect(_NAN_DROPPED, _nan_dropped("nan")),),
    )


# variance and norms (issue 29): var, var_mean and vector_norm move the reduced dims to the
# back (dim_compress) and tile (BLOCK_M output rows, BLOCK_N columns) with the row condition
# bounding outputs, as the min/max family does (their naive configs: the interpreter takes
# BLOCK_M 1, BLOCK_N 1024); dim=None is two stages over next_pow2 blocks.
def _column_tile_paths(
    kernel: str, *, first: str, stage: str, lines: tuple[str, ...] = (), kwargs: tuple[tuple[str, Any], ...] = ()
) -> tuple[Path, ...]:
    """The paths of a kernel that tiles output rows and walks the reduced columns (``kernel``),
    and of its two-stage dim=None (``first``; ``stage``: what the row says of the second)."""
    label = f" ({stage})" if stage else ""
    return (
        P(f"every dim (dim=None), two stages{label}", (5, 7), None, first, lines=lines, kwargs=kwargs),
        # past 1024 elements the first stage writes several blocks' partials, which the second merges
        P(
            f"every dim (dim=None), several first-stage blocks{label}",
            (3, 700),
            None,
            first,
            lines=lines,
            kwargs=kwargs,
        ),
        P(f"one column tile (N <= BLOCK_N){label}", (3, 5, 64), 1, kernel, lines=lines, kwargs=kwargs),
        P(f"inner, one column tile{label}", (3, 64, 5), -1, kernel, lines=lines, kwargs=kwargs),
        # the CPU lane's tuner takes BLOCK_N 2048 for these kernels: past two tiles, each loop runs twice
        P(f"a loop over column tiles, past two{label}", (3, 4100, 2), 1, kernel, loop=True, lines=lines, kwargs=kwargs),
        P(f"several dims, compressed to the back{label}", (3, 5, 6), [0, 2], kernel, lines=lines, kwargs=kwargs),
    )


def _named_pair(fn: Callable[..., Any], names: tuple[str, str]) -> Callable[..., Any]:
    """torch's plain pair (var_mean's (var, mean)) as a named one, for ``Op.fields``."""
    from collections import namedtuple

    pair = namedtuple("pair", names)  # type: ignore[misc]

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        return pair(*fn(x, d, k, **kwargs))

    call.__name__ = getattr(fn, "__name__", "torch_pair")
    return call


def _torch_var_mean(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
    import torch

    return torch.var_mean(x, dim=d, keepdim=k, **kwargs)


def _torch_vector_norm(x: Any, d: Any, k: bool, ord: Any = 2, **kwargs: Any) -> Any:
    import torch

    return torch.linalg.vector_norm(x, ord, dim=d, keepdim=k, **kwargs)


def _torch_count_nonzero(x: Any, d: Any, k: bool = False, **kwargs: Any) -> Any:
    import torch

    return torch.count_nonzero(x, dim=d)


def _torch_all_any(method: str) -> Callable[..., Any]:
    """torch's all / any as ``(x, dim, keepdim)``: a dim list, an int, or None (everything)."""

    def call(x: Any, d: Any, k: bool, **kwargs: Any) -> Any:
        if d is None:
            out = getattr(x, method)()
            return out.reshape([1] * x.dim()) if k else out
        return getattr(x, method)(dim=tuple(d) if isinstance(d, list) else d, keepdim=k)

    call.__name__ = f"torch_{method}"
    return call


def _correction_exceeds_n(call: Call) -> bool:
    """var / var_mean with correction > N: FlagGems divides by N - correction (a negative
    variance), torch by max(0, N - correction) (inf)."""
    correction = dict(call.kwargs).get("correction")
    return correction is not None and 0 < call.reduced_size < correction


_CORRECTION = Param("correction", (0, 1, 2, 0.5, 5), lambda v: {"correction": v})
# var.dim's own argument (torch.var(x, dim, unbiased)): an argument of torch's call, not of
# FlagGems' entry point, so it runs through dispatch only
_UNBIASED = Param("unbiased", (True, False), routes=("dispatch",))


def _var_dim_positional(call: Call) -> bool:
    """aten var.dim is (self, dim, unbiased=True, keepdim=False); FlagGems registers var_dim
    with var.correction's signature (x, dim=None, *, correction=None, keepdim=False), so a
    call that hands it unbiased or keepdim (torch.var(x, 1, keepdim=True), x.var(1, False))
    raises TypeError where torch answers (torch hands over positionally every argument up to
    the last that differs from its default: unbiased=True alone is dropped)."""
    given = dict(call.kwargs)
    return call.dispatched and (given.get("keepdim") is True or given.get("unbiased") is False)


_ORD = Param("ord", (2, 1, float("inf"), float("-inf"), 0, 3, 0.5), lambda v: {"ord": v})


def _variance(name: str) -> Op:
    """var, or var_mean (a pair: the row checks the variance, its ``var_mean.mean`` view the mean)."""
    kernel = f"{name}_welford_kernel"
    pair = name == "var_mean"
    return Op(
        name=name,
        module=f"flag_gems.ops.{name}",
        entry=name,
        kind="reduce",
        dim_forms=("list",),
        torch_fn=_first_field(_named_pair(_torch_var_mean, ("var", "mean")), "var") if pair else _torch("var"),
        reference_fn=_var_two_pass,
        gems_names=(name,),
        entries=(EntryPoint(name, "reduce"),),
        keepdim="keyword",
        accepts_none=True,
        family="variance/norms",
        interpreter="rows",
        params=(_KEEPDIM_PARAM, _CORRECTION, *(() if pair else (_UNBIASED,))),
        fields=("var", "mean") if pair else (),
        result="var" if pair else None,
        torch_tuple=_named_pair(_torch_var_mean, ("var", "mean")) if pair else None,
        exempt={"large_index": _LARGE_NOT_RUN},
        # correction N - 1: the output is the merged sum of squared deviations itself, held to
        # rtol (a variance near 1 falls within the atol that n terms earn)
        paths=(
            *_column_tile_paths(kernel, first=f"{name}_kernel_1", stage=""),
            P(
                "every dim (dim=None), several first-stage blocks: the merged sum of squares",
                (3, 700),
                None,
                f"{name}_kernel_1",
                kwargs=(("correction", 3 * 700 - 1),),
            ),
        ),
        unreached={f"{name}_kernel_2": f"the second stage of dim=None: launched with {name}_kernel_1"},
        features=(*_MINMAX_FEATURES, "custom_reduce_combine", "tuple_reduce_rows"),
        defects=(
            *(
                (
                    Defect("composite_autograd_lost", lambda c: c.backward),
                    Defect("var_dim_schema_mismatch", _var_dim_positional),
                )
                if not pair
                else ()
            ),
            Defect("welford_combine_cancels", lambda c: c.values == "offset", ("5.0",), fields=("", "var")),
            Defect(
                "var_partials_in_input_dtype",
                lambda c: c.dtype in ("float16", "bfloat16") and len(c.reduced) == len(c.shape) and c.reduced_size > 1,
            ),
            # an H200 returns torch's inf there: numpy's evaluation order gives inf - inf
            Defect("var_huge_nan", lambda c: c.values == "huge", ("5.0",), emulator_only=True),
            Defect("var_one_value_inf", _one_value, ("5.0",), hardware_only=True, fields=("", "var")),
            # 5.4's merge over a dim keeps NaN; its two-stage reduction over every dim does not
            Defect(
                "var_one_value_inf",
                lambda c: _one_value(c) and len(c.reduced) == len(c.shape),
                ("5.4",),
                hardware_only=True,
                fields=("", "var"),
            ),
            _ACCEPTED,
            _FP64,
            _EMPTY_REDUCED,
        ),
    )


def _one_value(call: Call) -> bool:
    """var over one value with the default correction: 0 / 0 in torch (NaN), the merge's
    residue / 0 in FlagGems (an FMA leaves x*x - x*x a rounding error: +-inf)."""
    return call.reduced_size == 1 and dict(call.kwargs).get("correction", 1) == 1 and call.contract != "aliasing"


_NORM_KERNELS = (("l2", 2), ("max", float("inf")), ("min", float("-inf")), ("l0", 0))


def _vector_norm() -> Op:
    """torch.linalg.vector_norm: one kernel pair per ord (2, inf, -inf, 0; any other ord
    v_norm_kernel with pow, the l1 pair for dim=None) - each a path reached with its ord."""
    paths: list[Path] = []
    for kind, ord in (*_NORM_KERNELS, ("v", 3.0)):
        first = "l1_norm_kernel_1" if kind == "v" else f"{kind}_norm_kernel_1"
        kernel = "v_norm_kernel" if kind == "v" else f"{kind}_norm_kernel"
        paths += _column_tile_paths(kernel, first=first, stage=f"ord {ord}", kwargs=(("ord", ord),))
    return Op(
        name="vector_norm",
        module="flag_gems.ops.vector_norm",
        entry="vector_norm",
        kind="reduce",
        dim_forms=("list",),
        torch_fn=_torch_vector_norm,
        reference_fn=_norm_inner,
        gems_names=("vector_norm",),
        entries=(EntryPoint("vector_norm", "reduce"),),
        keepdim="dim_keyword",
        accepts_none=True,
        family="variance/norms",
        interpreter="rows",
        params=(
            _KEEPDIM_PARAM,
            _ORD,
            _dtype_param((None, "float64"), ("float32",)),
            _dtype_param(("float32",), ("float16",)),
        ),
        exempt={"large_index": _LARGE_NOT_RUN},
        paths=tuple(paths),
        unreached={
            f"{k}_norm_kernel_2": "the second stage of dim=None: launched with the first"
            for k in ("l2", "max", "min", "l0", "l1")
        },
        features=_MINMAX_FEATURES,
        defects=(
            Defect(
                "vector_norm_float_only", lambda c: c.dtype == "float64" or dict(c.kwargs).get("dtype") == "float64"
            ),
            Defect("norm_square_overflows", _square_overflows),
            _EMPTY_REDUCED,
        ),
    )


def _square_overflows(call: Call) -> bool:
    """vector_norm of values around 1e30 with an ord above 1 (2 by default): powers past fp32."""
    ord = dict(call.kwargs).get("ord", 2)
    return call.values == "huge" and math.isfinite(ord) and ord > 1


def _all_any(name: str) -> Op:
    """all / any over a dim list, an int or None (``all_dims`` takes the three); 5.4's any
    over several dims runs a generated kernel with an atomic max per output."""
    kernel = f"{name}_kernel_dim"
    paths = [
        P("every dim (dim=None), two stages", (5, 7), None, f"{name}_kernel_1", loop=True),
        P("one column tile (N <= BLOCK_N)", (3, 5, 64), 1, kernel),
        P("inner, one column tile", (3, 64, 5), -1, kernel),
        P("a loop over 1024-wide column tiles", (3, 1100, 2), 1, kernel, loop=True),
    ]
    if name == "any":
        paths += [
            P("several dims, compressed to the back", (3, 5, 6), [0, 2], kernel, lines=("5.0",)),
            P(
                "several dims: a generated kernel, atomic max per output",
                (3, 5, 6),
                [0, 2],
                "_any_dims_kernel_o1_r2",
                lines=("5.4",),
            ),
            P("one dim as a list: the generated kernel", (3, 5, 64), [1], "_any_dims_kernel_o2_r1", lines=("5.4",)),
        ]
    else:
        paths.append(P("several dims, compressed to the back", (3, 5, 6), [0, 2], kernel))
    return Op(
        name=name,
        module=f"flag_gems.ops.{name}",
        entry=f"{name}_dims",
        kind="reduce",
        dim_forms=("int", "list"),
        torch_fn=_torch_all_any(name),
        gems_names=(name, f"{name}_dim", f"{name}_dims"),
        entries=(EntryPoint(f"{name}_dims", "reduce"),),
        accepts_none=True,
        family="min/max",
        interpreter="rows",
        zeros="sparse" if name == "any" else "dense",
        params=(_KEEPDIM_PARAM,),
        exempt={"large_index": _LARGE_NOT_RUN, "large_inputs": "a truth value: large values change nothing"},
        paths=tuple(paths),
        unreached={f"{name}_kernel_2": f"the second stage of dim=None: launched with {name}_kernel_1"},
        features=_MINMAX_FEATURES,
        # 5.4's all_dim casts with inp.bool(): FlagGems' _to_copy when every op is enabled
        defects=(_EMPTY_REDUCED, Defect("float_to_bool_truncates", _enabled_float_cast, ("5.4",))),
    )


def _enabled_float_cast(call: Call) -> bool:
    """A float input cast to bool by FlagGems' own _to_copy: with every op enabled."""
    return call.contract == "enabled" and call.dtype.startswith(("float", "bfloat"))


def _count_nonzero() -> Op:
    """count_nonzero over one dim (moved to the back, one program a row, 2048 at a time; past
    2048 a combine pass) or every dim."""
    return Op(
        name="count_nonzero",
        module="flag_gems.ops.count_nonzero",
        entry="count_nonzero",
        kind="reduce",
        dim_forms=("int",),
        torch_fn=_torch_count_nonzero,
        gems_names=("count_nonzero",),
        entries=(EntryPoint("count_nonzero", "reduce"),),
        keepdim="none",
        accepts_none=True,
        family="min/max",
        interpreter="rows",
        zeros="half",
        exempt={
            "keepdim": "count_nonzero takes no keepdim",
            "large_index": _LARGE_NOT_RUN,
            "large_inputs": "a count: large values change nothing",
        },
        paths=(
            P("every dim (dim=None)", (5, 7), None, "count_nonzero_kernel_1"),
            P("one dim, one program a row", (3, 5, 64), 1, "count_nonzero_kernel"),
            P("the last dim", (3, 64, 5), 2, "count_nonzero_kernel"),
            P("past 2048: partial counts, then a combine", (2, 2049, 3), 1, "count_nonzero_combin_kernel"),
            P("past 2048: the combine pass", (2, 2049, 3), 1, "count_nonzero_combin_kernel_1"),
        ),
        features=("masked_1d_load", "runtime_loop", "grid_axes", "int64_offset_arith"),
        defects=(
            Defect("count_nonzero_negative_dim", lambda c: isinstance(c.dim, int) and c.dim < 0, ("5.0",)),
            _EMPTY_REDUCED,
        ),
    )


# scans (issue 29): K == 1 a row scan (one program a row up to 16384, else block sums, a
# root scan and a block scan); K > 1 FlagGems scans (A, B, C) with B in blocks of up to 1024
# (next_pow2(B) up to 4096), a second pass adding each block's carry; cummax / cummin with
# M * K > 16 one program per (m, k) looping over B.
_SCAN_FEATURES = (
    "masked_1d_load",
    "masked_load_other",
    "runtime_loop",
    "grid_axes",
    "int64_offset_arith",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
)


def _torch_scan(method: str) -> Callable[..., Any]:
    def call(x: Any, d: Any, k: bool = False, **kwargs: Any) -> Any:
        return getattr(x, method)(d, **kwargs)

    call.__name__ = f"torch_{method}"
    return call


def _half_blocks(call: Call) -> bool:
    """cumsum of a half input over a non-inner dim of more than 4096: each 1024-wide block's
    scan is stored in the half output, then loaded back and its carry added."""
    m, n, k = _mnk(call)
    return call.dtype in ("float16", "bfloat16") and k > 1 and n > 4096


def _int32_scan_wraps(call: Call) -> bool:
    """cumsum over a non-inner dim (its (A, B, C) blocks: scan_part_sum_abc_kernel) casts an
    integer input to int32 before it scans, and stores into torch's int64 result: past 2**31
    a prefix wraps (found by an outside review's defect of the inner row scan, which sums in
    int64; flag_gems 5.0.2 and 5.4.0.dev0)."""
    m, n, k = _mnk(call)
    return call.values == "int32_wide" and k > 1


def _cumsum_like(name: str, lines: tuple[str, ...] = ()) -> Op:
    """cumsum (both lines, out= too) and cumprod (5.4): a row scan for K == 1, (A, B, C)
    blocks with a carry pass for K > 1."""
    part = "sum" if name == "cumsum" else "product"
    paths = (
        P("K == 1: one program a row (N <= 16384)", (3, 5), 1, "reduce_then_scan_root_scan_kernel_row", lines=lines),
        P(
            "K == 1 past 16384: block sums",
            (1, 16385),
            1,
            f"reduce_then_scan_block_{'sum' if part == 'sum' else 'product'}_kernel_row",
            lines=lines,
        ),
        P("K == 1 past 16384: block scans", (1, 16385), 1, "reduce_then_scan_block_scan_kernel_row", lines=lines),
        # a program scans several 4096-wide tiles, carrying its prefix, only past
        # 4096 x 4 x SMs (the CPU lane's 4 SMs: 65536; an H200's: 2162688)
        P(
            "K == 1 past 4096 x 4 x SMs: several tiles a program",
            (1, 70001),
            1,
            "reduce_then_scan_block_scan_kernel_row",
            lines=lines,
        ),
        P("K > 1: one block of B", (3, 5, 4), 1, f"scan_part_{part}_abc_kernel", lines=lines),
        P(
            "K > 1: blocks of 1024 and their carry",
            (1, 4097, 2),
            1,
            f"add_base_{part}_abc_kernel" if part == "sum" else "multiply_base_product_abc_kernel",
            lines=lines,
        ),
    )
    flat = "scan_then_fan_col (one flattened scan): no entry point of this line calls it"
    unreached = (
        {
            "scan_part_sum_kernel": flat,
            "add_base_sum_kernel": flat,
            "normed_cumsum_kernel": "normed_cumsum's (multinomial's normalised cumsum): another op",
            "block_cumsum_kernel": "normed_cumsum's: another op",
            "block_update_kernel": "normed_cumsum's: another op",
        }
        if name == "cumsum"
        else {"scan_part_product_kernel": flat, "multiply_base_product_kernel": flat}
    )
    return Op(
        name=name,
        module=f"flag_gems.ops.{name}",
        entry=name,
        kind="scan",
        dim_forms=("int",),
        torch_fn=_torch_scan(name),
        gems_names=(name,) if name == "cumprod" else (name, f"{name}_out"),
        entries=(EntryPoint(name, "scan"),)
        + ((EntryPoint("cumsum_out", "scan", out="out"),) if name == "cumsum" else ()),
        out_entry="cumsum_out" if name == "cumsum" else None,
        keepdim="none",
        dtype_arg=True,
        family="scans",
        interpreter="rows",
        absorbing=0.0 if name == "cumprod" else None,
        exempt={
            "keepdim": _NO_KEEPDIM,
            "large_index": _LARGE_NOT_RUN,
            **({"large_inputs": "a product of large inputs overflows by definition"} if name == "cumprod" else {}),
        },
        params=(_dtype_param((None, "float64"), ("float32",)), _dtype_param(("float32",), ("float16",))),
        paths=paths,
        unreached=unreached,
        features=_SCAN_FEATURES,
        defects=(
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(1, 1)),
            *(
                (
                    _EMPTY,
                    _FP64_ASKED,
                    Defect("cumsum_half_rounded_twice", _half_blocks),
                    Defect("cumsum_int32_accumulator", _int32_scan_wraps),
                )
                if name == "cumsum"
                else ()
            ),
            *(
                (
                    Defect("out_not_resized", lambda c: c.layout == "out_wrong_size", corrupts=True),
                    Defect("out_non_contiguous_ignored", lambda c: c.layout == "out_non_contiguous"),
                )
                if name == "cumsum"
                else ()
            ),
        ),
    )


def _cum_extreme(name: str) -> Op:
    """cummax / cummin: (values, indices), the row checks the values, ``cummax.indices``
    torch's indices exactly (the last index of a tie, as torch's kernels take it)."""
    part = "max" if name == "cummax" else "min"
    paths = (
        P("one slice (M == K == 1)", (5,), 0, f"scan_part_{part}_kernel"),
        P("one slice past 4096: blocks and their carry", (4097,), 0, f"add_base_{part}_kernel", loop=True),
        P("M * K <= 16: (A, B, C) blocks", (2, 5, 3), 1, f"scan_part_{part}_abc_kernel"),
        P("M * K <= 16 past 4096: the carry pass", (1, 4097, 2), 1, f"add_base_{part}_abc_kernel", loop=True),
        P("M * K > 16: one program per (m, k), a loop over B", (3, 5, 8), 1, f"scan_part_{part}_abc_loop_kernel"),
        P(
            "M * K > 16 past 4096: 1024-wide blocks, each carried into the next",
            (2, 4097, 9),
            1,
            f"scan_part_{part}_abc_loop_kernel",
            loop=True,
        ),
        P("the last dim, many rows", (3, 8, 5), -1, f"scan_part_{part}_abc_loop_kernel"),
    )

    def torch_tuple(x: Any, d: Any, k: bool = False, **kwargs: Any) -> Any:
        return getattr(x, name)(d)

    return Op(
        name=name,
        module=f"flag_gems.ops.{name}",
        entry=name,
        kind="scan",
        dim_forms=("int",),
        torch_fn=_first_field(torch_tuple, "values"),
        gems_names=(name,),
        entries=(EntryPoint(name, "scan"),),
        keepdim="none",
        family="scans",
        interpreter="rows",
        fields=("values", "indices"),
        result="values",
        picks=part,
        torch_tuple=torch_tuple,
        exempt={"keepdim": _NO_KEEPDIM, "large_index": _LARGE_NOT_RUN},
        paths=paths,
        features=(*_SCAN_FEATURES, "scan_tuple_combine"),
        defects=(
            Defect("cum_extreme_bool_as_int64", _dtype_in("bool")),
            _EMPTY,
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(1, 1)),
            # its gradient is zeros.scatter_add_(dim, indices, grad): FlagGems' when every op is on
            Defect("scatter_add_same_shape_copy", lambda c: c.backward and _scans_non_last(c)),
        ),
    )


def _scans_non_last(call: Call) -> bool:
    return bool(call.shape) and call.reduced[0] != len(call.shape) - 1


def _logcumsumexp() -> Op:
    """logcumsumexp (5.4): one program a row for K == 1, one per (m, k) for K > 1, next_pow2(N) wide."""
    lines = ("5.4",)
    return Op(
        name="logcumsumexp",
        module="flag_gems.ops.logcumsumexp",
        entry="logcumsumexp",
        kind="scan",
        dim_forms=("int",),
        torch_fn=_torch_scan("logcumsumexp"),
        gems_names=("logcumsumexp", "logcumsumexp_out"),
        entries=(EntryPoint("logcumsumexp", "scan"), EntryPoint("logcumsumexp_out", "scan", out="out")),
        keepdim="none",
        family="scans",
        interpreter="rows",
        running_max=True,
        exempt={"keepdim": _NO_KEEPDIM, "large_index": _LARGE_NOT_RUN},
        paths=(
            P("K == 1: one program a row", (3, 5), 1, "logcumsumexp_kernel", lines=lines),
            P("K > 1: one program per (m, k)", (3, 5, 4), 1, "logcumsumexp_kernel_3d", lines=lines),
        ),
        features=_SCAN_FEATURES,
        defects=(
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(1, 1)),
            Defect(
                "logcumsumexp_shifts_by_row_max",
                lambda c: c.values in ("offset", "pos_inf", "inf_minus_inf", "all_neg_inf"),
            ),
            _ACCEPTED,
            _FP64,
            _EMPTY,
        ),
    )


OPS: tuple[Op, ...] = (
    Op(
        name="sum",
        module="flag_gems.ops.sum",
        entry="sum_dim",
        kind="reduce",
        dim_forms=("list",),
        torch_fn=_torch("sum"),
        gems_names=("sum_dim", "sum_dim_out"),
        entries=(EntryPoint("sum_dim", "reduce"), EntryPoint("sum_dim_out", "reduce", out="out")),
        out_entry="sum_dim_out",
        dtype_arg=True,
        accepts_none=True,
        fastpath="sum",
        real_case=True,
        seed_table=True,
        params=_REDUCE_PARAMS,
        paths=_SUM_PATHS,
        features=(*_KERNEL, *_TILED, "tile_2d_reduce", "python_and_or_masks", "masked_2d_store"),
        defects=(
            _NOT_PROMOTED,
            Defect("out_non_contiguous_ignored", lambda c: c.layout == "out_non_contiguous"),
            # dim=None through the entry point is torch.sum itself (sum_dim_comm): its float64 is
            # torch's; through dispatch it is FlagGems' sum (aten sum), whose first stage
            # accumulates in the input's dtype
            _INT32,
            Defect("fp64_computed_in_fp32", lambda c: _asks_float64(c) and (c.dim is not None or c.dispatched)),
        ),
    ),
    Op(
        name="mean",
        module="flag_gems.ops.mean",
        entry="mean_dim",
        kind="reduce",
        dim_forms=("list", "int"),
        torch_fn=_torch("mean"),
        gems_names=("mean_dim",),
        entries=(EntryPoint("mean_dim", "reduce"),),
        dtype_arg=True,
        accepts_none=True,
        fastpath="mean",
        params=_REDUCE_PARAMS,
        paths=_MEAN_PATHS,
        features=(*_KERNEL, *_TILED, "tile_2d_reduce", "python_and_or_masks", "masked_2d_store"),
        defects=(
            Defect("mean_dim_none_raises", lambda c: c.dim is None),
            _ACCEPTED,
            _EMPTY,
            _INT32,
            _FP64_ASKED,
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(512, 1024)),
        ),
    ),
    Op(
        name="softmax",
        module="flag_gems.ops.softmax",
        entry="softmax",
        kind="along",
        dim_forms=("int",),
        torch_fn=_torch("softmax", takes_keepdim=False),
        gems_names=("softmax",),
        entries=(
            EntryPoint("softmax", "along"),
            EntryPoint("softmax_out", "along", out="out"),
            EntryPoint("softmax_backward", "along", tensors=("grad_output", "output")),
            EntryPoint("softmax_backward_out", "along", out="grad_input", tensors=("grad_output", "output")),
        ),
        keepdim="none",
        fastpath="softmax",
        seed_table=True,
        exempt={"keepdim": _NO_KEEPDIM},
        params=(_H2F,),
        paths=_SOFTMAX_PATHS,
        running_max=True,
        features=(*_KERNEL, *_TILED, "tile_2d_reduce", "masked_2d_store"),
        defects=(
            Defect("softmax_permuted_output", lambda c: c.layout in DENSE_PERMUTED, ("5.4",)),
            _INT32,
            _BACKWARD_STRIDES,
        ),
    ),
    Op(
        name="log_softmax",
        module="flag_gems.ops.log_softmax",
        entry="log_softmax",
        kind="along",
        dim_forms=("int",),
        torch_fn=_torch("log_softmax", takes_keepdim=False),
        gems_names=("log_softmax",),
        entries=(
            EntryPoint("log_softmax", "along"),
            EntryPoint("log_softmax_out", "along", out="out"),
            EntryPoint("log_softmax_backward", "along", tensors=("grad_output", "output")),
            EntryPoint("log_softmax_backward_out", "along", out="out", tensors=("grad_output", "output")),
        ),
        keepdim="none",
        seed_table=True,
        exempt={"keepdim": _NO_KEEPDIM, "large_index": _LARGE_NOT_RUN},
        params=(_H2F,),
        paths=_LOG_SOFTMAX_PATHS,
        running_max=True,
        features=(*_KERNEL, *_TILED, "python_and_or_masks", "masked_2d_store"),
        defects=(
            _ACCEPTED,
            _EMPTY,
            _FP64,
            _BACKWARD_STRIDES,
            Defect(_NAN_DROPPED, _nan_dropped("nan"), ("5.0",)),
            # 5.4's non-inner kernel keeps the NaN; its inner one (where a workaround that
            # moves the axis to the back sends every call) still drops it
            Defect(_NAN_DROPPED, lambda c: _nan_dropped("nan")(c) and (c.routed or not c.non_inner)),
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(1, 1), ("5.0",)),
        ),
    ),
    Op(
        name="argmax",
        module="flag_gems.ops.argmax",
        entry="argmax",
        kind="index",
        dim_forms=("int",),
        torch_fn=_torch("argmax"),
        gems_names=("argmax",),
        entries=(EntryPoint("argmax", "index"),),
        accepts_none=True,
        extreme="max",
        exempt={"large_inputs": _INDEX},
        params=(_KEEPDIM_PARAM,),
        paths=_ARGMAX_PATHS,
        features=(*_KERNEL, *_TILED, "tile_2d_reduce", "python_and_or_masks", "argmax_tie_break"),
        defects=(
            Defect("argmax_tile_not_pow2", _argmax_tile_not_pow2),
            Defect(_NAN_DROPPED, _nan_dropped("nan")),
            Defect("int_input_accepted", _dtype_in("bool")),
            _EMPTY_REDUCED,
            _INT32,
            Defect("grid_y_over_limit", _column_tiles_past_grid_y(512, 512)),
        ),
    ),
    Op(
        name="argmin",
        module="flag_gems.ops.argmin",
        entry="argmin",
        kind="index",
        dim_forms=("int",),
        torch_fn=_torch("argmin"),
        gems_names=("argmin",),
        accepts_none=True,
        extreme="min",
        exempt={"large_inputs": _INDEX, "large_index": _LARGE_NOT_RUN},
        params=(_KEEPDIM_PARAM,),
        paths=_ARGMIN_PATHS,
        features=("grid_axes",),
        defects=(
            Defect("argmin_inner_out_of_bounds", _argmin_rows_past_end),
            Defect("argmin_inner_out_of_bounds", _argmin_stores_past_end, emulator_only=True),
            Defect("argmin_ignores_nan", lambda c: c.values == "nan" and c.reduced_size > 1),
            Defect("int_input_accepted", _dtype_in("bool")),
            Defect("empty_input_diverges", lambda c: _empty(c) and not _empty_reduced(c)),
            Defect("grid_y_over_limit", _argmin_grid_y),
        ),
    ),
    Op(
        name="prod",
        module="flag_gems.ops.prod",
        entry="prod_dim",
        kind="reduce",
        dim_forms=("int",),
        torch_fn=_torch("prod"),
        gems_names=("prod_dim",),
        entries=(EntryPoint("prod_dim", "reduce"),),
        dtype_arg=True,
        interpreter="toy",
        seed_table=True,
        exempt={"large_inputs": "a product of large inputs overflows by definition", "large_index": _LARGE_NOT_RUN},
        params=(_KEEPDIM_PARAM, _dtype_param((None, "float64"), ("float32",))),
        paths=_PROD_PATHS,
        unreached={
            "prod_kernel_mid": _WHOLE_PROD,
            "prod_kernel_result": _WHOLE_PROD,
            "prod_kernel": "5.4.0.dev0 defines it and calls it nowhere (its prod_dim takes the inner and "
            "non-inner kernels); 5.0.2's paths reach it",
        },
        absorbing=0.0,
        features=(*_KERNEL, "masked_2d_row_load", "grid_axes", "int64_offset_arith", "custom_reduce_combine"),
        defects=(
            Defect("int_sum_not_promoted", _dtype_in(*_INTS, "bool")),
            _FP64,
            _FP64_ASKED,
            Defect("prod_int64_in_float", lambda c: c.dtype == "int64" and c.values == "int64_wide"),
            Defect("empty_input_diverges", _empty_reduced, ("5.0",)),
        ),
    ),
    Op(
        name="std",
        module="flag_gems.ops.std",
        entry="std",
        kind="reduce",
        dim_forms=("list", "int"),
        torch_fn=_torch("std"),
        gems_names=("std",),
        entries=(EntryPoint("std", "reduce"),),
        keepdim="keyword",
        accepts_none=True,
        seed_table=True,
        interpreter="rows",
        reference_fn=_std_two_pass,
        exempt={"large_index": _LARGE_NOT_RUN},
        params=(_KEEPDIM_PARAM, Param("correction", (0, 1, 2, 0.5, 5), lambda v: {"correction": v})),
        paths=_STD_PATHS,
        features=(*_KERNEL, "masked_2d_row_load", "int64_offset_arith", "masked_2d_store"),
        defects=(
            Defect("std_overflows", lambda c: c.values == "huge"),
            _ACCEPTED,
            _EMPTY_REDUCED,
            _FP64,
            Defect("std_correction_past_n", _correction_past_n),
            Defect(_NAN_DROPPED, _nan_dropped("nan", "pos_inf", "inf_minus_inf", "all_neg_inf")),
            Defect("launch_on_current_device", lambda c: c.placement == "other" and c.dim is not None, ("5.0",)),
        ),
    ),
    Op(
        name="logsumexp",
        module="flag_gems.ops.logsumexp",
        entry="logsumexp",
        kind="reduce",
        dim_forms=("list", "int"),
        torch_fn=_torch("logsumexp"),
        gems_names=("logsumexp",),
        entries=(EntryPoint("logsumexp", "reduce"),),
        seed_table=True,
        composed_of="sum",
        exempt={"large_index": _LARGE_NOT_RUN},
        params=(_KEEPDIM_PARAM,),
        paths=_LOGSUMEXP_PATHS,
        running_max=True,
        features=("masked_2d_row_load", "int64_offset_arith"),
        defects=(
            Defect("logsumexp_inf_nan", lambda c: c.values in ("pos_inf", "inf_minus_inf")),
            Defect("int_input_accepted", _dtype_in(*INTEGERS)),
            _EMPTY,
            _FP64,
        ),
    ),
    Op(
        name="special_logsumexp",
        module="flag_gems.ops.special_logsumexp",
        entry="special_logsumexp",
        kind="reduce",
        dim_forms=("list", "int"),
        torch_fn=_torch("logsumexp"),
        gems_names=("special_logsumexp",),
        entries=(EntryPoint("special_logsumexp", "reduce"),),
        exempt={"large_index": _LARGE_NOT_RUN},
        params=(_KEEPDIM_PARAM,),
        paths=_SPECIAL_LOGSUMEXP_PATHS,
        running_max=True,
        features=(*_KERNEL, *_TILED),
        defects=(
            Defect("logsumexp_inf_nan", lambda c: c.values in ("pos_inf", "inf_minus_inf")),
            _ACCEPTED,
            _EMPTY_REDUCED,
            _FP64,
        ),
    ),
    Op(
        name="special_log_softmax",
        module="flag_gems.ops.special_log_softmax",
        entry="special_log_softmax",
        kind="along",
        dim_forms=("int",),
        torch_fn=_torch("log_softmax", takes_keepdim=False),
        gems_names=("special_log_softmax",),
        entries=(EntryPoint("special_log_softmax", "along"),),
        keepdim="none",
        exempt={"keepdim": _NO_KEEPDIM, "large_index": _LARGE_NOT_RUN},
        interpreter="rows",
        paths=_SPECIAL_LOG_SOFTMAX_PATHS,
        running_max=True,
        features=(*_KERNEL, *_TILED),
        defects=(Defect("small_n_ignores_k", _small_n_ignores_k, corrupts=True), _ACCEPTED, _EMPTY, _FP64),
    ),
    _minmax("amax", "amax", "max"),
    _minmax(
        "amin",
        "amin",
        "min",
        lines=("5.4",),
        defects=(Defect("amin_float_only", lambda c: c.dtype not in ("float32", "float16", "bfloat16"), ("5.4",)),),
    ),
    _minmax("max_dim", "max", "max"),
    _minmax("min_dim", "min", "min"),
    _aminmax(),
    _all_any("all"),
    _all_any("any"),
    _count_nonzero(),
    _variance("var"),
    _variance("var_mean"),
    _vector_norm(),
    _cumsum_like("cumsum"),
    _cumsum_like("cumprod", lines=("5.4",)),
    _cum_extreme("cummax"),
    _cum_extreme("cummin"),
    _logcumsumexp(),
)
