"""Inject the Iluvatar masked-load defect into Triton's interpreter.

The model, from the seed's standalone table (DESIGN §3): where a 2-D mask combines a
row and a column condition, the row half is lost.  The builder only sees the final
boolean array, so a 2-D mask (or ``tl.where`` condition) that is *separable* - equal to
``rows_any[:, None] & cols_any[None, :]`` with the valid rows a prefix, as an index
bound ``n < N`` makes them - is replaced by ``cols_any`` broadcast over
all rows.  That covers ``tl.load(mask=(n < N) & (k < K))`` and ``tl.where(n < N, v, 0)``
(a row-only condition broadcast to 2-D: every column is "any", so it becomes all-true),
both of which gave 28 instead of 6 on the BI-V150.  Not modelled: masks of other ranks,
non-separable 2-D masks (a flattened index), and tiles with no valid row at all (the
column condition cannot be recovered from an all-false mask), and conditions whose valid
rows are not a prefix (data-dependent ones such as ``x == -inf`` that happen to be
separable); stores are never touched.

Extra lanes read real memory only where the address lies inside a storage passed to
the launch (the next rows of the same allocation); elsewhere they get values from the
emulated device heap: a deterministic pattern, or what ``poison`` last wrote there,
modelling "whatever the allocator handed out last".  Unknown addresses are never
dereferenced.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Any

KNOWN_DEFECTS = ("masked_2d_row_load",)


@dataclass
class Counters:
    """What the injected defect did; tests and the terminal summary read these."""

    loads_seen: int = 0
    faulted_loads: int = 0
    faulted_selects: int = 0
    extra_lanes: int = 0
    in_storage_lanes: int = 0
    garbage_lanes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)


@dataclass
class _State:
    enabled: set[str] = field(default_factory=set)
    counters: Counters = field(default_factory=Counters)
    heap_fill: float | None = None  # None: address-derived pattern
    storages: list[tuple[int, int]] = field(default_factory=list)
    installed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


# Process-global on purpose: the hooks sit on Triton's interpreter classes, which every
# launch in the process shares; the lane session reads the counters from here.
STATE = _State()


def drop_row_condition(mask: Any) -> Any | None:
    """The defective mask for a 2-D separable ``mask``, or None where the model does not apply.

    >>> import numpy as np
    >>> m = np.zeros((8, 3), bool); m[:4, :2] = True
    >>> drop_row_condition(m).astype(int).tolist()[7]
    [1, 1, 0]
    """
    import numpy as np

    if mask.ndim != 2 or mask.all():
        return None
    rows = mask.any(axis=1)
    cols = mask.any(axis=0)
    if rows.all() or not rows.any():
        return None
    valid = int(rows.sum())
    if not rows[:valid].all():
        return None  # not a row bound (n < N): a data-dependent condition, left alone
    if not np.array_equal(mask, rows[:, None] & cols[None, :]):
        return None
    return np.broadcast_to(cols[None, :], mask.shape).copy()


def _garbage(addresses: Any, np_dtype: Any, bfloat16: bool = False) -> Any:
    """Emulated heap contents at ``addresses``: deterministic, never read from memory.

    The interpreter stores bfloat16 as uint16 bit patterns: garbage for it is made as
    float32 and truncated to its upper half, so a row read past the end adds the same
    magnitude as in fp32 (as integers the values were denormals, and hid the defect)."""
    import numpy as np

    if STATE.heap_fill is not None:
        values = np.full(addresses.shape, STATE.heap_fill, dtype=np.float64)
    else:
        # A fixed pseudo-random pattern in [1024, 5119]: large enough to be seen in a sum.  Keyed
        # on the distance from the launch's nearest tensor below, not on the address itself, so
        # the same call reads the same garbage in every run (allocation addresses move between
        # runs; an expected-fail lane's counts must not).
        values = 1024.0 + ((_relative(addresses) * np.uint64(2654435761)) % np.uint64(4096))
    if bfloat16:
        return (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    if np.issubdtype(np_dtype, np.floating):
        return values.astype(np_dtype)
    if np_dtype == np.bool_:
        return np.ones(addresses.shape, dtype=np.bool_)
    return np.nan_to_num(values, nan=0x5A5A).astype(np_dtype)


def _relative(addresses: Any) -> Any:
    """Each address as its distance from the start of the nearest storage of the launch at or
    below it (from the lowest one where none is below), as uint64."""
    import numpy as np

    from .memory import MEMORY

    addr = addresses.astype(np.int64)
    known = MEMORY.storages if MEMORY.storages else STATE.storages
    if not known:
        return (addr & 0xFFFFF).astype(np.uint64)
    starts = np.array(sorted(start for start, _ in known), dtype=np.int64)
    below = np.clip(np.searchsorted(starts, addr, side="right") - 1, 0, len(starts) - 1)
    return np.abs(addr - starts[below]).astype(np.uint64)


def _inside_storages(addresses: Any, itemsize: int) -> Any:
    import numpy as np

    inside = np.zeros(addresses.shape, dtype=bool)
    addr = addresses.astype(np.uint64)
    for start, nbytes in STATE.storages:
        inside |= (addr >= start) & (addr + itemsize <= start + nbytes)
    return inside


def install() -> None:
    """Hook the interpreter's builder and launcher once; the hooks do nothing until enabled."""
    if STATE.installed:
        return
    from triton.runtime import interpreter as ti

    builder = ti.InterpreterBuilder
    original_load = builder.create_masked_load
    original_select = builder.create_select
    original_init_args = ti.GridExecutor._init_args_hst

    def create_masked_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        if "masked_2d_row_load" not in STATE.enabled:
            return original_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
        STATE.counters.loads_seen += 1
        defective = drop_row_condition(mask.data)
        if defective is None:
            return original_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
        extra = defective & ~mask.data
        dtype_tt = ptrs.get_element_ty()
        dtype_np = ti._get_np_dtype(dtype_tt)
        inside = _inside_storages(ptrs.data, dtype_np.itemsize)
        readable = ti.TensorHandle(mask.data | (extra & inside), ti.tl.int1)
        handle = original_load(self, ptrs, readable, other, cache_modifier, eviction_policy, is_volatile)
        outside = extra & ~inside
        if outside.any():
            handle.data[outside] = _garbage(ptrs.data[outside], dtype_np, dtype_tt == ti.tl.bfloat16)
        counters = STATE.counters
        counters.faulted_loads += 1
        counters.extra_lanes += int(extra.sum())
        counters.in_storage_lanes += int((extra & inside).sum())
        counters.garbage_lanes += int(outside.sum())
        return handle

    def create_select(self, cond, lhs, rhs):
        if "masked_2d_row_load" in STATE.enabled:
            defective = drop_row_condition(cond.data)
            if defective is not None:
                STATE.counters.faulted_selects += 1
                cond = ti.TensorHandle(defective, cond.dtype)
        return original_select(self, cond, lhs, rhs)

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = original_init_args(self, args_dev, kwargs)
        storages = []
        for arg in [*args_hst, *kwargs_hst.values()]:
            if hasattr(arg, "untyped_storage"):
                storage = arg.untyped_storage()
                storages.append((storage.data_ptr(), storage.nbytes()))
        STATE.storages = storages
        return args_hst, kwargs_hst

    builder.create_masked_load = create_masked_load
    builder.create_select = create_select
    ti.GridExecutor._init_args_hst = init_args_hst
    STATE.installed = True


def enable(*names: str) -> None:
    unknown = [n for n in names if n not in KNOWN_DEFECTS]
    if unknown:
        raise ValueError(f"unknown defect {unknown[0]!r}; known: {', '.join(KNOWN_DEFECTS)}")
    install()
    STATE.enabled.update(names)


def disable(*names: str) -> None:
    STATE.enabled.difference_update(names or tuple(STATE.enabled))


def poison(fill: float | None) -> None:
    """Model an allocate-fill-free on the device: out-of-storage lanes now read ``fill``."""
    STATE.heap_fill = fill
