"""The fast path's own code paths, and a problem that reaches each on a given device.

The fast path's kernels run on the vendor's compiler too, so the contracts must reach every
plan family they have (``fastpath.py``): tiles per m or flat over (M, K), in one launch or
split over rows (partials, or softmax statistics merged in a second launch), softmax's two
folds (per step under 32 columns, per element from 32), and the tiny-K slabs (K dividing the
step or not, one launch or split).  Which of them a shape takes depends on the device
(``tilemodel.pick`` prices plans with its SMs and bandwidth), so ``path_shapes`` searches a
fixed, seeded spread of shapes with that device's model.  Pure: no torch, no triton.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from .tilemodel import Device, SlabPlan, pick, slab_rows, split_rows

KINDS = ("reduce", "softmax")  # tilemodel's kind: one pass and a store, or two passes and a write


def kind_of(fastpath: str) -> str:
    """tilemodel's kind of a registry row's ``fastpath`` value (its kernel family)."""
    return fastpath if fastpath in KINDS else "reduce"


@dataclass(frozen=True)
class Path:
    """One plan family: what a call launches, and the branch its kernels take."""

    kind: str  # reduce | softmax
    slab: bool
    split: bool
    flat: bool = False  # tiles: column blocks of the flattened (M, K) output
    wide: bool = False  # softmax tiles: 32 columns or more, a max and sum per element
    k_divides: bool = True  # slabs: K divides the step (every lane holds a k)

    @property
    def name(self) -> str:
        if self.slab:
            parts = ["slab", "K divides the step" if self.k_divides else "K leaves lanes idle"]
        else:
            parts = ["flat tiles" if self.flat else "tiles per m"]
            if self.kind == "softmax":
                parts.append("per-element fold" if self.wide else "per-step fold")
        parts.append("split" if self.split else "one launch")
        return ", ".join(parts)

    @property
    def kernels(self) -> frozenset[str]:
        """The fast path's kernels one call of this path launches."""
        if self.kind == "reduce":
            first = (
                "fl_slab_sum_kernel"
                if self.slab
                else ("fl_reduce_rows_split_kernel" if self.split else "fl_reduce_rows_kernel")
            )
            return frozenset({first, "fl_reduce_rows_kernel"} if self.split else {first})
        if self.slab:
            return frozenset(
                {"fl_slab_softmax_stats_kernel", "fl_slab_softmax_norm_kernel"}
                if self.split
                else {"fl_slab_softmax_kernel"}
            )
        return frozenset(
            {"fl_softmax_stats_split_kernel", "fl_softmax_norm_split_kernel"}
            if self.split
            else {"fl_softmax_rows_kernel"}
        )


def every_path(kind: str) -> tuple[Path, ...]:
    """Every path of a kind, in a fixed order (the contracts' parameters)."""
    if kind not in KINDS:
        raise ValueError(f"unknown fast-path kind {kind!r}; known: {', '.join(KINDS)}")
    tiles = [
        Path(kind, False, split, flat, wide)
        for flat in (False, True)
        for split in (False, True)
        for wide in ((False, True) if kind == "softmax" else (False,))
    ]
    slabs = [Path(kind, True, split, k_divides=divides) for divides in (True, False) for split in (False, True)]
    return tuple(tiles + slabs)


def path_of(M: int, N: int, K: int, device: Device, elem: int, kind: str) -> Path | None:
    """The path the fast path takes for an (M, N, K) problem on ``device``, or None where it
    takes none (no launchable plan: the moved axis runs it)."""
    plan = pick(M, N, K, device, elem, kind)
    if plan is None:
        return None
    if isinstance(plan, SlabPlan):
        return Path(kind, True, slab_rows(N, plan.splits)[1] > 1, k_divides=plan.block % K == 0)
    split = plan.splits > 1 and split_rows(N, plan.splits, plan.block_r)[1] > 1
    return Path(kind, False, split, plan.flat, kind == "softmax" and plan.block_k >= 32)


# The spread searched: odd and power-of-two neighbours, at least 3 m (an m-stride defect
# shows) and 3 rows; K from 2 (a slab's first) to past the widest tile.
_M = (3, 5, 8, 17, 33, 64, 257, 1031, 4099, 16411)
_N = (3, 7, 33, 130, 515, 1201, 2049, 4099, 6007, 9001, 12007, 20011, 40009, 65537, 131101)
_K = (2, 3, 5, 6, 8, 12, 13, 16, 17, 24, 31, 33, 64, 100, 257, 1000, 4097)


@functools.lru_cache(maxsize=32)
def path_shapes(kind: str, device: Device, elem: int, limit: int) -> dict[Path, tuple[int, int, int]]:
    """For each path of ``kind`` this device's model reaches within ``limit`` elements, the
    smallest (M, N, K) of the spread that takes it (ties: the first of a seeded shuffle, so
    the choice does not lean on one end of the spread)."""
    shapes = [(m, n, k) for m in _M for n in _N for k in _K if m * n * k <= limit]
    random.Random(20261204).shuffle(shapes)
    shapes.sort(key=lambda s: s[0] * s[1] * s[2])
    found: dict[Path, tuple[int, int, int]] = {}
    for M, N, K in shapes:
        path = path_of(M, N, K, device, elem, kind)
        if path is not None and path not in found:
            found[path] = (M, N, K)
    return found
