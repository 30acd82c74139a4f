"""The emulated device's memory: kernels touch only the tensors of their launch.

Triton's interpreter runs a kernel's loads and stores on host pointers, so a kernel that
reads or writes past its tensors reads or corrupts the test process's own memory (FlagGems
5.0.2's argmin over the last dim writes past its output and aborted the process).  On a
GPU such a store corrupts the caching allocator's neighbours silently.  Here, lanes whose
address lies outside every storage passed to the launch are never dereferenced: a load
gets the emulated heap's contents (see ``defects._garbage``) and is counted; a store is
dropped, counted, and raises ``EmulatedDeviceFault`` naming the kernel - an out-of-bounds
write is a defect on any device, and this is the one place it can be seen for certain.

Installed by the emulator's activation, before any defect is injected, so an injected
defect's own reads (rows past N) pass through it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class EmulatedDeviceFault(RuntimeError):
    """A kernel stored outside every tensor of its launch."""


@dataclass
class _Memory:
    storages: list[tuple[int, int]] | None = None  # (start, nbytes); None: unknown, no guard
    kernel: str = "?"
    oob_loads: int = 0  # lanes a kernel loaded from outside its tensors (its own bug)
    oob_stores: int = 0
    kernels: dict[str, int] = field(default_factory=dict)  # kernel -> out-of-bounds lanes
    installed: bool = False
    watch: list[tuple[int, int]] | None = None  # when a list: (lowest, highest) address of each load


# Process-global on purpose: the hooks sit on Triton's interpreter classes.
MEMORY = _Memory()


def outside(addresses: Any, active: Any, itemsize: int) -> Any:
    """Active lanes whose ``itemsize`` bytes do not lie in one storage of the launch."""
    import numpy as np

    if MEMORY.storages is None or not active.any():
        return np.zeros(addresses.shape, dtype=bool)
    addr = addresses.astype(np.uint64)
    live = addr[active]
    lo, hi = int(live.min()), int(live.max()) + itemsize
    if any(start <= lo and hi <= start + nbytes for start, nbytes in MEMORY.storages):
        return np.zeros(addresses.shape, dtype=bool)  # the common case: one storage holds every lane
    inside = np.zeros(addresses.shape, dtype=bool)
    for start, nbytes in MEMORY.storages:
        inside |= (addr >= start) & (addr + itemsize <= start + nbytes)
    return active & ~inside


def _note(lanes: int) -> None:
    MEMORY.kernels[MEMORY.kernel] = MEMORY.kernels.get(MEMORY.kernel, 0) + lanes


def install() -> None:
    """Hook the interpreter's loads, stores and launches once."""
    if MEMORY.installed:
        return
    from triton.runtime import interpreter as ti

    from . import defects

    builder = ti.InterpreterBuilder
    original_load, original_store = builder.create_masked_load, builder.create_masked_store
    original_init_args = ti.GridExecutor._init_args_hst

    def create_masked_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        dtype_tt = ptrs.get_element_ty()
        dtype_np = ti._get_np_dtype(dtype_tt)
        if MEMORY.watch is not None and mask.data.any():  # tests read the offsets a kernel computed
            live = ptrs.data[mask.data].astype("int64")
            MEMORY.watch.append((int(live.min()), int(live.max())))
        bad = outside(ptrs.data, mask.data, dtype_np.itemsize)
        if not bad.any():
            return original_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
        readable = ti.TensorHandle(mask.data & ~bad, ti.tl.int1)
        handle = original_load(self, ptrs, readable, other, cache_modifier, eviction_policy, is_volatile)
        handle.data[bad] = defects._garbage(ptrs.data[bad], dtype_np, dtype_tt == ti.tl.bfloat16)
        MEMORY.oob_loads += int(bad.sum())
        _note(int(bad.sum()))
        return handle

    def create_masked_store(self, ptrs, value, mask, cache_modifier, eviction_policy):
        itemsize = ti._get_np_dtype(ptrs.get_element_ty()).itemsize
        bad = outside(ptrs.data, mask.data, itemsize)
        if not bad.any():
            return original_store(self, ptrs, value, mask, cache_modifier, eviction_policy)
        original_store(self, ptrs, value, ti.TensorHandle(mask.data & ~bad, ti.tl.int1), cache_modifier,
                       eviction_policy)  # fmt: skip
        MEMORY.oob_stores += int(bad.sum())
        _note(int(bad.sum()))
        raise EmulatedDeviceFault(
            f"{MEMORY.kernel} stored {int(bad.sum())} element(s) outside every tensor of its launch "
            "(an out-of-bounds write: on a GPU it corrupts whatever memory lies there)"
        )

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = original_init_args(self, args_dev, kwargs)
        storages: list[tuple[int, int]] | None = []
        for arg in [*args_hst, *kwargs_hst.values()]:
            if hasattr(arg, "untyped_storage"):
                storage = arg.untyped_storage()
                storages.append((storage.data_ptr(), storage.nbytes()))  # type: ignore[union-attr]
            elif hasattr(arg, "data_ptr"):
                storages = None  # a pointer we cannot bound: no guard for this launch
                break
        MEMORY.storages = storages
        MEMORY.kernel = getattr(getattr(self, "fn", None), "__name__", "?")
        return args_hst, kwargs_hst

    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    ti.GridExecutor._init_args_hst = init_args_hst
    MEMORY.installed = True


def counters() -> dict[str, int]:
    return {"oob_loads": MEMORY.oob_loads, "oob_stores": MEMORY.oob_stores}
