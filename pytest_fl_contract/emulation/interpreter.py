"""Make FlagGems' real kernels run under Triton's interpreter on CPU tensors.

Every patch here says why, is applied once, and is written for the versions in
``TESTED``: on anything else ``check_versions`` refuses with one line rather than
patching blindly.  The interpreter's own patches (``activate_interpreter``: no FlagGems) are
checked on the wider ``INTERPRETER_TRITON`` too, for the probes' interpreter oracle on a
vendor lane's Triton.  Nothing here imports torch, triton or flag_gems at module import.
"""

from __future__ import annotations

import ast
import os
import sys
import warnings
from importlib import metadata
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

from ..imports import after_import
from ..util import EMULATOR_ENV, FlContractError, installed_version
from . import device, dispatch, globals_rule
from .profiles import DeviceProfile

TESTED: dict[str, tuple[str, ...]] = {
    "triton": ("3.7.1",),
    "flag_gems": ("5.0.2", "5.4.0.dev0"),
}
# The Tritons the interpreter's own patches (``activate_interpreter``) were checked on.  Wider
# than ``TESTED``: the probes' interpreter oracle runs them with no FlagGems on a vendor lane's
# own Triton, which is never replaced (3.6.0: torch 2.11's on an H100; every battery probe
# replays to the same bits there as on 3.7.1, tests/test_probe_oracle_versions.py).
INTERPRETER_TRITON: tuple[str, ...] = ("3.6.0", "3.7.1")


class UnsupportedTriton(FlContractError):
    """The installed Triton is not one the interpreter's patches were checked on: a caller
    that can do without the interpreter (the probes' oracle) reports it as a skip."""


def check_versions() -> dict[str, str]:
    """Return the versions found, or refuse in one line naming found and supported."""
    found = {dist: installed_version(dist) for dist in TESTED}
    bad = {d: v for d, v in found.items() if v not in TESTED[d]}
    if bad:
        have = ", ".join(f"{d} {v or 'not installed'}" for d, v in found.items())
        want = ", ".join(f"{d} {'/'.join(v)}" for d, v in TESTED.items())
        raise FlContractError(f"the CPU emulator supports {want}; found {have} (install the [cpu] extra)")
    return found  # type: ignore[return-value]


def check_interpreter_triton(found: str | None) -> str:
    """``found`` (the installed triton's version), or refuse in one line naming it and the
    supported ones: the patches replace the interpreter's internals by name, and on a Triton
    they were not checked on they would patch blindly."""
    if found not in INTERPRETER_TRITON:
        raise UnsupportedTriton(
            f"the Triton interpreter patches support triton {'/'.join(INTERPRETER_TRITON)}; "
            f"found triton {found or 'not installed'}"
        )
    return found


# -- torch.cuda stand-in ------------------------------------------------------------


class _NoDevice:
    """``torch.cuda.device(t.device)`` raises for a CPU device; kernels only need a context."""

    def __init__(self, device: Any = None) -> None:
        self.device = device

    __enter__ = lambda self: self  # noqa: E731
    __exit__ = lambda self, *exc: False  # noqa: E731


class PhiloxGenerator:
    """The emulated device's default generator as FlagGems' random ops read it: a CUDA
    generator's state is its Philox seed and offset, two int64 (``philox_backend_seed_offset``
    takes them, advances the offset and sets the state back).  ``torch.manual_seed`` seeds it
    (through ``torch.cuda.manual_seed_all``), so a seeded call draws the same bits again."""

    def __init__(self, seed: int = 67280421310721) -> None:
        self.seed, self.offset = seed, 0

    def get_state(self) -> Any:
        import torch

        return torch.tensor([self.seed, self.offset], dtype=torch.int64).view(torch.uint8)

    def set_state(self, state: Any) -> None:
        import torch

        self.seed, self.offset = (int(v) for v in state.view(torch.int64)[-2:])

    def manual_seed(self, seed: int) -> PhiloxGenerator:
        self.seed, self.offset = int(seed) & 0xFFFF_FFFF_FFFF_FFFF, 0
        return self

    def initial_seed(self) -> int:
        return self.seed


def _cuda_shim(profile: DeviceProfile) -> dict[str, Any]:
    """The attributes of ``torch.cuda`` that FlagGems' heuristics and entry points read.

    ``is_available`` stays False: torch itself must keep treating the process as CPU-only.
    """
    props = SimpleNamespace(
        name=profile.device_name,
        multi_processor_count=profile.sm_count,
        major=profile.capability[0],
        minor=profile.capability[1],
        L2_cache_size=profile.l2_cache_bytes,
        total_memory=profile.total_memory,
    )
    generator = PhiloxGenerator()
    return {
        "default_generators": (generator,),
        "manual_seed": lambda seed: generator.manual_seed(seed) and None,
        "manual_seed_all": lambda seed: generator.manual_seed(seed) and None,
        "get_device_properties": lambda device=None: props,
        "get_device_name": lambda device=None: profile.device_name,
        "get_device_capability": lambda device=None: profile.capability,
        "current_device": lambda: 0,
        "device_count": lambda: 1,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "device": _NoDevice,
    }


# -- the interpreter's `and` / `or` ---------------------------------------------------


def _is_tensor(value: Any) -> bool:
    import triton.language as tl

    return isinstance(value, tl.core.tensor)


def logical_and(a: Any, b_thunk: Callable[[], Any]) -> Any:
    """The compiler's ``visit_BoolOp`` for ``and``: constexprs short-circuit, tensors AND."""
    if not _is_tensor(a):
        return b_thunk() if a else a
    b = b_thunk()
    if not _is_tensor(b):
        return a if b else b
    return a.logical_and(b)


def logical_or(a: Any, b_thunk: Callable[[], Any]) -> Any:
    if not _is_tensor(a):
        return a if a else b_thunk()
    b = b_thunk()
    if not _is_tensor(b):
        return b if b else a
    return a.logical_or(b)


def logical_not(a: Any) -> Any:
    """The compiler's ``visit_UnaryOp`` for ``not``: a tensor's ``__not__`` (elementwise),
    anything else Python's ``not``."""
    return a.__not__() if _is_tensor(a) else not a


_BOOL_HELPERS = {ast.And: "__fl_logical_and__", ast.Or: "__fl_logical_or__"}


def honest_bool_ops(base: type) -> type:
    """Subclass the interpreter's AST transformer so ``a and b`` means what it compiles to.

    Python's ``and`` on two tensors returns one of them (triton 3.7.1's interpreter
    does not rewrite it), so ``row_mask and col_mask`` silently becomes ``col_mask``:
    the very row-drop we hunt.  The compiler lowers it to ``logical_and``.  Likewise
    ``not t`` is a truth test there (False for any tensor of more than one element: the NaN
    branch of FlagGems' ``maximum_with_index_tie_break_right``, ``a_isnan and not
    b_isnan``, never held), where the compiler negates each element.
    """

    class HonestBoolOps(base):  # type: ignore[misc, valid-type]
        def visit_Assign(self, node: ast.Assign) -> ast.AST:
            node.value = self.visit(node.value)
            return super().visit_Assign(node)

        def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
            self.generic_visit(node)
            helper = _BOOL_HELPERS[type(node.op)]
            no_args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
            expr = node.values[0]
            for value in node.values[1:]:
                expr = ast.Call(
                    func=ast.Name(id=helper, ctx=ast.Load()),
                    args=[expr, ast.Lambda(args=no_args, body=value)],
                    keywords=[],
                )
            return ast.copy_location(expr, node)

        def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
            self.generic_visit(node)
            if not isinstance(node.op, ast.Not):
                return node
            call = ast.Call(func=ast.Name(id="__fl_logical_not__", ctx=ast.Load()), args=[node.operand], keywords=[])
            return ast.copy_location(call, node)

    return HonestBoolOps


# -- FlagGems' libentry / libtuner ---------------------------------------------------


def _patch_libentry(module: ModuleType) -> None:
    """``LibEntry`` walks ``fn.fn`` to a JITFunction and caches compiled kernels per device;
    ``libtuner`` hashes the JITFunction and benchmarks through the driver.  Under the
    interpreter there is no JITFunction and no driver: entries forward to the wrapped
    function, tuners become plain ``triton.autotune`` (whose benchmark we make
    deterministic below)."""
    import triton

    class InterpretedLibEntry(triton.KernelInterface):
        def __init__(self, fn: Any) -> None:
            self.fn = fn
            self.arg_names = fn.arg_names

        def run(self, *args: Any, **kwargs: Any) -> Any:
            return self.fn.run(*args, **kwargs)

    def libtuner(
        configs,
        key,
        prune_configs_by=None,
        reset_to_zero=None,
        restore_value=None,
        pre_hook=None,
        post_hook=None,
        warmup=25,
        rep=100,
        use_cuda_graph=False,
        do_bench=None,
        strategy="default",
        policy="default",
        **flagtune: Any,
    ):  # 5.4's flagtune_* (its tuning database): nothing to tune here
        return triton.autotune(
            configs=configs,
            key=key,
            prune_configs_by=prune_configs_by,
            reset_to_zero=reset_to_zero,
            restore_value=restore_value,
            pre_hook=pre_hook,
            post_hook=post_hook,
        )

    module.LibEntry = InterpretedLibEntry  # type: ignore[attr-defined]
    module.libentry = lambda: InterpretedLibEntry  # type: ignore[attr-defined]
    module.libtuner = libtuner  # type: ignore[attr-defined]


def _patch_pointwise_dynamic(module: ModuleType) -> None:
    """Pointwise codegen asserts a JITFunction and reads ``cache_key``, ``src`` and
    ``__globals__`` from it; an InterpretedFunction carries the same source."""
    from triton.runtime.interpreter import InterpretedFunction

    module.JITFunction = InterpretedFunction  # type: ignore[attr-defined]


def _patch_limits(module: ModuleType) -> None:
    """``get_dtype_min/max`` read ``dtype.value`` (a constexpr in compiled code); the
    interpreter passes the bare ``tl.dtype``.  Same values, either form accepted."""

    def _dtype(dtype: Any) -> Any:
        return getattr(dtype, "value", dtype)

    def get_dtype_max(dtype: Any) -> float | int:
        d = _dtype(dtype)
        if d.is_floating():
            return float("inf")
        if d.is_int_signed():
            return 2 ** (d.int_bitwidth - 1) - 1
        return 2**d.int_bitwidth - 1

    def get_dtype_min(dtype: Any) -> float | int:
        d = _dtype(dtype)
        if d.is_floating():
            return float("-inf")
        if d.is_int_signed():
            return -(2 ** (d.int_bitwidth - 1))
        return 0

    for fn in (get_dtype_max, get_dtype_min):  # FlagGems' own are jitted: the compiler reads them
        setattr(fn, globals_rule.ALLOWED, True)
        setattr(module, fn.__name__, fn)


def _patch_runtime(module: ModuleType) -> None:
    """The emulated device is the CPU: ops register under the CPU dispatch key, so
    ``torch.sum(cpu_tensor)`` inside ``use_gems()`` reaches FlagGems' kernels, and the
    device name is "cpu", so ``flag_gems.device`` (what FlagGems-style suites allocate on)
    is where the emulated kernels run.  The vendor (heuristics, tiles) stays the platform's."""
    module.device.dispatch_key = "CPU"
    module.device.name = "cpu"


def _alias_vendor_libdevice(vendor: str) -> None:
    """FlagGems 5.4 takes an Iluvatar lane's math library from ``triton.language.extra.corex``
    (CoreX's Triton) when triton >= 3.6; the emulated compiler is upstream Triton, whose
    interpreter runs the CUDA libdevice's functions on the host: the same names serve."""
    if vendor != "iluvatar":
        return
    import importlib

    try:
        importlib.import_module("triton.language.extra.corex.libdevice")
    except ImportError:
        cuda = importlib.import_module("triton.language.extra.cuda")
        libdevice = importlib.import_module("triton.language.extra.cuda.libdevice")
        sys.modules["triton.language.extra.corex"] = cuda
        sys.modules["triton.language.extra.corex.libdevice"] = libdevice


def _stub_missing_modules(dist_version: str) -> None:
    """flag_gems 5.4.0.dev0 (built from its tag) imports ``flag_gems.fused.DSA.bin_topk``
    that its wheel does not ship (the directory has no package marker), so ``import
    flag_gems`` fails on any machine.  Where the installed files lack it, a stub stands in
    that raises when called: the reductions under contract never use it."""
    if dist_version != "5.4.0.dev0":
        return
    files = metadata.files("flag_gems") or []
    if any(str(f).replace("\\", "/") == "flag_gems/fused/DSA/bin_topk.py" for f in files):
        return

    def bucket_sort_topk(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("flag_gems 5.4.0.dev0's wheel lacks fused/DSA (stubbed by the CPU emulator)")

    package = ModuleType("flag_gems.fused.DSA")
    package.__path__ = []  # type: ignore[attr-defined]
    module = ModuleType("flag_gems.fused.DSA.bin_topk")
    module.bucket_sort_topk = bucket_sort_topk  # type: ignore[attr-defined]
    sys.modules.setdefault(package.__name__, package)
    sys.modules.setdefault(module.__name__, module)


def _interpreted_src(self: Any) -> str:
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(self.fn))
    return src[src.index("def ") :]


def _interpreted_cache_key(self: Any) -> str:
    import hashlib

    return hashlib.sha256(self.src.encode()).hexdigest()


def _deterministic_bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
    """No driver, nothing to time: the first config (after pruning) always wins."""
    return [float(self.configs.index(config))] * 3


class _Unpatched:
    """The scope of a device call inside a launch that patched its modules already."""

    def restore(self) -> None:
        pass


def _lang_visible(interpreter: Any) -> None:
    """Two things about ``_patch_lang``, which the interpreter runs at every launch and at
    every call of a jitted device function (``tl.sum``, a combine function, a FlagGems helper):

    - it asserts ``triton.language`` is in the function's globals; a kernel that uses no
      ``tl`` name (FlagGems' ``_copy_kernel``: ``return src``) compiles fine but fails that
      assert, so the module is made visible;
    - it walks every member of ``triton.language`` with ``inspect.getmembers`` each time (a
      fifth of a softmax lane's time); inside a launch that patched the same modules a
      device call has nothing left to patch, so it is skipped.  The launch's scope still
      restores everything when the launch ends."""
    import inspect

    import triton.language as tl

    patch_lang = interpreter._patch_lang
    launch: dict[str, Any] = {"langs": None}
    seen: dict[int, tuple[int, frozenset[int]]] = {}  # id(globals) -> (its size, the language modules in it)

    def languages(namespace: dict[str, Any]) -> frozenset[int]:
        size, langs = seen.get(id(namespace), (-1, frozenset()))
        if size != len(namespace):  # a module's globals: the same dict for good, grown on import
            langs = frozenset(id(v) for v in namespace.values() if inspect.ismodule(v) and v in (tl, tl.core))
            seen[id(namespace)] = (len(namespace), langs)
        return langs

    def patched(fn: Any) -> Any:
        fn.__globals__.setdefault("__fl_triton_language__", tl)
        langs = languages(fn.__globals__)
        active = launch["langs"]
        if isinstance(active, frozenset) and langs <= active:
            return _Unpatched()
        scope = patch_lang(fn)
        if active == "pending":
            launch["langs"] = langs
        elif isinstance(active, frozenset):  # tl.standard's helpers see tl.core, the kernel tl
            launch["langs"] = active | langs
        return scope

    executor = interpreter.GridExecutor
    call = executor.__call__

    def launched(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = launch["langs"]
        launch["langs"] = "pending"
        try:
            return call(self, *args, **kwargs)
        finally:
            launch["langs"] = outer

    interpreter._patch_lang = patched
    executor.__call__ = launched


# -- NaN as compiled Triton has it ----------------------------------------------------


def _argext_dropping_nan(arg: Callable[..., Any], fill: float) -> Callable[..., Any]:
    """``tl.argmax``/``tl.argmin`` (and ``tl.max/min(..., return_indices=True)``) compile to
    a tree of ``_argmax_combine``: ``v1 > v2`` is false for a NaN, so a NaN survives only
    where it happens to sit on the right of every pairing (seen on an H200: argmax of a
    slice holding NaN points at the largest number).  The interpreter's numpy argmax makes
    NaN win, as torch does, and so hid that from every CPU lane.  NaN loses here, unless the
    whole slice is NaN."""
    import numpy as np

    def reduce(data: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if data.dtype.kind != "f":
            return arg(data, axis=axis, keepdims=keepdims)
        return arg(np.where(np.isnan(data), fill, data), axis=axis, keepdims=keepdims)

    return reduce


def _value_dropping_nan(ext: Callable[..., Any]) -> Callable[..., Any]:
    import numpy as np

    def reduce(data: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if data.dtype.kind != "f":
            return ext(data, axis=axis, keepdims=keepdims)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice: NaN, as on hardware
            return {np.max: np.nanmax, np.min: np.nanmin}[ext](data, axis=axis, keepdims=keepdims)

    return reduce


def compiled_nan_semantics(interpreter: Any) -> None:
    """Make the interpreter treat NaN as compiled Triton does.  ``tl.maximum``/``tl.minimum``
    with the default ``propagate_nan=NONE`` lower to ``maxnumf``/``minnumf`` (IEEE maxNum:
    the number wins over a NaN; PTX ``max.f32`` on NVIDIA); the interpreter computes them
    with ``np.maximum``, which propagates NaN.  FlagGems' std clamps ``tl.maximum(var, 0)``
    and its softmaxes keep an online ``tl.maximum`` of the row: on hardware a NaN vanishes
    there, on the bare interpreter it does not."""
    import numpy as np

    builder = interpreter.InterpreterBuilder
    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)
    reduce_ops = interpreter.ReduceOps
    original = reduce_ops.min_max
    ninf, pinf = float("-inf"), float("inf")
    by_op = {
        np.argmax: (_argext_dropping_nan(np.argmax, ninf), _value_dropping_nan(np.max)),
        np.argmin: (_argext_dropping_nan(np.argmin, pinf), _value_dropping_nan(np.min)),
    }

    def min_max(self: Any, input: Any, val_reduce_op: Any, idx_reduce_op: Any = None) -> Any:
        if idx_reduce_op in by_op:
            idx_reduce_op, val_reduce_op = by_op[idx_reduce_op]
        return original(self, input, val_reduce_op, idx_reduce_op)

    reduce_ops.min_max = min_max


# -- tl.reduce / tl.associative_scan with a user combine function ----------------------


def _along(data: Any, axis: int, part: slice) -> Any:
    return data[(slice(None),) * axis + (part,)]


def vectorised_reduce_scan(interpreter: Any) -> None:
    """The interpreter runs a user ``combine_fn`` (FlagGems' ``reduce_mul`` in prod, the
    Welford triple of var and var_mean, cummax's (value, index), all/any) once per element
    on one-element tensors: prod alone took half of the CPU lane's time there.  Here a
    reduce is a pairwise tree over the axis, as compiled Triton combines across threads, and
    a scan a Hillis-Steele ladder: log2(n) vectorised calls of the combine function (the
    rewritten one, so its ``and`` stays a logical and).  Both keep operand order (only
    associativity is assumed) and cast each step back to the input dtypes, as the
    per-element fallback does; a combine function that cannot run on whole tensors (one
    that branches on a value) still takes that fallback."""
    import numpy as np

    reduce_ops, scan_ops = interpreter.ReduceOps, interpreter.ScanOps
    per_element_reduce, per_element_scan = reduce_ops.generic_reduce, scan_ops.generic_scan

    tensor = interpreter.tl.core.tensor

    def strict_bool(value: Any) -> bool:
        data = value.handle.data
        if data.size != 1:  # the interpreter would say True: a branch on a value needs one element
            raise TypeError("a combine function branches on a tensor's value")
        return bool(data)

    def combine(self: Any, dtypes: list[Any], left: list[Any], right: list[Any]) -> list[Any]:
        args = [self.to_tensor(d, t) for d, t in zip(left + right, dtypes + dtypes)]
        interpreter._patch_lang(self.combine_fn.fn)  # what calling it does first (it resets __bool__)
        lenient = tensor.__bool__
        tensor.__bool__ = strict_bool
        try:
            ret = self.combine_fn.rewrite()(*args)
        finally:
            tensor.__bool__ = lenient
        ret = ret if isinstance(ret, tuple) else (ret,)
        out = []
        for value, like in zip(ret, left):
            data = value.handle.data if isinstance(value, interpreter.tl.core.tensor) else np.asarray(value)
            out.append(np.broadcast_to(data, like.shape).astype(like.dtype))
        return out

    def tree_reduce(self: Any, input: Any) -> Any:
        original_axis = self.axis
        flat, axis = self.unravel(input, self.axis)
        datas = [arg.handle.data for arg in flat]
        dtypes = [arg.dtype for arg in flat]
        shape = datas[0].shape
        if shape[axis] == 0 or not isinstance(self.combine_fn, interpreter.InterpretedFunction):
            return per_element_reduce(self, input)
        try:
            while datas[0].shape[axis] > 1:
                n = datas[0].shape[axis]
                even = slice(0, n - n % 2, 2)
                odd = slice(1, n - n % 2, 2)
                paired = combine(
                    self, dtypes, [_along(d, axis, even) for d in datas], [_along(d, axis, odd) for d in datas]
                )
                if n % 2:
                    paired = [
                        np.concatenate([p, _along(d, axis, slice(n - 1, n))], axis=axis) for p, d in zip(paired, datas)
                    ]
                datas = paired
        except Exception:  # control flow on tensor values: the per-element path runs it
            return per_element_reduce(self, input)
        ret = []
        for data, dtype in zip(datas, dtypes):
            data = np.squeeze(data, axis=axis)
            if self.keep_dims:
                if original_axis is not None:
                    data = np.expand_dims(data, axis)
                else:
                    data = data.reshape((1,) * len(input[0].handle.data.shape))
            elif original_axis is None:
                data = data.item()
            ret.append(self.to_tensor(data, dtype))
        return ret

    def ladder_scan(self: Any, input: Any) -> Any:
        datas = [arg.handle.data for arg in input]
        dtypes = [arg.dtype for arg in input]
        axis = self.axis
        n = datas[0].shape[axis]
        if n == 0 or not isinstance(self.combine_fn, interpreter.InterpretedFunction):
            return per_element_scan(self, input)
        try:
            step = 1
            while step < n:
                # element i takes combine(i - step, i); the first ``step`` keep theirs.  The
                # combine runs over all n (a block shape must be a power of two, n - step is
                # not): the first ``step`` lanes pair with copies of themselves, then are dropped
                head = [_along(d, axis, slice(0, step)) for d in datas]
                shifted = [
                    np.concatenate([h, _along(d, axis, slice(0, n - step))], axis=axis) for h, d in zip(head, datas)
                ]
                with np.errstate(all="ignore"):
                    full = combine(self, dtypes, shifted, datas)
                datas = [np.concatenate([h, _along(f, axis, slice(step, n))], axis=axis) for h, f in zip(head, full)]
                step *= 2
        except Exception:
            return per_element_scan(self, input)
        return [self.to_tensor(np.ascontiguousarray(d), t) for d, t in zip(datas, dtypes)]

    reduce_ops.generic_reduce = tree_reduce
    scan_ops.generic_scan = ladder_scan


def cached_np_dtype(interpreter: Any) -> None:
    """``_get_np_dtype`` builds a dict of nineteen triton dtypes (each hashed in Python) on
    every call: 45,000 calls in one generated softmax case.  The mapping never changes."""
    original = interpreter._get_np_dtype
    cache: dict[Any, Any] = {}

    def get_np_dtype(tt_dtype: Any) -> Any:
        try:
            return cache[tt_dtype]
        except KeyError:
            found = cache[tt_dtype] = original(tt_dtype)
            return found
        except TypeError:  # unhashable: as the interpreter would
            return original(tt_dtype)

    interpreter._get_np_dtype = get_np_dtype


# -- what upstream's interpreter gets wrong or lacks, FlagGems' other families need ---


def comparison_masks(interpreter: Any) -> None:
    """A comparison's handle carries its left operand's dtype (``binary_op`` keeps
    ``lhs.dtype``): ``x != x`` on fp32 is a bool array labelled fp32, and a splat of it
    (``tl.broadcast_to`` of a 0-d comparison) casts it to 0.0 / 1.0 floats, which ``~`` then
    refuses (cummax / cummin's NaN handling: "ufunc 'bitwise_xor' not supported").  Compiled
    Triton gives comparisons i1; so do these, and a splat takes the dtype it is asked for."""
    import numpy as np

    builder = interpreter.InterpreterBuilder
    int1 = interpreter.tl.int1
    for name in [n for n in vars(builder) if n.startswith(("create_icmp", "create_fcmp"))]:
        original = getattr(builder, name)

        def compare(self: Any, lhs: Any, rhs: Any, _original: Any = original) -> Any:
            out = _original(self, lhs, rhs)
            return interpreter.TensorHandle(np.asarray(out.data, dtype=np.bool_), int1)

        setattr(builder, name, compare)
    splat = builder.create_splat

    def create_splat(self: Any, ret_ty: Any, arg: Any) -> Any:
        scalar = getattr(ret_ty, "scalar", None) or getattr(ret_ty, "element_ty", None)
        if scalar is None:
            return splat(self, ret_ty, arg)
        value = arg.data.reshape(-1)[0] if getattr(arg.data, "ndim", 0) else arg.data
        return interpreter.TensorHandle(np.full(ret_ty.shape, value, dtype=interpreter._get_np_dtype(scalar)), scalar)

    builder.create_splat = create_splat


# libdevice symbols (``__nv_powf``: prefix and fp32 suffix stripped) as numpy functions.
_LIBDEVICE: dict[str, Callable[..., Any]] = {}


def _libdevice_table() -> dict[str, Callable[..., Any]]:
    import math

    import numpy as np

    if _LIBDEVICE:
        return _LIBDEVICE
    erf = np.vectorize(math.erf, otypes=[np.float64])
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    tgamma = np.vectorize(lambda v: math.gamma(v) if v > 0 or v != math.floor(v) else math.nan, otypes=[np.float64])
    _LIBDEVICE.update(
        {
            "pow": np.power,
            "powi": np.power,
            "powif": np.power,
            "fabs": np.abs,
            "abs": np.abs,
            "llabs": np.abs,
            "sqrt": np.sqrt,
            "rsqrt": lambda x: 1.0 / np.sqrt(x),
            "exp": np.exp,
            "exp2": np.exp2,
            "expm1": np.expm1,
            "exp10": lambda x: np.power(10.0, x),
            "log": np.log,
            "log2": np.log2,
            "log10": np.log10,
            "log1p": np.log1p,
            "sin": np.sin,
            "cos": np.cos,
            "tan": np.tan,
            "asin": np.arcsin,
            "acos": np.arccos,
            "atan": np.arctan,
            "atan2": np.arctan2,
            "sinh": np.sinh,
            "cosh": np.cosh,
            "tanh": np.tanh,
            "asinh": np.arcsinh,
            "acosh": np.arccosh,
            "atanh": np.arctanh,
            "erf": erf,
            "erfc": erfc,
            "lgamma": lgamma,
            "tgamma": tgamma,
            "floor": np.floor,
            "ceil": np.ceil,
            "trunc": np.trunc,
            "round": np.round,
            "rint": np.rint,
            "nearbyint": np.rint,
            "fmod": np.fmod,
            "remainder": np.remainder,
            "fmin": np.fmin,
            "fmax": np.fmax,
            "min": np.minimum,
            "max": np.maximum,
            "umin": np.minimum,
            "umax": np.maximum,
            "llmin": np.minimum,
            "llmax": np.maximum,
            "hypot": np.hypot,
            "copysign": np.copysign,
            "cbrt": np.cbrt,
            "signbit": np.signbit,
            "isnan": np.isnan,
            "isinf": np.isinf,
            "isfinited": np.isfinite,
            "finitef": np.isfinite,
            "div_rn": np.divide,
            "fdiv_rn": np.divide,
            "fast_dividef": np.divide,
            "fast_expf": np.exp,
            "fast_logf": np.log,
            "fast_powf": np.power,
            "fast_tanhf": np.tanh,
            "fma": lambda a, b, c: a * b + c,
            "fma_rn": lambda a, b, c: a * b + c,
            "nextafter": np.nextafter,
            "ldexp": np.ldexp,
            **{f"{p}div_{mode}": _directed_division(mode) for p in ("", "f") for mode in ("rz", "rd", "ru")},
        }
    )
    return _LIBDEVICE


def _directed_division(mode: str) -> Callable[..., Any]:
    """``a / b`` rounded toward zero (rz), down (rd) or up (ru) in the operands' dtype: FlagGems'
    div(rounding_mode="trunc"/"floor") calls ``div_rz``.  The float64 quotient of two float32
    or narrower operands is rounded once more to the operand's precision; directed, it is the
    nearest value moved one step where nearest rounding went the wrong way (for 2p + 2 <= 53
    bits the double rounding cannot turn an inexact quotient into an exact one)."""
    import numpy as np

    toward = {"rz": 0.0, "rd": -np.inf, "ru": np.inf}[mode]

    def divide(a: Any, b: Any) -> Any:
        a, b = np.asarray(a), np.asarray(b)
        dtype = np.result_type(a, b)
        if dtype == np.float64 or not np.issubdtype(dtype, np.floating):
            return np.divide(a, b)
        exact = np.divide(a.astype(np.float64), b.astype(np.float64))
        near = exact.astype(dtype)
        back = near.astype(np.float64)
        wrong = {"rz": np.abs(back) > np.abs(exact), "rd": back > exact, "ru": back < exact}[mode]
        return np.where(wrong & np.isfinite(exact), np.nextafter(near, np.full_like(near, toward)), near)

    return divide


def _libdevice_fn(symbol: str) -> Callable[..., Any]:
    table = _libdevice_table()
    name = symbol
    for prefix in ("__nv_", "__ocml_", "__ocml_native_"):
        name = name.removeprefix(prefix)
    name = name.rsplit("_f", 1)[0] if name.endswith(("_f16", "_f32", "_f64")) else name
    for candidate in (name, name[:-1] if name.endswith("f") else None):
        if candidate and candidate in table:
            return table[candidate]
    raise NotImplementedError(
        f"libdevice {symbol} has no host implementation in the CPU emulator "
        "(pytest_fl_contract.emulation.interpreter._LIBDEVICE)"
    )


def host_libdevice(interpreter: Any) -> None:
    """libdevice calls (``tl_extra_shim.pow`` in vector_norm, ``rsqrt`` in group_norm and
    batch_norm, ``erf`` in gelu) are ``extern_elementwise``, which the interpreter refuses
    ("not supported in interpreter mode"), and they need a ``_semantic`` that only patched
    ``triton.language`` members get ("Did you forget to add @triton.jit ?").  Here each
    libdevice function is given the interpreter's semantic when called without one, and an
    extern call runs the numpy function of its symbol (an unknown symbol raises, naming
    it), computed as the symbol's own dtype."""
    import importlib

    import numpy as np

    tl = interpreter.tl
    semantic = interpreter.interpreter_semantic

    def create_extern_elementwise(
        self: Any, lib_name: str, lib_path: str, symbol: str, args: list[Any], ret_type: Any, is_pure: bool
    ) -> Any:
        scalar = getattr(ret_type, "scalar", ret_type)
        np_dtype = interpreter._get_np_dtype(scalar)
        datas = [a.data if hasattr(a, "data") else np.asarray(a) for a in args]
        with np.errstate(all="ignore"):
            out = _libdevice_fn(symbol)(*datas)
        return interpreter.TensorHandle(np.asarray(out).astype(np_dtype), scalar)

    interpreter.InterpreterBuilder.create_extern_elementwise = create_extern_elementwise
    for name in ("triton.language.extra.cuda.libdevice", "triton.language.extra.hip.libdevice"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for attr, fn in list(vars(module).items()):
            if not tl.core.is_builtin(fn):
                continue

            def given_semantic(*args: Any, _fn: Any = fn, _semantic: Any = None, **kwargs: Any) -> Any:
                return _fn(*args, _semantic=_semantic or semantic, **kwargs)

            given_semantic.__name__ = attr
            given_semantic.__wrapped__ = fn  # type: ignore[attr-defined]
            setattr(given_semantic, globals_rule.ALLOWED, True)  # a builtin to the compiler
            setattr(module, attr, given_semantic)


def bf16_arithmetic(interpreter: Any) -> None:
    """The interpreter keeps bfloat16 values as their uint16 bit patterns and does arithmetic
    on those: a kernel that computes in bfloat16 without converting first (batch norm's
    ``(1 - momentum) * running_mean`` on bfloat16 buffers) got integer arithmetic on bits,
    and a bfloat16 scalar constant had no ``get_bf16`` at all.  Compiled Triton computes
    bfloat16 in fp32 and rounds: so do these (binary, unary, fma, clamp; a comparison keeps
    its mask); ``tl.dot`` of bfloat16 tiles multiplies their values, not their bits (every
    bfloat16 matmul was off by 1e10)."""
    import numpy as np

    builder = interpreter.InterpreterBuilder
    bf16, fp32, uint16 = interpreter.tl.bfloat16, interpreter.tl.float32, np.dtype(np.uint16)
    binary, unary, ternary, fma = builder.binary_op, builder.unary_op, builder.ternary_op, builder.create_fma
    dot = builder.create_dot

    # a handle's data is bfloat16 bits exactly when its numpy dtype is uint16 and its triton
    # dtype is bf16: the cheap numpy test first (every binary op of every kernel passes here)
    def is_bf16(h: Any) -> bool:
        return h.data.dtype == uint16 and h.dtype.scalar.name == "bf16"

    def up(self: Any, h: Any) -> Any:
        return self.cast_impl(h, fp32) if is_bf16(h) else h

    def down(self: Any, h: Any) -> Any:
        return self.cast_impl(h, bf16) if h.dtype.scalar == fp32 else h

    def binary_op(self: Any, lhs: Any, rhs: Any, op: Any) -> Any:
        if not (is_bf16(lhs) or is_bf16(rhs)):
            return binary(self, lhs, rhs, op)
        out = binary(self, up(self, lhs), up(self, rhs), op)
        return out if out.data.dtype == bool else down(self, out)

    def unary_op(self: Any, arg: Any, op: Any) -> Any:
        if not is_bf16(arg):
            return unary(self, arg, op)
        return down(self, unary(self, up(self, arg), op))

    def ternary_op(self: Any, lhs: Any, rhs: Any, other: Any, op: Any) -> Any:
        if op is not interpreter.np.clip or not is_bf16(other):
            return ternary(self, lhs, rhs, other, op)
        return down(self, ternary(self, up(self, lhs), up(self, rhs), up(self, other), op))

    def create_fma(self: Any, x: Any, y: Any, z: Any) -> Any:
        if not is_bf16(z):
            return fma(self, x, y, z)
        return down(self, fma(self, up(self, x), up(self, y), up(self, z)))

    def get_bf16(self: Any, value: float) -> Any:
        return self.cast_impl(self.get_fp32(value), bf16)

    def create_dot(self: Any, a: Any, b: Any, d: Any, *args: Any) -> Any:
        if not (is_bf16(a) or is_bf16(b)):
            return dot(self, a, b, d, *args)
        return dot(self, up(self, a), up(self, b), d if not is_bf16(d) else up(self, d), *args)

    builder.binary_op, builder.unary_op, builder.ternary_op = binary_op, unary_op, ternary_op
    builder.create_fma, builder.get_bf16, builder.create_dot = create_fma, get_bf16, create_dot


def no_discarded_overflow_checks(interpreter: Any) -> None:
    """Every integer add, sub and mul goes through ``binary_op_sanitize_overflow_impl`` while
    ``options.sanitize_overflow`` is on (the interpreter's default, as compiled Triton's):
    int64 casts, two comparisons and a ``device_assert`` - which returns at once unless
    ``options.debug`` is on, so compiled code drops it all.  The interpreter computed it and
    threw it away: a third of a fast-path softmax's time.  Off, unless debug asks for asserts."""
    builder = interpreter.interpreter_builder
    if not builder.options.debug:
        from dataclasses import replace

        builder.options = replace(builder.options, sanitize_overflow=False)


def bool_scalar_arguments(interpreter: Any) -> None:
    """A bool scalar argument (``isclose_func``'s ``zero_tol``) is an ``i1`` to the compiler;
    the interpreter makes it an int32 array of type int1 and refuses it ("numpy data itemsize
    (32 bits) exceeds dtype primitive_bitwidth (1 bits)"): FlagGems' isclose, and with it
    ``torch.testing.assert_close`` under ``flag_gems.enable()``, could not run.  It gets a
    bool array."""
    import numpy as np
    import triton.language as tl

    original = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, bool):
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        return original(arg)

    interpreter._implicit_cvt = implicit_cvt


def float_scalar_arguments(interpreter: Any) -> None:
    """A float scalar argument is an ``fp32`` scalar to compiled Triton (``mangle_type(1.5)``
    is ``'fp32'``: the launcher rounds the double to a float and the kernel gets a tensor of
    type fp32); the interpreter converts only ints and passed a Python float through.  A
    kernel that uses its argument as the tensor it is (FlagGems' ``eq_func_scalar``:
    ``y.to(tl.float32)``; the scalar ``pow`` and ``ne`` kernels) failed ("'float' object has no
    attribute 'to'"), and one that computes with it promoted as a literal does (``x * alpha`` of
    a float16 ``x`` stayed float16, where compiled it is float32).  It gets the fp32 scalar the
    compiler sees.  Bools are not floats (``mangle_type(True)`` is ``'u1'``): they keep
    ``bool_scalar_arguments``' conversion, and constexpr parameters never reach here."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.jit import mangle_type

    original = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            ty = tl.str_to_ty(mangle_type(arg), None)
            with np.errstate(over="ignore"):  # past fp32's range: inf, as the launcher's cast
                data = np.array([arg], dtype=interpreter._get_np_dtype(ty))
            return tl.tensor(interpreter.TensorHandle(data, ty), ty)
        return original(arg)

    interpreter._implicit_cvt = implicit_cvt


SPIN_LIMIT = 1_000_000  # compare-and-swaps one launch of a waiting kernel may make before it is a hang


def _waits_on_other_programs(fn: Any) -> bool:
    """The kernel spins on a flag another program sets (stream-K's tile locks:
    ``while tl.atomic_cas(locks + tile, 1, 1) != 1``)."""
    import inspect
    import re

    try:
        return re.search(r"while\s+tl\.atomic_cas\(", inspect.getsource(fn)) is not None
    except (OSError, TypeError):
        return False


def waiting_programs_last(interpreter: Any) -> None:
    """Programs that wait on another program's flag run after it.  The interpreter runs a
    grid's programs one at a time in ascending order, so a program spinning on a flag a later
    program sets (FlagGems' stream-K mm, picked on a capability-8 device for a half-type K past
    5 M and 5 N: a tile's first program waits for the program that stores the tile's last K
    iterations) spins forever - the CPU lane hung there.  Compiled, the programs run together
    and any order is a schedule the kernel must accept; a kernel that spins on a flag runs
    here in descending program order (its waiters are the earlier programs), and a launch that
    still spins past ``SPIN_LIMIT`` compare-and-swaps raises instead of hanging."""
    executor, builder = interpreter.GridExecutor, interpreter.interpreter_builder
    call, set_idx, cas = executor.__call__, type(builder).set_grid_idx, type(builder).create_atomic_cas
    state = {"reverse": False, "spins": 0}

    def launched(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = dict(state)
        state.update(reverse=_waits_on_other_programs(self.fn), spins=0)
        try:
            return call(self, *args, **kwargs)
        finally:
            state.update(outer)

    def set_grid_idx(self: Any, x: int, y: int, z: int) -> None:
        if state["reverse"]:
            x, y, z = (n - 1 - i for n, i in zip(self.grid_dim, (x, y, z), strict=True))
        set_idx(self, x, y, z)

    def create_atomic_cas(self: Any, *args: Any, **kwargs: Any) -> Any:
        if state["reverse"]:
            state["spins"] += 1
            if state["spins"] > SPIN_LIMIT:
                raise RuntimeError(
                    f"a program spun {SPIN_LIMIT} compare-and-swaps on a flag no program set "
                    "(the interpreter runs programs one at a time: it waits on an earlier one)"
                )
        return cas(self, *args, **kwargs)

    executor.__call__ = launched
    type(builder).set_grid_idx = set_grid_idx
    type(builder).create_atomic_cas = create_atomic_cas


def _first_three(grid: Any) -> Any:
    if callable(grid):
        return lambda meta: tuple(grid(meta))[:3]
    return tuple(grid)[:3]


def compiled_grid_axes(interpreter: Any) -> None:
    """Compiled Triton launches ``grid[0:3]`` and ignores the rest (``jit.py``: grid_1 =
    grid[1] if len(grid) > 1 ...); upstream's interpreter asserts "grid must have at most 3
    dimensions", so FlagGems' cumsum over more than 16384 columns, which launches
    (M, num_ctas, 1, 1), ran on hardware and failed here."""
    executor = interpreter.GridExecutor
    init = executor.__init__

    def __init__(self: Any, fn: Any, arg_names: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        init(self, fn, arg_names, _first_three(grid), *args, **kwargs)

    executor.__init__ = __init__


def _foreign(arg: Any) -> bool:
    """A launch argument with a data pointer but not a torch tensor's methods (FlagGems'
    ``StridedBuffer``: a tensor reinterpreted with its own shape, strides and offset)."""
    return hasattr(arg, "data_ptr") and not hasattr(arg, "new_empty")


def strided_buffers(interpreter: Any) -> None:
    """FlagGems' pointwise codegen launches with ``StridedBuffer`` arguments (flip's negative
    strides, broadcast views); the interpreter copies every argument to the host through
    ``new_empty`` / ``untyped_storage``, which it lacks ("'StridedBuffer' object has no
    attribute 'new_empty'": every pointwise op).  The emulated device is the host, so the
    buffer's pointer already addresses host memory: it passes through as it is."""
    executor = interpreter.GridExecutor
    init, restore = executor._init_args_hst, executor._restore_args_dev

    def split(args: Any, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any], dict[Any, Any]]:
        kept: dict[Any, Any] = {i: a for i, a in enumerate(args) if _foreign(a)}
        kept.update({k: v for k, v in kwargs.items() if _foreign(v)})
        plain = [None if i in kept else a for i, a in enumerate(args)]
        return plain, {k: (None if k in kept else v) for k, v in kwargs.items()}, kept

    def init_args_hst(self: Any, args_dev: Any, kwargs: dict[str, Any]) -> Any:
        plain, plain_kwargs, kept = split(args_dev, kwargs)
        if not kept:
            return init(self, args_dev, kwargs)
        args_hst, kwargs_hst = init(self, plain, plain_kwargs)
        args_hst = list(args_hst)
        for key, value in kept.items():
            if isinstance(key, int):
                args_hst[key] = value
            else:
                kwargs_hst[key] = value
        return args_hst, kwargs_hst

    def restore_args_dev(self: Any, args_dev: Any, args_hst: Any, kwargs: dict[str, Any], kwargs_hst: Any) -> Any:
        plain, plain_kwargs, kept = split(args_dev, kwargs)
        if not kept:
            return restore(self, args_dev, args_hst, kwargs, kwargs_hst)
        hst = [None if i in kept else a for i, a in enumerate(args_hst)]
        hst_kwargs = {k: (None if k in kept else v) for k, v in kwargs_hst.items()}
        return restore(self, plain, hst, plain_kwargs, hst_kwargs)

    executor._init_args_hst = init_args_hst
    executor._restore_args_dev = restore_args_dev


# -- activation ----------------------------------------------------------------------


def device_grid_limits(interpreter: Any, limits: tuple[int, int, int]) -> None:
    """Refuse a launch whose grid the device would refuse.  The interpreter loops over any
    grid, so a kernel that puts a tensor extent on grid axis y (FlagGems' argmin and
    log_softmax launch (cdiv(M, BLOCK_M), K)) would pass here and fail on every CUDA-like
    device once that extent passes 65535."""
    builder = interpreter.interpreter_builder
    set_grid_dim = builder.set_grid_dim

    def checked(nx: int, ny: int, nz: int) -> None:
        if nx > limits[0] or ny > limits[1] or nz > limits[2]:
            raise RuntimeError(
                f"Triton Error [CUDA]: invalid argument (emulated launch: grid ({nx}, {ny}, {nz}) "
                f"past the device's limits {limits})"
            )
        set_grid_dim(nx, ny, nz)

    builder.set_grid_dim = checked


def squeezed_scalar_index(interpreter: Any) -> None:
    """A scalar argument's ``__index__`` (a runtime loop's bound, ``for n in range(0, N)``):
    Triton 3.6's interpreter takes ``int()`` of its one-element array, which NumPy 2.4 refuses
    (the deprecation of 1.25 expired) - on an H100 (triton 3.6, numpy 2.4) the probes' oracle
    could run no runtime loop; 3.7 squeezes first.  Squeezed here on both, inside each launch's
    patch scope (restored with it)."""
    patch_lang = interpreter._patch_lang
    tensor = interpreter.tl.core.tensor

    def patched(fn: Any) -> Any:
        scope = patch_lang(fn)
        if hasattr(scope, "set_attr"):  # a device call inside a launch: the launch's scope has it
            scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
        return scope

    interpreter._patch_lang = patched


# Process-global on purpose: TRITON_INTERPRET, the torch.cuda stand-in and the interpreter's
# classes are per process, so what was applied to them is too.
_applied: dict[str, Any] = {}


def _refuse_compiled_triton() -> None:
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise FlContractError(
            "triton was imported before the CPU emulator set TRITON_INTERPRET=1, so its "
            "own jitted helpers (tl.sum, ...) are compiled functions; activate it first"
        )


def _already(key: str, profile: DeviceProfile) -> bool:
    """Whether ``key``'s part is applied with ``profile``; with another one, an error: the
    patches and the tiles chosen under them are the process's for good."""
    current = _applied.get(key)
    if current is None:
        return False
    if current != profile:
        raise FlContractError(
            f"emulator already active with profile {current.name!r}; "
            f"cannot switch to {profile.name!r} in the same process"
        )
    return True


def activate_interpreter(profile: DeviceProfile) -> None:
    """Switch Triton's interpreter on in this process and make it run a kernel as compiled
    Triton does (honest ``and``/``or``/``not``, compiled NaN semantics, ``profile``'s grid
    limits, ...), with the memory guard: all a replay of plain Triton kernels needs.

    Nothing of FlagGems: the probes' interpreter oracle runs this alone on a vendor lane's own
    Triton (any of ``INTERPRETER_TRITON``; on another one it refuses with ``UnsupportedTriton``),
    the CPU lane inside ``activate``.  Applies once, like ``activate``."""
    if _already("interpreter", profile):
        return
    check_interpreter_triton(installed_version("triton"))
    _refuse_compiled_triton()
    os.environ["TRITON_INTERPRET"] = "1"

    from triton.runtime import autotuner, interpreter

    autotuner.Autotuner._bench = _deterministic_bench
    interpreter.FunctionRewriter.ast_transformer = honest_bool_ops(interpreter.ASTTransformer)()
    interpreter.__fl_logical_and__ = logical_and
    interpreter.__fl_logical_or__ = logical_or
    interpreter.__fl_logical_not__ = logical_not
    interpreter.InterpretedFunction.rewritten_fn.clear()
    interpreter.InterpretedFunction.src = property(_interpreted_src)
    interpreter.InterpretedFunction.cache_key = property(_interpreted_cache_key)
    interpreter.InterpretedFunction.__globals__ = property(lambda self: self.fn.__globals__)
    _lang_visible(interpreter)
    globals_rule.install(interpreter)  # what the compiler refuses to read, refused here too
    squeezed_scalar_index(interpreter)
    compiled_nan_semantics(interpreter)
    vectorised_reduce_scan(interpreter)
    cached_np_dtype(interpreter)
    device_grid_limits(interpreter, profile.max_grid)
    comparison_masks(interpreter)
    host_libdevice(interpreter)
    strided_buffers(interpreter)
    compiled_grid_axes(interpreter)
    bf16_arithmetic(interpreter)
    no_discarded_overflow_checks(interpreter)
    bool_scalar_arguments(interpreter)
    float_scalar_arguments(interpreter)
    waiting_programs_last(interpreter)
    device.install()  # the memory guard at once; injected defects pass through it too
    _applied["interpreter"] = profile


def activate(profile: DeviceProfile) -> None:
    """Prepare this process so that ``import flag_gems`` runs on the interpreter: the CPU
    lane's exact versions (``check_versions``), the ``torch.cuda`` stand-in, the interpreter
    (``activate_interpreter``), then FlagGems' own patches as its modules are imported.

    Applies once; a second call with the same profile is a no-op, with another one
    (after FlagGems chose its tiles) an error.
    """
    if _already("profile", profile):
        return
    found = check_versions()
    _refuse_compiled_triton()
    if "flag_gems" in sys.modules:
        raise FlContractError(
            "flag_gems was imported before the CPU emulator was activated; "
            "activate it first (pytest: -p fl_contract loads it early)"
        )
    import torch

    if torch.cuda.is_available():
        raise FlContractError(
            "refusing to emulate: this machine has a real accelerator "
            f"({torch.cuda.get_device_name(0)}); run the real lane instead"
        )
    os.environ["GEMS_VENDOR"] = os.environ[EMULATOR_ENV] = profile.vendor
    if profile.arch:  # FlagGems reads it where it cannot ask the device (its backend's get_arch)
        os.environ["ARCH"] = profile.arch

    for name, value in _cuda_shim(profile).items():
        setattr(torch.cuda, name, value)

    activate_interpreter(profile)
    dispatch.install()  # FlagGems' fallbacks to torch reach torch's CPU kernels, not FlagGems again

    _stub_missing_modules(found["flag_gems"])
    _alias_vendor_libdevice(profile.vendor)
    for module, patch in (
        ("flag_gems.runtime", _patch_runtime),
        ("flag_gems.utils.libentry", _patch_libentry),
        ("flag_gems.utils.pointwise_dynamic", _patch_pointwise_dynamic),
        ("flag_gems.utils.limits", _patch_limits),
        ("flag_gems", dispatch.rewrite_host_checks),  # the whole package: its ops and fused modules have run
    ):
        after_import(module, patch)  # right after each module runs, before anything imports from it
    _applied["profile"] = profile


def bring_up(profile: str, defects: tuple[str, ...] = ()) -> None:
    """The CPU lane's emulator, before anything imports triton: FlagGems' kernels on Triton's
    interpreter with ``profile``'s device, and ``defects`` injected (the one bring-up the lane
    session and ``fl-contract probe`` share)."""
    from .profiles import get_profile

    activate(get_profile(profile))
    if defects:
        device.enable(*defects)
