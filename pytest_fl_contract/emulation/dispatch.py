"""FlagGems' host code on the emulated device: its fallbacks reach torch, not itself, and
its tests for "a tensor on the host" see the emulated device as a device.

On hardware FlagGems registers its ops under the accelerator's dispatch key, and an entry
point that meets a tensor it does not serve (5.4's ``mul``: ``device.type != "cuda"``,
``zero``, ``i0``, ``t_copy``, ... ``!= flag_gems.device``) hands it to torch, whose dispatch
takes it to that tensor's own backend: torch's kernel.  The emulated device is the CPU, so
FlagGems registers under the CPU key, and the same hand-off comes straight back to FlagGems'
entry point - with the same tensors - until the recursion limit (``x * y`` inside
``use_gems()`` on the 5.4 line; every workaround route that multiplies).

Each FlagGems function registered under the CPU key is wrapped: called again for the same
op with the same tensors while it runs (its fallback), it reaches torch's CPU kernel, taken
before FlagGems' registration replaced it, as the fallback does on hardware.  A nested call
with other tensors (a second stage over partials, a chunk of the input) still reaches
FlagGems, as it does on hardware.  ``Counters.native_fallbacks`` counts the hand-offs.

FlagGems' host code also tells its device from the host by ``t.device.type == "cpu"`` (5.4's
``where`` asserts no operand is on the CPU, ``_to_copy`` hands CPU-to-CPU copies to torch's
composite, which calls ``copy_``) and pins host buffers before copying them to its device
(``broadcast_to``).  On the emulated device the host is the device: those comparisons are
made against a host type no tensor has (``host_checks``: its operator modules' functions holding them are
recompiled, their code replaced in place, so every reference to them sees it), and pinning,
which needs an accelerator, leaves the buffer as it is.

The other way round, FlagGems' host code asks whether a tensor is on its vendor's device
(``t.is_cuda``, ``t.device.type == "cuda"``: ``zero``, ``t_copy``, ``prelu``, ``arcsinh``,
``reflection_pad2d``, ... assert it, ``one_hot`` and ``fill.Tensor`` hand anything else to
torch).  On hardware every tensor a contract gives FlagGems is, and on the emulated device,
which is the CPU, none is: those entry points refused every call or took their host route.
The same recompilation answers them about the emulated device: ``is_<vendor device>`` reads
``is_cpu`` and a comparison with the vendor's device type compares with "cpu" (the emulated
device's type, which ``flag_gems.device`` names), in FlagGems' operator code only.  torch's
own code (its kernels, ``torch.nn.functional``'s and the decompositions' ``is_cuda`` tests,
the float64 reference) is not touched and keeps seeing CPU tensors as the CPU's, and nothing
is switched per call, so nothing can leak out of one: a class-level ``Tensor.is_cuda``
override, even scoped to an emulated call, would also answer the torch code that call runs.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
import types
from typing import Any, Callable

from . import device

_applied: dict[str, Any] = {}
HOST = "fl-emulated-host"  # the device type FlagGems' "is it on the host" tests compare against here
_calls = threading.local()


def _active() -> list[tuple[str, tuple[int, ...]]]:
    stack = getattr(_calls, "stack", None)
    if stack is None:
        stack = _calls.stack = []
    return stack


def _tensor_ids(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, ...]:
    import torch

    return tuple(id(a) for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor))


def guarded(key: str, fn: Callable[..., Any], native: Native) -> Callable[..., Any]:
    """``fn`` (FlagGems' function for the aten op ``key``) that hands ``native`` (torch's
    kernel) what hardware would never give FlagGems: its own call back into ``key`` with the
    tensors it was given, and a call whose tensors are all host scalars."""

    @functools.wraps(fn)  # FlagGems excludes by __name__: the wrapper keeps it
    def registered(*args: Any, **kwargs: Any) -> Any:
        stack = _active()
        frame = (key, _tensor_ids(args, kwargs))
        if frame in stack or native.host_scalars(args, kwargs):
            device.DEVICE.counters.native_fallbacks += 1
            return native(*args, **kwargs)
        stack.append(frame)
        try:
            return fn(*args, **kwargs)
        finally:
            stack.pop()

    registered.__fl_registered__ = fn  # type: ignore[attr-defined]
    return registered


def _as_operand(value: Any, tensors: list[Any]) -> Any:
    """A Python number where the schema takes a Tensor, as torch's dispatcher handed it to
    FlagGems (a wrapped number turns back into a number on its way into Python): a 0-dim
    tensor that promotes as the wrapped number did - its own kind's widest dtype, which a
    0-dim operand never imposes on the other operands' kind (its value kept whole), or the
    default dtype of its kind where it is of a higher kind than every tensor operand."""
    import torch

    if isinstance(value, bool):
        return torch.tensor(value)
    kinds = [(t.is_complex(), t.is_floating_point()) for t in tensors]
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        wide = any(c or f for c, f in kinds)
        return torch.tensor(value, dtype=torch.float64 if wide else torch.get_default_dtype())
    if isinstance(value, complex):
        wide = any(c for c, _ in kinds)
        return torch.tensor(value, dtype=torch.complex128 if wide else torch.complex64)
    return value


class Native:
    """torch's CPU kernel of one aten overload, taken before FlagGems' registration replaced
    it, called with FlagGems' Python arguments (numbers in Tensor places made tensors again)."""

    def __init__(self, kernel: Any, schema: Any) -> None:
        import torch

        self.kernel = kernel
        self.keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
        self.positions = [str(a.type) == "Tensor" for a in schema.arguments]
        self.names = {a.name for a in schema.arguments if str(a.type) == "Tensor"}

    def _tensor_slots(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        return [a for i, a in enumerate(args) if i < len(self.positions) and self.positions[i]] + [
            v for k, v in kwargs.items() if k in self.names
        ]

    def host_scalars(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Every Tensor the schema takes came as a Python number: wrapped scalars, which live
        on the host and never reach a device's kernels (an out= call's wrapped operand cast)."""
        slots = self._tensor_slots(args, kwargs)
        return bool(slots) and all(isinstance(a, (bool, int, float, complex)) for a in slots)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        args = tuple(
            _as_operand(a, tensors) if i < len(self.positions) and self.positions[i] else a for i, a in enumerate(args)
        )
        kwargs = {k: _as_operand(v, tensors) if k in self.names else v for k, v in kwargs.items()}
        return self.kernel.call_boxed(self.keys, *args, **kwargs)


def _native(qualified: str) -> Native | None:
    """torch's CPU kernel of ``qualified`` (``aten::mul.Tensor``) as registered now, or None."""
    import torch

    get_kernel = getattr(torch.library, "get_kernel", None)
    if get_kernel is None:
        return None
    try:
        kernel = get_kernel(qualified, "CPU")
        name, _, overload = qualified.removeprefix("aten::").partition(".")
        schema = getattr(getattr(torch.ops.aten, name), overload or "default")._schema
    except Exception:  # no CPU kernel (an op torch defines elsewhere): FlagGems' call is left as it is
        return None
    return Native(kernel, schema)


def _from_flag_gems(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module == "flag_gems" or module.startswith("flag_gems.")


def install() -> None:
    """Wrap what FlagGems registers under the CPU key from now on (once per process)."""
    if _applied:
        return
    import torch

    original = torch.library.Library.impl

    def impl(self: Any, op_name: Any, fn: Any, dispatch_key: str = "", *args: Any, **kwargs: Any) -> Any:
        if (
            getattr(self, "ns", None) == "aten"
            and dispatch_key == "CPU"
            and isinstance(op_name, str)
            and callable(fn)
            and _from_flag_gems(fn)
        ):
            native = _native(f"aten::{op_name}")
            if native is not None:
                fn = guarded(op_name, fn, native)
        return original(self, op_name, fn, dispatch_key, *args, **kwargs)

    torch.library.Library.impl = impl  # type: ignore[method-assign]
    _applied["impl"] = original
    _applied["pin_memory"] = torch.Tensor.pin_memory
    torch.Tensor.pin_memory = _pinned_in_place  # type: ignore[method-assign]


class _DeviceTests(ast.NodeTransformer):
    """``<x>.type == "cpu"`` / ``!= "cpu"`` (either side) -> the same against ``HOST``;
    with the vendor's device type given (``"cuda"``), ``<x>.type == "cuda"`` -> ``== "cpu"``
    and ``<x>.is_cuda`` -> ``<x>.is_cpu``: the emulated device is the vendor's device."""

    def __init__(self, vendor_type: str | None = None) -> None:
        self.changed = 0
        self.types = {"cpu": HOST}
        self.flag = None
        if vendor_type and vendor_type != "cpu":
            self.types[vendor_type] = "cpu"
            self.flag = f"is_{vendor_type}"

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        typed = any(isinstance(o, ast.Attribute) and o.attr == "type" for o in operands)
        if not typed or not all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            return node
        for i, operand in enumerate(operands):
            if isinstance(operand, ast.Constant) and isinstance(operand.value, str) and operand.value in self.types:
                replacement = ast.copy_location(ast.Constant(self.types[operand.value]), operand)
                if i == 0:
                    node.left = replacement
                else:
                    node.comparators[i - 1] = replacement
                self.changed += 1
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if self.flag is not None and node.attr == self.flag and isinstance(node.ctx, ast.Load):
            self.changed += 1
            return ast.copy_location(ast.Attribute(value=node.value, attr="is_cpu", ctx=ast.Load()), node)
        return node


def _recompiled(module: types.ModuleType, tree: ast.Module, path: str, vendor_type: str | None = None) -> int:
    """Each top-level function of ``module`` whose body tests a device (``_DeviceTests``),
    its code replaced by the same code testing for the emulated device; returns how many."""
    done = 0
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        fn = vars(module).get(node.name)
        code = getattr(fn, "__code__", None)
        if not isinstance(fn, types.FunctionType) or code is None or code.co_filename != path or code.co_freevars:
            continue
        rewrite = _DeviceTests(vendor_type)
        plain = ast.FunctionDef(
            name=node.name,
            args=node.args,
            body=node.body,
            decorator_list=[],
            returns=node.returns,
            type_comment=None,
            **_type_params(node),
        )
        plain = rewrite.visit(ast.copy_location(plain, node))
        if not rewrite.changed:
            continue
        namespace: dict[str, Any] = {}
        exec(
            compile(ast.fix_missing_locations(ast.Module([plain], [])), path, "exec"),  # noqa: S102
            vars(module),
            namespace,
        )
        fn.__code__ = namespace[node.name].__code__
        done += 1
    return done


def _type_params(node: ast.FunctionDef) -> dict[str, Any]:
    return {"type_params": getattr(node, "type_params", [])} if sys.version_info >= (3, 12) else {}


# FlagGems' operator code, whose host tests decide where a call runs; its testing helpers' own
# ("is the reference on the CPU") are about the reference, which is on the host on every lane
OPERATOR_PACKAGES = ("ops", "fused")


def host_checks(package: types.ModuleType, vendor_type: str | None = None) -> int:
    """Rewrite the device tests of every operator module of the package imported now (its
    host-type comparisons, and with ``vendor_type`` its tests for the vendor's device);
    returns how many functions changed.  A module whose source cannot be read is left as it is."""
    prefixes = tuple(f"{package.__name__}.{sub}." for sub in OPERATOR_PACKAGES)
    markers = ('"cpu"', "'cpu'") + (
        (f'"{vendor_type}"', f"'{vendor_type}'", f"is_{vendor_type}") if vendor_type else ()
    )
    done = 0
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if not name.startswith(prefixes) or not path.endswith(".py"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        if not any(marker in text for marker in markers):
            continue
        done += _recompiled(module, ast.parse(text, path), path, vendor_type)
    return done


def vendor_device_type(package: types.ModuleType) -> str | None:
    """The torch device type of FlagGems' vendor (``"cuda"`` for NVIDIA and Iluvatar), as its
    backend declares it: ``flag_gems.device`` itself names the emulated device ("cpu") here."""
    runtime_device = getattr(getattr(package, "runtime", None), "device", None)
    name = getattr(getattr(runtime_device, "info", None), "device_name", None)
    return name if isinstance(name, str) and name.isidentifier() else None


def rewrite_host_checks(package: types.ModuleType) -> None:
    """``host_checks`` as an import callback: what changed is counted in the emulator's summary."""
    device.DEVICE.counters.host_checks_rewritten += host_checks(package, vendor_device_type(package))


def _pinned_in_place(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Pinning pages a host buffer for a device's copy engine; the emulated device is the host."""
    return self
