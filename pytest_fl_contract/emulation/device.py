"""The emulated device: kernels touch only the tensors of their launch, and the platform's
compiler defects happen to their loads.

Triton's interpreter runs a kernel's loads and stores on host pointers, so a kernel that
reads or writes past its tensors reads or corrupts the test process's own memory (FlagGems
5.0.2's argmin over the last dim writes past its output and aborted the process).  Here each
launch records the storages it was given; a load lane outside all of them is never
dereferenced - it reads the emulated heap (a deterministic pattern, or what ``poison`` last
wrote there: "whatever the allocator handed out last") and is counted; a store lane outside
is dropped, counted, and raises ``EmulatedDeviceFault`` naming the kernel: an out-of-bounds
write is a defect on any device, and this is the one place it is seen for certain.

Injected defects (``INJECTABLE``) change what a load or ``tl.where`` sees before that guard:

- ``masked_2d_row_load`` (the seed's standalone table: 28 for 6 on a BI-V150): where a 2-D mask combines a row
  and a column condition, the row half is lost.  The builder only sees the final boolean
  array, so a 2-D mask (or ``tl.where`` condition) that is *separable* - equal to
  ``rows_any[:, None] & cols_any[None, :]`` with the valid rows a prefix, as an index bound
  ``n < N`` makes them - is replaced by ``cols_any`` broadcast over all rows.  That covers
  ``tl.load(mask=(n < N) & (k < K))`` and ``tl.where(n < N, v, 0)``, both of which gave 28
  instead of 6 on the BI-V150.  Block-pointer loads (``tl.make_block_ptr`` with a
  ``boundary_check``) get the same treatment: Triton lowers their boundary check to exactly
  such a mask (``RewriteTensorPointer``), and the emulator cannot tell the two apart - that is
  a model, not a measurement.  Not modelled: masks of other ranks, non-separable masks (a
  flattened index), tiles with no valid row, data-dependent conditions that happen to be
  separable; stores are never touched.

Extra lanes of a defect read real memory only where the address lies inside a storage of
the launch (the next rows of the same allocation, as on the device); elsewhere the heap.
One patch per interpreter method, installed once by the emulator's activation.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Any

from . import assume

# The defects this emulator can inject (--fl-inject): the seed's, and the classes vendor lanes
# meet beyond masks (issue 30) - a kernel specialised on its first launch's scalars, a cold
# compile that is wrong once, masked lanes that do not take other=; and a store dropped after a
# branch holding tl.assume (issue 59: emulation/assume.py, the equivalent-kernel probes' class).
# And a masked store that lets one lane past its bound through (the guard bands' class).
INJECTABLE = (
    "masked_2d_row_load",
    "scalar_bound_at_first_launch",
    "cold_first_launch",
    "masked_load_other",
    "equivalent_kernels_differ",
    "store_past_tensor",
    "tuned_config_miscompiled",
)


class EmulatedDeviceFault(RuntimeError):
    """A kernel stored outside every tensor of its launch."""


@dataclass
class Counters:
    """What the device saw; tests and the terminal summary read these."""

    loads_seen: int = 0  # loads an injected defect looked at
    faulted_loads: int = 0  # ... and changed
    faulted_selects: int = 0
    extra_lanes: int = 0  # lanes a defect made a load read
    in_storage_lanes: int = 0  # ... inside a tensor of the launch (real memory)
    garbage_lanes: int = 0  # ... outside (the heap)
    oob_loads: int = 0  # lanes a kernel itself loaded from outside its tensors (its own bug)
    oob_stores: int = 0
    rebound_scalars: int = 0  # scalar arguments a launch got from its kernel's first launch
    cold_launches: int = 0  # first launches of a kernel that lost their last program
    undefined_lanes: int = 0  # masked load lanes that read the heap instead of other=
    native_fallbacks: int = 0  # FlagGems' hand-offs to torch for a tensor it does not serve (emulation.dispatch)
    host_checks_rewritten: int = 0  # FlagGems functions whose device tests now see the emulated device

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)


@dataclass
class Device:
    enabled: set[str] = field(default_factory=set)
    counters: Counters = field(default_factory=Counters)
    heap_fill: float | None = None  # None: the distance-keyed pattern
    storages: list[tuple[int, int]] = field(default_factory=list)  # (start, nbytes) of the launch's tensors
    bounded: bool = True  # every pointer of the launch is a tensor's: the guard applies
    kernel: str = "?"
    kernels: dict[str, int] = field(default_factory=dict)  # kernel -> lanes it touched out of bounds
    watch: list[tuple[int, int]] | None = None  # when a list: (lowest, highest) address of each load
    launches: list[tuple[str, dict[str, Any]]] | None = None  # when a list: (kernel, its constexpr values)
    injecting: bool = False  # a defect was enabled in this process: its counters are reported
    # tuned_config_miscompiled: the launch runs an autotuner's config other than its first
    off_first_config: bool = False
    first_scalars: dict[tuple[Any, ...], dict[str, int]] = field(
        default_factory=dict
    )  # kernel specialisation -> scalars
    compiled: set[tuple[Any, ...]] = field(default_factory=set)  # kernel specialisations launched once
    installed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


# Process-global on purpose: the hooks sit on Triton's interpreter classes, which every
# launch in the process shares; the lane session reads the counters from here.
DEVICE = Device()


def drop_col_condition(mask: Any) -> Any | None:
    """The column half of a separable 2-D mask lost instead (``tuned_config_miscompiled``): a
    kernel whose reduced axis is its columns then reduces the lanes past ``k < K`` into valid
    rows, whichever axis a config tiles.

    >>> import numpy as np
    >>> m = np.zeros((4, 8), bool); m[:2, :5] = True
    >>> drop_col_condition(m).astype(int).tolist()[0]
    [1, 1, 1, 1, 1, 1, 1, 1]
    """
    defective = drop_row_condition(mask.T) if getattr(mask, "ndim", 0) == 2 else None
    return None if defective is None else defective.T


def _injected_mask_defect() -> Any:
    """What the injected defects do to a 2-D mask in this launch: ``masked_2d_row_load`` drops its
    row half, a miscompiled tuning config (``tuned_config_miscompiled``) its column half; None:
    the mask stands."""
    if "masked_2d_row_load" in DEVICE.enabled:
        return drop_row_condition
    return drop_col_condition if DEVICE.off_first_config else None


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


def one_lane_past(mask: Any) -> Any | None:
    """The defective store mask ``store_past_tensor`` gives: along the last axis, where the
    stored lanes are a proper prefix (a bound ``offs < N``), the first lane past it is stored too
    (``offs <= N``); None where no row has such a prefix.

    >>> import numpy as np
    >>> one_lane_past(np.array([True, True, False, False])).tolist()
    [True, True, True, False]
    """
    import numpy as np

    if mask.ndim == 0:
        return None
    rows = mask.reshape(-1, mask.shape[-1])
    count = rows.sum(axis=1)
    lanes = np.arange(rows.shape[1])
    prefix = (rows == (lanes[None, :] < count[:, None])).all(axis=1) & (count > 0) & (count < rows.shape[1])
    if not prefix.any():
        return None
    grown = rows.copy()
    grown[prefix, count[prefix]] = True
    return grown.reshape(mask.shape)


def _relative(addresses: Any) -> Any:
    """Each address as its distance from the start of the nearest storage of the launch at or
    below it (from the lowest one where none is below), as uint64."""
    import numpy as np

    addr = addresses.astype(np.int64)
    if not DEVICE.storages:
        return (addr & 0xFFFFF).astype(np.uint64)
    starts = np.array(sorted(start for start, _ in DEVICE.storages), dtype=np.int64)
    below = np.clip(np.searchsorted(starts, addr, side="right") - 1, 0, len(starts) - 1)
    return np.abs(addr - starts[below]).astype(np.uint64)


def garbage(addresses: Any, np_dtype: Any, bfloat16: bool = False) -> Any:
    """Emulated heap contents at ``addresses``: deterministic, never read from memory.

    A fixed pseudo-random pattern in [1024, 5119] (large enough to be seen in a sum), keyed on
    the distance from the launch's nearest tensor below, not on the address itself, so the
    same call reads the same garbage in every run (allocation addresses move between runs;
    an expected-fail lane's counts must not).  The interpreter stores bfloat16 as uint16 bit
    patterns: garbage for it is made as float32 and truncated to its upper half, so a row
    read past the end adds the same magnitude as in fp32."""
    import numpy as np

    if DEVICE.heap_fill is not None:
        values = np.full(addresses.shape, DEVICE.heap_fill, dtype=np.float64)
    else:
        values = 1024.0 + ((_relative(addresses) * np.uint64(2654435761)) % np.uint64(4096))
    if bfloat16:
        return (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    if np.issubdtype(np_dtype, np.floating):
        return values.astype(np_dtype)
    if np_dtype == np.bool_:
        return np.ones(addresses.shape, dtype=np.bool_)
    return np.nan_to_num(values, nan=0x5A5A).astype(np_dtype)


def _inside(addresses: Any, itemsize: int) -> Any:
    """Lanes whose ``itemsize`` bytes lie in one storage of the launch.  Signed: an offset
    below a tensor's start (mm's K tail for K = 0 starts at -BLOCK_K) is a negative address,
    which unsigned arithmetic wrapped onto an empty tensor's null pointer."""
    import numpy as np

    addr = addresses.astype(np.int64)
    inside = np.zeros(addresses.shape, dtype=bool)
    for start, nbytes in DEVICE.storages:
        if nbytes:
            inside |= (addr >= start) & (addr <= start + nbytes - itemsize)
    return inside


def outside(addresses: Any, active: Any, itemsize: int) -> Any:
    """Active lanes outside every storage of the launch (none where the launch passed a
    pointer that is not a tensor's: nothing to bound it by)."""
    import numpy as np

    if not DEVICE.bounded or not active.any():
        return np.zeros(addresses.shape, dtype=bool)
    live = addresses[active].astype(np.int64)
    lo, hi = int(live.min()), int(live.max()) + itemsize
    if any(nbytes and start <= lo and hi <= start + nbytes for start, nbytes in DEVICE.storages):
        return np.zeros(addresses.shape, dtype=bool)  # the common case: one storage holds every lane
    return active & ~_inside(addresses, itemsize)


def _mask_of(mask: Any) -> Any:
    """A load's or store's mask as a numpy array: a TensorHandle's data, or the raw array a
    block-pointer access passes (``materialize_pointers``; its ``.data`` is a memoryview)."""
    import numpy as np

    return mask if isinstance(mask, np.ndarray) else np.asarray(mask.data)


def _rebind(
    executor: Any, key: tuple[Any, ...], bound: dict[str, Any], args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """A kernel specialised on its first launch: every int scalar argument of a later launch
    of the same specialisation (the same constexprs) takes the first launch's value (FlagGems
    #4099: var_mean on Iluvatar kept the first N it saw)."""
    scalars = {k: v for k, v in bound.items() if type(v) is int and k not in executor.constexprs}
    first = DEVICE.first_scalars.setdefault(key, dict(scalars))
    names = list(executor.arg_names)
    args = list(args)
    for name, value in first.items():
        if scalars.get(name, value) == value:
            continue
        DEVICE.counters.rebound_scalars += 1
        if name in kwargs:
            kwargs[name] = value
        elif name in names and names.index(name) < len(args):
            args[names.index(name)] = value
    return args, kwargs


def _one_program_short(grid: Any) -> Any:
    """A cold compile that is wrong once: the launch runs one program fewer (the first axis
    loses its last program; a one-program launch runs none)."""

    def shorter(meta: Any) -> tuple[int, ...]:
        g = tuple(grid(meta) if callable(grid) else grid) + (1, 1)
        return (max(g[0] - 1, 0), *g[1:3])

    return shorter


def _note(lanes: int) -> None:
    DEVICE.kernels[DEVICE.kernel] = DEVICE.kernels.get(DEVICE.kernel, 0) + lanes


def install() -> None:
    """Hook the interpreter's loads, stores, selects and launches once; defects do nothing
    until enabled, the memory guard applies at once."""
    if DEVICE.installed:
        return
    from triton.runtime import interpreter as ti

    builder = ti.InterpreterBuilder
    original_load, original_store = builder.create_masked_load, builder.create_masked_store
    original_select = builder.create_select
    original_rmw, original_cas = builder.create_atomic_rmw, builder.create_atomic_cas
    original_init_args = ti.GridExecutor._init_args_hst

    def create_masked_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        dtype_tt = ptrs.get_element_ty()
        dtype_np = ti._get_np_dtype(dtype_tt)
        wanted = _mask_of(mask)
        if DEVICE.watch is not None and wanted.any():  # tests read the offsets a kernel computed
            live = ptrs.data[wanted].astype("int64")
            DEVICE.watch.append((int(live.min()), int(live.max())))
        effective, extra = wanted, None
        dropped = _injected_mask_defect()
        if dropped is not None:
            DEVICE.counters.loads_seen += 1
            defective = dropped(wanted)
            if defective is not None:
                effective, extra = defective, defective & ~wanted
        inside = _inside(ptrs.data, dtype_np.itemsize) if extra is not None else None
        bad = outside(ptrs.data, wanted, dtype_np.itemsize)  # the kernel's own lanes out of bounds
        if extra is not None:
            bad = bad | (extra & ~inside)  # a defect's extra lanes never leave the launch's tensors
        undefined = "masked_load_other" in DEVICE.enabled
        if extra is None and not bad.any() and not undefined:
            return original_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
        readable = ti.TensorHandle(effective & ~bad, ti.tl.int1)
        handle = original_load(self, ptrs, readable, other, cache_modifier, eviction_policy, is_volatile)
        if bad.any():
            handle.data[bad] = garbage(ptrs.data[bad], dtype_np, dtype_tt == ti.tl.bfloat16)
        if undefined:  # Intel's Triton leaves other= undefined: masked lanes hold whatever the heap held
            masked = ~(effective & ~bad) & ~bad
            if masked.any():
                handle.data[masked] = garbage(ptrs.data[masked] + 1, dtype_np, dtype_tt == ti.tl.bfloat16)
                DEVICE.counters.undefined_lanes += int(masked.sum())
        own = bad & wanted
        if own.any():
            DEVICE.counters.oob_loads += int(own.sum())
            _note(int(own.sum()))
        if extra is not None:
            counters = DEVICE.counters
            counters.faulted_loads += 1
            counters.extra_lanes += int(extra.sum())
            counters.in_storage_lanes += int((extra & inside).sum())
            counters.garbage_lanes += int((extra & ~inside).sum())
        return handle

    def create_masked_store(self, ptrs, value, mask, cache_modifier, eviction_policy):
        wanted = _mask_of(mask)
        if "store_past_tensor" in DEVICE.enabled:
            grown = one_lane_past(wanted)
            wanted = wanted if grown is None else grown
        itemsize = ti._get_np_dtype(ptrs.get_element_ty()).itemsize
        bad = outside(ptrs.data, wanted, itemsize)
        if not bad.any():
            return original_store(
                self, ptrs, value, ti.TensorHandle(wanted, ti.tl.int1), cache_modifier, eviction_policy
            )
        original_store(self, ptrs, value, ti.TensorHandle(wanted & ~bad, ti.tl.int1), cache_modifier, eviction_policy)
        DEVICE.counters.oob_stores += int(bad.sum())
        _note(int(bad.sum()))
        raise EmulatedDeviceFault(
            f"{DEVICE.kernel} stored {int(bad.sum())} element(s) outside every tensor of its launch "
            "(an out-of-bounds write: on a GPU it corrupts whatever memory lies there)"
        )

    def _fault(lanes: int, what: str) -> EmulatedDeviceFault:
        DEVICE.counters.oob_stores += lanes
        _note(lanes)
        return EmulatedDeviceFault(
            f"{DEVICE.kernel} {what} {lanes} element(s) outside every tensor of its launch "
            "(an out-of-bounds write: on a GPU it corrupts whatever memory lies there)"
        )

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        """An atomic is a store too: unguarded, FlagGems' scatter(reduce="add") on a strided
        input added into host memory past its output, and the process died later in torch
        ("double free or corruption") with nothing naming the kernel."""
        wanted = _mask_of(mask)
        bad = outside(ptr.data, wanted, ti._get_np_dtype(ptr.get_element_ty()).itemsize)
        if not bad.any():
            return original_rmw(self, rmwOp, ptr, val, mask, sem, scope)
        original_rmw(self, rmwOp, ptr, val, ti.TensorHandle(wanted & ~bad, ti.tl.int1), sem, scope)
        raise _fault(int(bad.sum()), "atomically updated")

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        import numpy as np

        lanes = np.ones(np.shape(ptr.data), dtype=bool)  # no mask: every lane swaps
        bad = outside(ptr.data, lanes, ti._get_np_dtype(ptr.get_element_ty()).itemsize)
        if bad.any():  # the interpreter's compare-and-swap takes no mask: nothing is written
            raise _fault(int(bad.sum()), "compare-and-swapped")
        return original_cas(self, ptr, cmp, val, sem, scope)

    def create_select(self, cond, lhs, rhs):
        dropped = _injected_mask_defect()
        if dropped is not None:
            defective = dropped(cond.data)
            if defective is not None:
                DEVICE.counters.faulted_selects += 1
                cond = ti.TensorHandle(defective, cond.dtype)
        return original_select(self, cond, lhs, rhs)

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = original_init_args(self, args_dev, kwargs)
        storages: list[tuple[int, int]] = []
        bounded = True
        for arg in [*args_hst, *kwargs_hst.values()]:
            # a tensor descriptor (TMA: FlagGems 5.4's _grouped_mm) bounds its base tensor's
            # loads and stores; left out, every lane of its block loads read as outside
            arg = arg.base if hasattr(getattr(arg, "base", None), "untyped_storage") else arg
            if hasattr(arg, "untyped_storage"):
                storage = arg.untyped_storage()
                storages.append((storage.data_ptr(), storage.nbytes()))
            elif hasattr(arg, "data_ptr"):
                bounded = False  # a pointer we cannot bound: no guard for this launch's own lanes
        DEVICE.storages, DEVICE.bounded = storages, bounded
        DEVICE.kernel = getattr(getattr(self, "fn", None), "__name__", "?")
        specialising = {"scalar_bound_at_first_launch", "cold_first_launch"} & DEVICE.enabled
        if DEVICE.launches is not None or specialising:
            import inspect

            bound = inspect.getcallargs(self.fn, *args_hst, **kwargs_hst)
            constexprs = {k: bound[k] for k in self.constexprs if k in bound}
            if DEVICE.launches is not None:  # tests read which kernel ran, with which switches
                DEVICE.launches.append((DEVICE.kernel, constexprs))
            key = (DEVICE.kernel, tuple(sorted((k, repr(v)) for k, v in constexprs.items())))
            if "scalar_bound_at_first_launch" in DEVICE.enabled:
                args_hst, kwargs_hst = _rebind(self, key, bound, args_hst, kwargs_hst)
            if "cold_first_launch" in DEVICE.enabled and key not in DEVICE.compiled:
                DEVICE.compiled.add(key)
                self.grid = _one_program_short(self.grid)
                DEVICE.counters.cold_launches += 1
        return args_hst, kwargs_hst

    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    builder.create_select = create_select
    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas
    ti.GridExecutor._init_args_hst = init_args_hst
    DEVICE.installed = True


def enable(*names: str) -> None:
    unknown = [n for n in names if n not in INJECTABLE]
    if unknown:
        raise ValueError(f"unknown defect {unknown[0]!r}; the emulator injects: {', '.join(INJECTABLE)}")
    install()
    DEVICE.enabled.update(names)
    DEVICE.injecting = DEVICE.injecting or bool(names)
    if assume.DEFECT in names:  # a source-level defect: the interpreter's rewriter applies it
        assume.install(lambda: DEVICE.enabled)
    if "tuned_config_miscompiled" in names:
        _watch_tuned_configs()


def _watch_tuned_configs() -> None:
    """``tuned_config_miscompiled`` (FlagGems #6420: with an empty tuning database the config
    a kernel's tuner chose gave wrong results): a launch under any config of an autotuner's
    space but its first is miscompiled: a separable 2-D mask loses its column half (the
    seed's defect on the other axis, ``drop_col_condition``).  The emulator's tuner always
    picks the first config, so a lane sees it only where a contract runs the others
    (``hardware.autotune.config_forced``), as a device's tuner would."""
    from triton.runtime import autotuner

    cls = autotuner.Autotuner
    if "__fl_config_watch__" in vars(cls):
        return
    run = cls.run

    def chosen(self: Any) -> Any:
        return self.__dict__.get("_fl_best_config")

    def choose(self: Any, config: Any) -> None:
        self.__dict__["_fl_best_config"] = config
        first = self.configs[0] if getattr(self, "configs", None) else None
        off = config is not None and first is not None and config.all_kwargs() != first.all_kwargs()
        DEVICE.off_first_config = "tuned_config_miscompiled" in DEVICE.enabled and off

    def watched_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return run(self, *args, **kwargs)
        finally:
            DEVICE.off_first_config = False

    cls.__fl_config_watch__ = run
    cls.best_config = property(chosen, choose)
    cls.run = watched_run


def disable(*names: str) -> None:
    was = set(DEVICE.enabled)
    DEVICE.enabled.difference_update(names or tuple(DEVICE.enabled))
    if assume.DEFECT in was - DEVICE.enabled:
        assume.install(lambda: DEVICE.enabled)  # kernels rewritten with the defect are rewritten again


def poison(fill: float | None) -> None:
    """Model an allocate-fill-free on the device: lanes read off the tensors now read ``fill``
    (None: the default pattern again)."""
    DEVICE.heap_fill = fill


def out_of_bounds_lanes(kernels: Any) -> dict[str, int]:
    """Lanes each of ``kernels`` (names) has loaded from outside its launch's tensors in this
    process: its own bug, whether or not a store ever used them (on hardware such a read
    can fault)."""
    return {name: DEVICE.kernels.get(name, 0) for name in kernels}


def counters() -> dict[str, int]:
    """What the defects did (while one is enabled) and what kernels did out of bounds."""
    seen = DEVICE.counters.as_dict()
    own = {k: seen.pop(k) for k in ("oob_loads", "oob_stores")}
    return {**(seen if DEVICE.injecting else {}), **{k: v for k, v in own.items() if v}}
