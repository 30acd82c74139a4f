"""Transforms of a sample: the same call on tensors re-drawn where kernels go wrong.

OpInfo's samples are small (sizes like 5, 10, 20): no partial tile.  ``boundary`` re-draws every
tensor of a sample at sizes just past tile edges (the ladder), keeping its rank and the
relations between its sizes - sizes equal in the sample stay equal, ones stay ones, so
broadcasting and the dims an argument names stay valid - and grows sizes only, so index values
stay in range; values are re-drawn in each tensor's own range (an op's domain holds).  ``pow2``
is the same at powers of two no larger than 32 (Torch-FL's survey's shapes: the method is
measured against it); ``empty`` sets the largest size to zero.  ``transposed``, ``strided`` and
``expanded`` keep the values and change the layout: transposed strides, every other element
of a larger buffer, stride 0.  All are seeded: a case is the same every run.
"""

from __future__ import annotations

from typing import Any

TRANSFORMS = ("none", "boundary", "transposed", "strided", "expanded", "empty", "pow2")
LADDER = (1, 3, 17, 33, 129, 257, 1025, 4097)


class NotApplicable(Exception):
    """The transform changes nothing in this sample (no tensor of the rank it needs)."""


def _tensors(sample: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(sample)[0] if isinstance(t, torch.Tensor)]


def sizes(sample: Any, transform: str, budget: int) -> dict[int, int]:
    """How each size (> 1) of the sample's tensors maps under a re-drawing transform."""
    import math

    shapes = [tuple(t.shape) for t in _tensors(sample) if t.dim() > 0]
    distinct = sorted({s for shape in shapes for s in shape if s > 1}, reverse=True)
    if not distinct:
        raise NotApplicable("no tensor dimension past 1")
    if transform == "empty":
        return {distinct[0]: 0}
    if transform == "pow2":
        return {s: min(32, 1 << (s - 1).bit_length()) for s in distinct}

    def biggest(mapping: dict[int, int]) -> int:
        return max((math.prod(mapping.get(s, s) for s in shape) for shape in shapes), default=0)

    mapping = {s: next((v for v in LADDER if v >= s), s) for s in distinct}
    for s in distinct:  # the largest sizes first: one dim well past several tiles where the budget allows
        while True:
            bigger = next((v for v in LADDER if v > mapping[s]), None)
            if bigger is None or biggest({**mapping, s: bigger}) > budget:
                break
            mapping[s] = bigger
    return mapping


def _distinct_along(t: Any) -> int | None:
    """The dim along which every line of the integer tensor ``t`` holds distinct values (an
    index a scatter, index_copy or put writes through: OpInfo draws those without repeats,
    since which of two writes to one element lands is undefined), or None."""
    import torch

    if t.dim() == 0 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        return None
    for dim in range(t.dim() - 1, -1, -1):
        if t.shape[dim] > 1:
            ordered = t.sort(dim=dim).values
            if not bool((ordered.narrow(dim, 1, t.shape[dim] - 1) == ordered.narrow(dim, 0, t.shape[dim] - 1)).any()):
                return dim
    return None


def _distinct(lo: int, hi: int, shape: tuple[int, ...], dim: int, gen: Any) -> Any:
    """Values from lo.. with no repeat along ``dim`` (the range widened only as far as the
    line's length needs): each line a random choice without replacement."""
    import torch

    span = max(hi - lo + 1, shape[dim])
    lines = torch.rand((*shape[:dim], *shape[dim + 1 :], span), generator=gen).argsort(dim=-1)
    return (lines[..., : shape[dim]] + lo).movedim(-1, dim)


def _redraw(t: Any, shape: tuple[int, ...], gen: Any) -> Any:
    """A tensor of ``shape`` with values in ``t``'s own range, and of its kind: a float tensor
    of whole numbers (a degree, a count) stays whole, an index without repeats along a dim
    stays without them."""
    import torch

    if t.numel() == 0 or 0 in shape:
        return torch.empty(shape, dtype=t.dtype)
    if t.dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if t.is_floating_point():
        finite = t[torch.isfinite(t)].double()
        lo, hi = (float(finite.min()), float(finite.max())) if finite.numel() else (-1.0, 1.0)
        if finite.numel() > 1 and bool((finite == finite.round()).all()):
            return torch.randint(int(lo), int(hi) + 1, shape, generator=gen, dtype=torch.int64).to(t.dtype)
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0 if lo != 0 else 1.0
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(t.dtype)
    if t.is_complex():
        return torch.randn(shape, generator=gen, dtype=t.dtype)
    lo, hi = int(t.min()), int(t.max())
    dim = _distinct_along(t)
    if dim is not None and len(shape) == t.dim():
        return _distinct(lo, hi, shape, dim, gen).to(t.dtype)
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(t.dtype)


REDRAWN = ("boundary", "pow2", "empty")


def apply(sample: Any, transform: str, *, budget: int, seed: int) -> Any:
    """``sample`` (input, args, kwargs) under ``transform``."""
    return relayout(redraw(sample, transform, budget=budget, seed=seed), transform)


def redraw(sample: Any, transform: str, *, budget: int, seed: int) -> Any:
    """The sizes part of ``transform`` (on the host: a seeded draw); the sample itself for a
    layout transform."""
    import torch
    from torch.utils._pytree import tree_map

    if transform not in TRANSFORMS:
        raise ValueError(f"unknown transform {transform!r}; known: {', '.join(TRANSFORMS)}")
    if transform not in REDRAWN:
        return sample
    gen = torch.Generator().manual_seed(seed)
    changed = []
    mapping = sizes(sample, transform, budget)

    def drawn(v: Any) -> Any:
        if not isinstance(v, torch.Tensor) or v.dim() == 0:
            return v
        shape = tuple(mapping.get(s, s) for s in v.shape)
        if shape == tuple(v.shape):
            return v
        changed.append(1)
        return _redraw(v, shape, gen)

    result = tree_map(drawn, sample)
    if not changed:
        raise NotApplicable(f"no tensor the {transform} transform applies to")
    return result


def relayout(sample: Any, transform: str) -> Any:
    """The layout part of ``transform``, on whatever device the sample's tensors are (so a
    device gets the strides, not a host copy of them)."""
    import torch
    from torch.utils._pytree import tree_map

    if transform not in ("transposed", "strided", "expanded"):
        return sample
    changed = []

    def relaid(v: Any) -> Any:
        if not isinstance(v, torch.Tensor) or v.numel() == 0:
            return v
        if transform == "transposed" and v.dim() >= 2 and v.shape[-1] > 1 and v.shape[-2] > 1:
            changed.append(1)
            return v.transpose(-1, -2).contiguous().transpose(-1, -2)
        if transform == "strided" and v.dim() >= 1:
            changed.append(1)
            wide = torch.zeros((*v.shape[:-1], 2 * v.shape[-1]), dtype=v.dtype, device=v.device)
            view = wide[..., ::2]
            view.copy_(v)
            return view
        if transform == "expanded" and v.dim() >= 1:
            dims = [d for d, s in enumerate(v.shape) if s > 1]
            if dims:
                changed.append(1)
                return v.narrow(dims[0], 0, 1).expand(v.shape)
        return v

    result = tree_map(relaid, sample)
    if not changed:
        raise NotApplicable(f"no tensor the {transform} transform applies to")
    return result
