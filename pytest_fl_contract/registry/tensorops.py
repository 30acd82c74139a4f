"""Matmul tails and index ops (issue 29), as data: one row per op.

A row says where the op lives in FlagGems (its module, entry points and the names
``use_gems(include=...)`` takes), how a contract builds a call (operands from a case: the
matmul's M, K, N and batch; an index op's input shape, dim and index extent, with the index
tensor contiguous, strided or expanded), torch's call (the float64 reference), the kernel
paths, and FlagGems' own defects with the calls that run into them.  Nothing here imports
torch at import time.

The masked-row defect reaches a matmul through ``tl.dot``: the K tail of the second operand
is loaded under a row condition (``k[:, None] < K``), a defective compiler drops it, and the
rows past K meet the first operand's zeros - so only NaN or inf past the operand shows, and
the determinism contract's poisoned memory is what catches it.  The index ops' kernels mask a
flattened 1-D offset: the defect does not reach them (their contracts hold FlagGems' own
defects: layouts of the index and of the source, duplicates, stride-0 indices).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from .schema import GRID_LIMITS, SELF_COMPARING, Defect, Param, Row

MATMUL, INDEX = "matmul", "index"
MATMUL_LAYOUTS = ("contiguous", "transposed", "sliced")  # column-major operands; A a column slice of a wider tensor
# every operand transposed; only the source (gather: the index) transposed; the index strided or stride-0
INDEX_LAYOUTS = ("contiguous", "transposed", "transposed_src", "strided_index", "expanded_index")


@dataclass(frozen=True)
class TensorCase:
    """matmul: ``shape`` is (M, K, N) or (batch, M, K, N); an index op: the input's shape,
    ``dim`` the indexed dim and ``index`` the index's extent along it; ``narrow``: an index
    (gather, scatter) one shorter than the input in every other dim (torch takes any index no
    larger); ``src_extra``: a source that many larger than the index in every dim (torch reads
    the index's extent of it)."""

    shape: tuple[int, ...]
    dim: int = 0
    index: int = 0
    narrow: bool = False
    src_extra: int = 0

    @property
    def id(self) -> str:
        extra = f"-d{self.dim}-i{self.index}" if self.index else ""
        extra += "-narrow" if self.narrow else ""
        extra += f"-src+{self.src_extra}" if self.src_extra else ""
        return "x".join(map(str, self.shape)) + extra

    @property
    def index_shape(self) -> tuple[int, ...]:
        """An "along" index's shape: the case's extent along dim, the input's (or one less) elsewhere."""
        outer = tuple(max(s - 1, 1) if self.narrow else s for s in self.shape)
        return (*outer[: self.dim], self.index, *outer[self.dim + 1 :])

    @property
    def same_shape(self) -> bool:
        """index, source and input of one shape (scatter_add_'s fast path takes it)."""
        return bool(self.shape) and self.index_shape == tuple(self.shape) and not self.src_extra

    @property
    def k(self) -> int:
        """A matmul's K (the extent ``tl.dot`` folds)."""
        return self.shape[-2]


@dataclass(frozen=True)
class TensorCall:
    """What a contract case asks of an op, as far as a known defect can depend on it."""

    case: TensorCase
    dtype: str = "float32"
    layout: str = "contiguous"
    values: str = "normal"
    routed: bool = False
    contract: str = ""
    arguments: tuple[tuple[str, Any], ...] = ()  # a swept argument and its value (beta, reduce, ...)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.case.shape

    def argument(self, name: str, default: Any = None) -> Any:
        return dict(self.arguments).get(name, default)


@dataclass(frozen=True)
class TensorPath:
    """A kernel a call launches, with the smallest case that reaches it."""

    name: str
    case: TensorCase
    kernel: str
    layout: str = "contiguous"
    lines: tuple[str, ...] = ()

    def in_version(self, version: str | None) -> bool:
        return not self.lines or any((version or "").startswith(v) for v in self.lines)


def _no_call(torch: Any, ops: dict[str, Any], out: Any = None) -> Any:
    raise TypeError("a tensor-op row needs torch_call: torch's own call of the op")


@dataclass(frozen=True)
class TensorOp(Row):
    """A matmul or index op's row: the schema's fields, its cases, and its behaviour as data
    and callables of its own (torch's call, which operands it takes, how its index is shaped),
    so no consumer asks which op it is."""

    suite: ClassVar[str] = "tensorops"  # the contract suite and family behaviour (families.tensorops)
    case_type: ClassVar[type] = TensorCase

    family: str = ""  # MATMUL | INDEX
    entry: str = ""
    cases: dict[str, tuple[TensorCase, ...]] = field(default_factory=dict)  # sweep -> cases
    # (torch, operands, out, **arguments) -> torch's result; its arguments default as the contracts' other cases send them
    torch_call: Callable[..., Any] = _no_call
    paths: tuple[TensorPath, ...] = ()
    out: bool = False  # torch's call takes out=
    accumulates: bool = False  # sums values into the result (atomics: order-dependent unless the values are integers)
    kernels: tuple[str, ...] = ()  # kernels whose K tail a dropped row condition reads (registry.coverage finds them)
    bias: bool = False  # a matmul that adds a bias (addmm)
    # an index op's index: "vector" a 1-D index of the case's extent (index_select, index_add),
    # "along" the input's shape with the dim's extent the case's (gather, scatter)
    index: str = ""
    source: bool = False  # takes a source it writes into a copy of the input (scatter, index_add)
    unique: bool = False  # no two equal indices along dim (scatter's winner among duplicates is unspecified)
    grid: tuple[TensorCase, ...] = ()  # extents its launch puts on grid axis y or z past 65535
    large: tuple[TensorCase, ...] = ()  # past 2**31 elements in one operand (hardware lanes)
    # its arguments beyond the case, each a sweep axis (contracts/tensorops/test_params.py): the
    # defaults as dispatch sends them (integer scalars: F.linear's beta and alpha are the int 1)
    # and their edge values (addmm's beta 0 drops the bias, NaN and inf included)
    params: tuple[Param, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if (
            self.family not in (MATMUL, INDEX)
            or not self.entry
            or not self.cases
            or self.torch_call is _no_call
            or (self.family == INDEX) != (self.index in ("vector", "along"))
        ):
            raise ValueError(
                f"tensor op {self.name!r}: a row needs a family ({MATMUL} or {INDEX}), an entry point, "
                "cases, torch's call and, for an index op, its index form (vector or along)"
            )

    def entry_names(self) -> tuple[str, ...]:
        return (self.entry,)

    def row_masked(self, version: str | None) -> tuple[str, ...]:
        return self.kernels

    @property
    def layouts(self) -> tuple[str, ...]:
        return MATMUL_LAYOUTS if self.family == MATMUL else INDEX_LAYOUTS

    def operands(self, case: TensorCase, seed: int = 0, values: str = "normal", device: str = "cpu") -> dict[str, Any]:
        """Seeded float32 operands (integer-valued where ``values`` is "integers": sums in any
        order are exact), with a special value planted where ``values`` names one; drawn on
        ``device`` (a large case's 8 GiB is drawn where it is used)."""
        return _BUILD[self.family](self, case, seed, values, device)

    def gib(self, case: TensorCase) -> float:
        """Device memory one float32 call of ``case`` holds with torch's result beside ours:
        its operands (int64 indices) and two results."""
        if self.family == MATMUL:
            *batch, m, k, n = case.shape
            b = math.prod(batch)
            return 4 * (b * m * k + b * k * n + n + 2 * b * m * n) / 2**30
        x = math.prod(case.shape)
        sliced = x // max(case.shape[case.dim], 1) * case.index  # the index's (and a source's) elements
        index = case.index if self.index == "vector" else sliced
        result = x if self.source else sliced
        source = sliced if self.source else 0
        return (4 * (x + source + 2 * result) + 8 * index) / 2**30

    def call(self, torch: Any, ops: dict[str, Any], out: Any = None, **arguments: Any) -> Any:
        """torch's call of the op on ``ops`` (torch dispatch sends it to FlagGems under use_gems),
        with ``arguments`` (a swept parameter) over the row's defaults."""
        return self.torch_call(torch, ops, out, **arguments)

    def terms(self, case: TensorCase) -> int:
        """The values one output element sums: K for a matmul, the index's duplicates for an
        accumulating index op (at most its extent), one otherwise."""
        if self.family == MATMUL:
            return max(case.k, 1)
        return max(case.index, 1) if self.accumulates else 1


SPECIAL = {"nan": float("nan"), "pos_inf": float("inf"), "neg_inf": float("-inf"), "huge": 1e30}


def _values(torch: Any, shape: tuple[int, ...], g: Any, values: str) -> Any:
    if values == "integers":
        return torch.randint(-8, 9, shape, generator=g, device=g.device).float()
    return torch.randn(shape, generator=g, device=g.device)


def _plant(t: Any, values: str) -> None:
    if values in SPECIAL and t.numel():
        t.view(-1)[t.numel() // 2] = SPECIAL[values]


CANCELLING = 300.0  # values="cancelling": a's first half of K, its negation the second half's


def _cancelling(a: Any, b: Any, g: Any) -> None:
    """Partial sums far larger than the result: a's first half of K is +300, its second half
    -300, and b's second half of K its first half plus a little noise, so the products of the
    halves cancel to a result about a hundredth of a partial sum.  An accumulator rounded to a
    half type between K tiles (or a dot that accumulates in one) loses the result there; a
    one-pass fp32 accumulation keeps it to a few fp32 ulps of the partial sums."""
    import torch

    h = a.shape[-1] // 2
    if not h:
        return
    a[..., :h], a[..., h : 2 * h] = CANCELLING, -CANCELLING
    noise = torch.randn(b[..., :h, :].shape, generator=g, device=g.device).mul_(0.01)
    b[..., h : 2 * h, :] = b[..., :h, :] + noise


def _matmul_operands(op: TensorOp, case: TensorCase, seed: int, values: str, device: str) -> dict[str, Any]:
    import torch

    g = torch.Generator(device=device).manual_seed(seed + sum(case.shape) * 31)
    *batch, m, k, n = case.shape
    a = _values(torch, (*batch, m, k), g, values)
    b = _values(torch, (*batch, k, n), g, values)
    _plant(a, values)
    if values == "cancelling":
        _cancelling(a, b, g)
    found = {"a": a, "b": b}
    if op.bias:
        found["bias"] = _values(torch, (n,), g, values)
    return found


def _index_tensor(torch: Any, g: Any, size: int, shape: tuple[int, ...], unique: bool) -> Any:
    """Indices below ``size`` of ``shape``; ``unique``: no two equal along dim 0 of each
    column (scatter's winner among duplicates is unspecified).  The last index is the dim's
    last element where that repeats none: the farthest offset a call reaches."""
    device = g.device
    if not size:
        return torch.zeros(shape, dtype=torch.long, device=device)
    if unique and shape[0] > 1:
        flat = shape[0], math.prod(shape[1:])
        cols = [torch.randperm(size, generator=g, device=device)[: flat[0]] for _ in range(flat[1])]
        return (torch.stack(cols, 1) if cols else torch.zeros(flat, dtype=torch.long, device=device)).reshape(shape)
    index = torch.randint(0, size, shape, generator=g, device=device)  # repeats allowed, or one a column
    if index.numel():
        index.view(-1)[-1] = size - 1
    return index


def _index_operands(op: TensorOp, case: TensorCase, seed: int, values: str, device: str) -> dict[str, Any]:
    import torch

    g = torch.Generator(device=device).manual_seed(seed + sum(case.shape) * 31 + case.dim)
    shape, dim = case.shape, case.dim
    x = _values(torch, shape, g, values)
    _plant(x, values)
    if op.index == "vector":
        index = _index_tensor(torch, g, shape[dim], (case.index,), unique=False)
        found = {"x": x, "index": index, "dim": dim}
        if op.source:
            found["src"] = _values(torch, (*shape[:dim], case.index, *shape[dim + 1 :]), g, values)
        return found
    ishape = case.index_shape
    moved = (ishape[dim], *ishape[:dim], *ishape[dim + 1 :])  # unique along dim: draw with dim first, move it back
    index = _index_tensor(torch, g, shape[dim], moved, unique=op.unique).movedim(0, dim).contiguous()
    found = {"x": x, "index": index, "dim": dim}
    if op.source:
        found["src"] = _values(torch, tuple(s + case.src_extra for s in ishape), g, values)
    return found


_BUILD: dict[str, Callable[[TensorOp, TensorCase, int, str, str], dict[str, Any]]] = {
    MATMUL: _matmul_operands,
    INDEX: _index_operands,
}

_ALPHA, _BETA = 1.5, 0.5  # addmm's and index_add's scalars: a kernel that drops one is off


def _out(kwargs: dict[str, Any], out: Any) -> dict[str, Any]:
    return {**kwargs, "out": out} if out is not None else kwargs


def _mm(torch: Any, o: dict[str, Any], out: Any = None) -> Any:
    return torch.mm(o["a"], o["b"], **_out({}, out))


def _addmm(torch: Any, o: dict[str, Any], out: Any = None, beta: Any = _BETA, alpha: Any = _ALPHA) -> Any:
    return torch.addmm(o["bias"], o["a"], o["b"], beta=beta, alpha=alpha, **_out({}, out))


def _bmm(torch: Any, o: dict[str, Any], out: Any = None) -> Any:
    return torch.bmm(o["a"], o["b"], **_out({}, out))


def _gather(torch: Any, o: dict[str, Any], out: Any = None) -> Any:
    return torch.gather(o["x"], o["dim"], o["index"], **_out({}, out))


def _scatter(torch: Any, o: dict[str, Any], out: Any = None, reduce: str | None = None) -> Any:
    if reduce is None:
        return o["x"].scatter(o["dim"], o["index"], o["src"])
    return o["x"].scatter(o["dim"], o["index"], o["src"], reduce=reduce)


def _scatter_add_(torch: Any, o: dict[str, Any], out: Any = None) -> Any:
    """In place: the caller's tensor is the result, whatever the call returns."""
    target = o["x"].clone()
    target.scatter_add_(o["dim"], o["index"], o["src"])
    return target


def _index_select(torch: Any, o: dict[str, Any], out: Any = None) -> Any:
    return torch.index_select(o["x"], o["dim"], o["index"], **_out({}, out))


def _index_add(torch: Any, o: dict[str, Any], out: Any = None, alpha: Any = _ALPHA) -> Any:
    return o["x"].index_add(o["dim"], o["index"], o["src"], alpha=alpha)


# -- FlagGems' own defects of the families (catalogue: config/platforms.yaml) -------------


def _empty_k(call: TensorCall) -> bool:
    """mm peels its K tail at prev_multiple_of(K, BLOCK_K) = cdiv(K, BLOCK_K) * BLOCK_K - BLOCK_K:
    for K = 0 that is -BLOCK_K, and rk < K holds on every lane of -BLOCK_K..-1."""
    return len(call.shape) == 3 and call.case.k == 0 and call.shape[0] > 0 and call.shape[2] > 0


def _index_strided(call: TensorCall) -> bool:
    """The kernel loads ``index + offset``: the index tensor's own stride is never read."""
    return call.layout in ("strided_index", "expanded_index")


def _src_not_like_input(call: TensorCall) -> bool:
    """index_add's kernel walks the source's memory offsets and turns each into the
    destination's offset as if the source were laid out like the input: a source transposed
    against its input lands its values on the wrong elements (both transposed alike: right)."""
    return call.layout == "transposed_src"


def _general_kernel_launch(call: TensorCall) -> bool:
    """A call that launches mm's general kernel (not the symmetric one; an empty M or N is
    answered before any launch): whether it runs into mm_fp32_small_k_shared_memory is the
    config its tuner picks on the device (an H200 failed fp32 with K of at most 32, an H100
    also (13, 256, 17)), so the defect's trigger decides when the call runs (the launch's
    OutOfResources), not a shape seen on one card."""
    if len(call.shape) != 3 or call.layout == "syrk":
        return False
    m, k, n = call.shape
    return m > 0 and n > 0


def _device_major() -> int | None:
    """The current device's compute capability major, as FlagGems asks for it (the emulator
    answers with its profile's), or None without one."""
    import torch

    try:
        return int(torch.cuda.get_device_capability()[0])
    except Exception:  # no CUDA device, or a vendor build without the query
        return None


def _stream_k_half(call: TensorCall) -> bool:
    """mm's stream-K scenario (flag_gems.ops.mm.streamk_scenario: a device reporting
    capability 8 - an A100, the Iluvatar parts - float16 or bfloat16 operands, both
    contiguous, K past 5 M and past 5 N) in float16: its partial tiles meet in C itself."""
    *_, m, k, n = call.shape
    return call.dtype == "float16" and call.layout == "contiguous" and k > 5 * m and k > 5 * n and _device_major() == 8


def _bmm_empty(call: TensorCall) -> bool:
    """bmm's tuner keys M, N and K by their log2 (libtuner's "log" strategy): an empty M, N or
    K raises "math domain error" before the launch (5.0.2 and 5.4.0.dev0 on an H200).
    The interpreter lanes run plain triton.autotune, which keys on the values: no error."""
    return len(call.shape) == 4 and call.shape[0] > 0 and 0 in call.shape[1:]


def _addmm_n_on_grid_y(call: TensorCall) -> bool:
    """addmm launches (cdiv(M, BLOCK_SIZE_M), cdiv(N, BLOCK_SIZE_N)), its tuned BLOCK_SIZE_N 32
    to 256: past 65535 tiles of even the widest, grid axis y refuses every config."""
    return len(call.shape) == 3 and -(-call.shape[2] // 256) > GRID_LIMITS[1]


def _bmm_batch_on_grid_z(call: TensorCall) -> bool:
    """bmm launches (cdiv(M, TILE_M), cdiv(N, TILE_N), batch): past 65535 batches grid z refuses it."""
    return len(call.shape) == 4 and call.shape[0] > GRID_LIMITS[2] and 0 not in call.shape[1:]


def _bmm_n_on_grid_y(call: TensorCall) -> bool:
    """bmm's N tiles (TILE_N 32 to 128) on grid y: past 65535 tiles of the widest."""
    return len(call.shape) == 4 and -(-call.shape[3] // 128) > GRID_LIMITS[1] and 0 not in call.shape[:3]


def _index_select_on_grid_y(call: TensorCall) -> bool:
    """index_select launches (cdiv(M, BLOCK_M), cdiv(index, BLOCK_N)) with BLOCK_N =
    next_pow2(cdiv(N, 16)) held to 16..512 for a dim of N (index_select_heur_block_n)."""
    case = call.case
    if not case.shape or 0 in case.shape:
        return False
    n = case.shape[case.dim]
    block_n = max(min(1 << max(-(-n // 16) - 1, 0).bit_length(), 512), 16)
    return -(-case.index // block_n) > GRID_LIMITS[1]


def _scatter_wraps(call: TensorCall) -> bool:
    """scatter's and scatter_add_'s generated kernels are written with int32 offsets
    ("int32_offset = int32_offset or True"): an input past 2**31 elements faults (an H200 at
    (65537, 32768), every line)."""
    return math.prod(call.shape) >= 2**31


M = TensorCase
_MATMUL_FEATURES = (
    "masked_2d_row_load",
    "masked_2d_col_load",
    "mask_2d_logic",
    "masked_loop_tail",
    "partial_2d_tiles",
    "masked_2d_store",
    "masked_load_other",
    "int64_offset_arith",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
)
_INDEX_FEATURES = (
    "masked_1d_load",
    "int64_offset_arith",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
    "masked_load_other",
)
# M, K and N: K tails below, at and past one BLOCK_K (the tuned configs' 32 to 256), M and N
# partial tiles; the full sweep adds a K over several tiles with a tail and wide N
_MM = {
    "quick": (M((13, 19, 17)), M((5, 70, 9)), M((33, 7, 3)), M((3, 129, 40))),
    "full": (M((13, 19, 17)), M((5, 70, 9)), M((33, 7, 3)), M((3, 129, 40)), M((70, 300, 65)), M((130, 257, 33))),
}
_BMM = {
    "quick": (M((2, 13, 19, 17)), M((3, 5, 70, 9)), M((1, 33, 7, 3))),
    "full": (M((2, 13, 19, 17)), M((3, 5, 70, 9)), M((1, 33, 7, 3)), M((4, 70, 129, 65))),
}
# index ops: the indexed dim inner and outer, index extents below and past the dim's size
_GATHER = {
    "quick": (
        M((5, 7, 9), dim=1, index=4),
        M((6, 11), dim=0, index=9),
        M((4, 33), dim=1, index=17),
        M((3, 4, 5), dim=2, index=3),
    ),
    "full": (
        M((5, 7, 9), dim=1, index=4),
        M((6, 11), dim=0, index=9),
        M((4, 33), dim=1, index=17),
        M((3, 4, 5), dim=2, index=3),
        M((64, 130), dim=0, index=200),
        M((8, 1025), dim=1, index=700),
    ),
}
_SCATTER = {  # scatter's index is unique along dim: index <= the dim's size
    "quick": (
        M((5, 7, 9), dim=1, index=4),
        M((11, 6), dim=0, index=9),
        M((4, 33), dim=1, index=17),
        M((3, 4, 5), dim=2, index=3),
        M((5, 7, 9), dim=1, index=4, narrow=True, src_extra=2),
    ),
    "full": (
        M((5, 7, 9), dim=1, index=4),
        M((11, 6), dim=0, index=9),
        M((4, 33), dim=1, index=17),
        M((3, 4, 5), dim=2, index=3),
        M((200, 64), dim=0, index=130),
        M((8, 1025), dim=1, index=700),
    ),
}
# gather: an index narrower than the input outside dim; scatter_add_: a narrower index with a larger
# source, and index, source and input of one shape (its fast path: scatter_add_1) over a non-last
# and the last dim
_GATHER_QUICK = (
    M((5, 7, 9), dim=1, index=4),
    M((6, 11), dim=0, index=9),
    M((4, 33), dim=1, index=17),
    M((3, 4, 5), dim=2, index=3),
)
_GATHER = {
    "quick": (*_GATHER_QUICK, M((5, 7, 9), dim=1, index=4, narrow=True)),
    "full": (*_GATHER["full"], M((5, 7, 9), dim=1, index=4, narrow=True)),
}
_SCATTER_ADD = {
    "quick": (
        *_GATHER_QUICK,
        M((5, 7, 9), dim=1, index=4, narrow=True, src_extra=2),
        M((5, 7, 9), dim=1, index=7),
        M((3, 4, 5), dim=2, index=5),
    ),
    "full": (
        *_GATHER["full"],
        M((5, 7, 9), dim=1, index=4, narrow=True, src_extra=2),
        M((5, 7, 9), dim=1, index=7),
        M((3, 4, 5), dim=2, index=5),
    ),
}
_SELECT = {
    "quick": (
        M((5, 7, 9), dim=1, index=4),
        M((6, 11), dim=0, index=9),
        M((4, 33), dim=1, index=40),
        M((3, 4, 5), dim=2, index=3),
    ),
    "full": (
        M((5, 7, 9), dim=1, index=4),
        M((6, 11), dim=0, index=9),
        M((4, 33), dim=1, index=40),
        M((3, 4, 5), dim=2, index=3),
        M((130, 64), dim=0, index=257),
        M((8, 1025), dim=1, index=700),
    ),
}
# Launch limits, read from each kernel's launch: addmm's grid is (cdiv(M, BLOCK_SIZE_M),
# cdiv(N, BLOCK_SIZE_N)), bmm's (cdiv(M, TILE_M), cdiv(N, TILE_N), batch), index_select's
# (cdiv(M, BLOCK_M), cdiv(index, BLOCK_N)) with BLOCK_N 16 for a dim of 16: grid axes y and z
# take 65535 programs on CUDA-like devices.  A batch of 65537 (attention's batch x heads) and an
# index of a million are what models pass; N past 65535 tiles of 256 (or 128) columns is
# hardware only (the matmul route's K padding makes a 1-row B a 256-row copy: 17 GiB).
_GRID = {
    "addmm": (M((1, 1, 65535 * 256 + 1)),),
    "bmm": (M((65537, 1, 1, 1)), M((1, 1, 1, 65535 * 128 + 1))),
    "index_select": (M((2, 16), dim=1, index=65535 * 16 + 1),),
}
# Past 2**31 elements in one operand, where an int32 offset wraps (program ids are int32 unless
# a kernel widens them; scatter's generated kernel asks for int32 offsets outright), reaching
# the last row: hardware lanes, each call in a process of its own
_WIDE = (65537, 32768)  # 2**31 + 32768 elements
_LARGE = {
    "mm": (M((65537, 32768, 16)),),
    "addmm": (M((65537, 32768, 16)),),
    "bmm": (M((2, 32769, 32768, 16)),),
    "gather": (M(_WIDE, dim=1, index=1),),
    "scatter": (M(_WIDE, dim=1, index=1),),
    "scatter_add_": (M(_WIDE, dim=1, index=1),),
    "index_select": (M(_WIDE, dim=1, index=4),),
    "index_add": (M(_WIDE, dim=0, index=4),),
}
P = TensorPath

OPS: tuple[TensorOp, ...] = (
    TensorOp(
        name="mm",
        family=MATMUL,
        module="flag_gems.ops.mm",
        entry="mm",
        gems_names=("mm", "mm_out"),
        cases=_MM,
        torch_call=_mm,
        out=True,
        paths=(
            P("general: M x N tiles, K tiles then a masked K tail", M((13, 19, 17)), "mm_kernel_general"),
            # GROUP_M (8) row tiles a group: a partial last group past 8 x BLOCK_M rows
            P("general: a partial last group of row tiles", M((601, 17, 70)), "mm_kernel_general"),
            # K = 256 divides by every tuned BLOCK_K (32 - 256): the K loop's last tile is the tail's
            P("general: K a multiple of BLOCK_K, no K tail", M((13, 256, 17)), "mm_kernel_general"),
            P("a @ a.T: the symmetric (syrk) kernel", M((13, 19, 13)), "mm_kernel_syrk", layout="syrk"),
            # past one tile, a program below the diagonal also stores its mirror
            P("a @ a.T past one tile: the mirrored stores", M((41, 17, 41)), "mm_kernel_syrk", layout="syrk"),
        ),
        # 5.4's _cluster_remote_gemm_kernel: Hopper's cluster GEMM, its B tail under a row condition too
        kernels=("mm_kernel_general", "mm_kernel_syrk", "_cluster_remote_gemm_kernel"),
        features=_MATMUL_FEATURES,
        defects=(
            Defect("matmul_empty_k_reads_before", _empty_k),
            Defect("mm_fp32_small_k_shared_memory", _general_kernel_launch, hardware_only=True),
            Defect("mm_stream_k_half_partials", _stream_k_half),
        ),
        large=_LARGE["mm"],
    ),
    TensorOp(
        name="addmm",
        family=MATMUL,
        module="flag_gems.ops.addmm",
        entry="addmm",
        gems_names=("addmm", "addmm_out"),
        cases=_MM,
        torch_call=_addmm,
        bias=True,
        out=True,
        params=(Param("beta", (1, 0, 0.5, 2)), Param("alpha", (1, 0, 1.5, 3))),
        paths=(
            P("bias + a @ b: K tiles under (m, k) and (k, n) masks", M((13, 19, 17)), "addmm_kernel"),
            P("bias + a @ b: K a multiple of BLOCK_K, no K tail", M((13, 256, 17)), "addmm_kernel"),
            # models pass (N,) biases; torch takes any bias that broadcasts to (M, N)
            P("a full (M, N) bias: its row stride", M((13, 19, 17)), "addmm_kernel", layout="bias_full"),
            P(
                "an (M, 1) bias: a column broadcast along each row",
                M((13, 19, 17)),
                "addmm_kernel",
                layout="bias_column",
            ),
        ),
        kernels=("addmm_kernel",),
        features=_MATMUL_FEATURES,
        defects=(
            Defect("grid_y_over_limit", _addmm_n_on_grid_y),
            Defect("addmm_beta_zero_reads_bias", lambda c: c.values == "nonfinite_bias"),
        ),
        grid=_GRID["addmm"],
        large=_LARGE["addmm"],
    ),
    TensorOp(
        name="bmm",
        family=MATMUL,
        module="flag_gems.ops.bmm",
        entry="bmm",
        gems_names=("bmm", "bmm_out"),
        cases=_BMM,
        torch_call=_bmm,
        out=True,
        paths=(
            P("a batch a grid axis: K tail masked (DIVISIBLE_K off)", M((2, 13, 19, 17)), "bmm_kernel"),
            P("K a multiple of TILE_K: no K mask", M((2, 13, 64, 17)), "bmm_kernel"),
            # attention broadcasts one operand over the batch; a strided batch steps past K * N
            P(
                "operands broadcast over the batch (batch stride 0)",
                M((3, 7, 5, 6)),
                "bmm_kernel",
                layout="batch_broadcast",
            ),
            P("operands every other batch of a larger tensor", M((3, 7, 5, 6)), "bmm_kernel", layout="batch_strided"),
        ),
        kernels=("bmm_kernel",),
        features=_MATMUL_FEATURES,
        defects=(
            Defect("bmm_empty_log2_key", _bmm_empty, hardware_only=True),
            Defect("grid_z_over_limit", _bmm_batch_on_grid_z),
            Defect("grid_y_over_limit", _bmm_n_on_grid_y),
        ),
        grid=_GRID["bmm"],
        large=_LARGE["bmm"],
    ),
    TensorOp(
        name="gather",
        family=INDEX,
        module="flag_gems.ops.gather",
        entry="gather",
        gems_names=("gather",),
        cases=_GATHER,
        torch_call=_gather,
        index="along",
        paths=(
            P(
                "generated strided kernel over the index's elements",
                M((5, 7, 9), dim=1, index=4),
                "_gather_flaggems_jit_function",
            ),
            P("past one program's 512 index elements", M((6, 130), dim=1, index=100), "_gather_flaggems_jit_function"),
        ),
        features=_INDEX_FEATURES,
        large=_LARGE["gather"],
    ),
    TensorOp(
        name="scatter",
        family=INDEX,
        module="flag_gems.ops.scatter",
        entry="scatter",
        gems_names=("scatter", "scatter_"),
        cases=_SCATTER,
        torch_call=_scatter,
        index="along",
        source=True,
        unique=True,
        params=(Param("reduce", (None, "add", "multiply")),),
        paths=(
            P(
                "generated strided kernel over the source's elements",
                M((5, 7, 9), dim=1, index=4),
                "_scatter_flaggems_jit_function",
            ),
            P(
                "past one program's 512 source elements",
                M((6, 130), dim=1, index=100),
                "_scatter_flaggems_jit_function",
            ),
        ),
        features=_INDEX_FEATURES,
        defects=(Defect("scatter_int32_offsets", _scatter_wraps),),
        large=_LARGE["scatter"],
    ),
    TensorOp(
        name="scatter_add_",
        family=INDEX,
        module="flag_gems.ops.scatter_add_",
        entry="scatter_add_",
        gems_names=("scatter_add_",),
        cases=_SCATTER_ADD,
        torch_call=_scatter_add_,
        index="along",
        source=True,
        accumulates=True,
        paths=(
            P(
                "generated strided kernel, atomic adds",
                M((5, 7, 9), dim=1, index=4),
                "_scatter_add_flaggems_jit_function",
            ),
            P(
                "past one program's 512 source elements, atomic adds",
                M((6, 130), dim=1, index=100),
                "_scatter_add_flaggems_jit_function",
            ),
        ),
        features=_INDEX_FEATURES,
        defects=(
            Defect("scatter_int32_offsets", _scatter_wraps),
            # the same (wrong) tensor every time, the operands untouched: those contracts cannot see it
            Defect(
                "scatter_add_same_shape_copy",
                lambda c: c.case.same_shape and c.case.dim != len(c.shape) - 1 and c.contract not in SELF_COMPARING,
            ),
        ),
        large=_LARGE["scatter_add_"],
    ),
    TensorOp(
        name="index_select",
        family=INDEX,
        module="flag_gems.ops.index_select",
        entry="index_select",
        gems_names=("index_select",),
        cases=_SELECT,
        torch_call=_index_select,
        index="vector",
        out=False,
        paths=(P("(rows, index) tiles", M((5, 7, 9), dim=1, index=4), "index_select_kernel"),),
        features=(
            *_INDEX_FEATURES,
            "mask_2d_logic",
            "python_and_or_masks",
        ),  # its row-masked load is stored under the same mask
        defects=(
            Defect("index_select_index_strides", _index_strided),
            Defect("grid_y_over_limit", _index_select_on_grid_y),
        ),
        grid=_GRID["index_select"],
        large=_LARGE["index_select"],
    ),
    TensorOp(
        name="index_add",
        family=INDEX,
        module="flag_gems.ops.index_add",
        entry="index_add",
        gems_names=("index_add", "index_add_"),
        cases=_SELECT,
        torch_call=_index_add,
        index="vector",
        source=True,
        params=(Param("alpha", (1, 0, 1.5, 3)),),
        accumulates=True,
        paths=(
            P(
                "generated strided kernel over the source, atomic adds",
                M((5, 7, 9), dim=1, index=4),
                "_index_add_flaggems_jit_function",
            ),
        ),
        features=_INDEX_FEATURES,
        defects=(
            Defect("index_add_src_layout", _src_not_like_input),
            Defect("index_add_index_strides", _index_strided),
        ),
        large=_LARGE["index_add"],
    ),
)
