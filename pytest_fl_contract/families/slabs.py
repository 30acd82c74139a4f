"""Slabs of a reduction's input and result, in step: a reference for a large input is made
and compared a slab at a time, so what it holds stays small (in cache on the host, a
fraction of the input on the device)."""

from __future__ import annotations

import math
from typing import Any

Index = tuple[slice, ...]


def slabs(
    shape: tuple[int, ...], dim: Any, keepdim: bool, keeps_shape: bool, elements: int
) -> list[tuple[Index, Index]]:
    """(input index, result index) pairs that cover the input and the result of a reduction
    over ``dim`` (an int, a list, or None) once each, cut along the largest kept axis into
    slabs of about ``elements`` input elements.  ``keeps_shape``: the op keeps the input's
    shape (softmax).  One pair of ``()`` (everything) where there is no kept axis to cut."""
    whole: list[tuple[Index, Index]] = [((), ())]
    if dim is None or not shape or (isinstance(dim, (list, tuple)) and not dim):
        return whole  # dim=[] reduces everything, as None does (torch's sum and mean)
    reduced = {d % len(shape) for d in (dim if isinstance(dim, (list, tuple)) else [dim])}
    kept = [a for a in range(len(shape)) if a not in reduced and shape[a] > 1]
    if not kept:
        return whole
    axis = max(kept, key=lambda a: shape[a])
    step = max(1, elements // max(math.prod(shape) // shape[axis], 1))
    if step >= shape[axis]:
        return whole
    out_axis = axis if keeps_shape or keepdim else axis - sum(d < axis for d in reduced)
    cuts = [slice(start, start + step) for start in range(0, shape[axis], step)]
    return [((slice(None),) * axis + (c,), (slice(None),) * out_axis + (c,)) for c in cuts]
