"""Values whose answer is decided across tiles, on every kernel path that walks N in
several tiles (the rows' ``paths`` with a loop): tied extremes whose members sit in
different tiles (torch takes the first), an extreme that first appears in a later tile
(and, for a value that is an extremum - amax, max.dim - one that sits in the first tile only),
an absorbing value (prod's exact zero) in the last tile, a running maximum that grows
tile after tile (softmax's online rescale), and for a plain sum, mean, variance or norm one
value in the last tile that decides it.  dim=None paths of two stages count the first
stage's blocks of the flattened input as tiles.  Positions are tile-agnostic: 1, just past each
power of two inside N (every tile boundary a power-of-two tile can have), and N - 1."""

import math

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import on_device
from pytest_fl_contract.registry.reductions import Case


def _positions(n: int) -> list[int]:
    return sorted({1, *(2**k + 1 for k in range(4, int(math.log2(max(n, 2))) + 1) if 2**k + 1 < n - 1), n - 1})


def _planted(shape, d, where, value, base=0.0):
    x = torch.full(shape, base)
    for i in where:
        (x.view(-1)[i] if d is None else x.select(d, i)).fill_(value)
    return x


def _along(values, case):
    """A 1-D tensor of N values laid along the case's dim, the same in every slice (dim=None:
    along the flattened input, whose first stage's blocks are the tiles)."""
    if case.dim is None:
        return values.view(case.shape).contiguous()
    d = case.dim % len(case.shape)
    return (
        values.view([values.numel() if i == d else 1 for i in range(len(case.shape))]).expand(case.shape).contiguous()
    )


def _length(case):
    return math.prod(case.shape) if case.dim is None else case.shape[case.dim]


def _patterns(op, case):
    """What torch pins across tiles for ``op``; for a plain sum, mean, variance or norm (none
    pinned), one value in the last tile that decides the slice: a kernel that drops or repeats
    a tile, or a block of a dim=None pass, shows however little the other values move it."""
    return list(_crossing(op, case)) or [
        ("a value in the last tile decides the slice", _planted(case.shape, case.dim, [_length(case) - 1], 1000.0))
    ]


def _crossing(op, case):
    n = _length(case)
    pos = _positions(n)
    # the extreme (max) first appears in the last tile; every value below zero, so a tile
    # padded with 0 where the dtype's minimum belongs holds a false maximum (and for a
    # minimum, sign -1, every value above zero)
    later = _along(torch.linspace(0, 1, n), case) - 2
    flip = later.flip(tuple(range(later.dim())) if case.dim is None else case.dim)
    if op.kind == "index":
        sign = 1.0 if op.extreme == "max" else -1.0
        yield "ties in the first and the last tile", _planted(case.shape, case.dim, [pos[0], pos[-1]], -sign, -3 * sign)
        yield "ties past the first tile", _planted(case.shape, case.dim, pos[1:], -sign, -3 * sign)
        yield "the extreme first appears in the last tile", later * sign
    elif op.picks is not None:  # amax, max.dim's values: the extremum sits in the last tile only
        sign = 1.0 if op.picks == "max" else -1.0
        yield "the extreme first appears in the last tile", later * sign
        yield "the extreme in the first tile only", flip * sign
        if op.kind == "scan":  # cummax: a running extreme carried across tiles meets its tie (torch: the later index)
            yield "ties in the first and the last tile", _planted(case.shape, case.dim, [pos[0], pos[-1]], 5 * sign)
    if op.kind == "scan" and op.picks is None:  # cumsum and the like: every tile's carry, exact in fp32
        yield "a carry across every tile", torch.ones(case.shape)
    if op.zeros == "dense":  # all: a single zero in the last tile decides the slice
        yield "a zero in the last tile only", _planted(case.shape, case.dim, [n - 1], 0.0, 1.0)
    if op.zeros in ("sparse", "half"):  # any, count_nonzero: a single nonzero in the last tile
        yield "a nonzero in the last tile only", _planted(case.shape, case.dim, [n - 1], 1.0)
    if op.absorbing is not None:
        yield "an absorbing value in the last tile", _planted(case.shape, case.dim, [n - 1], op.absorbing, 1.0)
    if op.running_max:
        ramp = torch.arange(n, dtype=torch.float32).mul_(8.0 / max(n - 1, 1))
        yield "a maximum that grows tile after tile", _along(ramp, case)


def tile_params(ops, version):
    """(op, Case) of every multi-tile path, once per shape and dim (vector_norm's ords share theirs)."""
    out = {}
    for op in ops:
        for path in op.paths_in(version):
            if path.multi_tile and path.entry is None and path.dtype == "float32":
                key = f"{op.name}-{'x'.join(map(str, path.shape))}-d{path.dim}"  # dNone: the flattened input
                out.setdefault(key, pytest.param(op, Case(path.shape, path.dim), id=key))
    return list(out.values())


def test_tile_values(flag_gems, fl_device, tile_op, tile_case):
    op, case = tile_op, tile_case
    for what, values in _patterns(op, case):
        x = on_device(values, fl_device, op)
        assert_agrees(
            op,
            lambda x=x: op.call(x, case.dim),
            x,
            case.dim,
            what=f"{what}: {case.shape} dim={case.dim}",
            exact_index=True,
        )
