"""A standalone reproduction, written from a recorded FlagGems call (``capture``).

The script needs torch and flag_gems only.  Its inputs are the call's own tensors, bit for
bit: each tensor's whole storage (its neighbours in memory too: an index op's input sits in
a buffer whose tail holds the value that wins, and a layout contract passes a strided view)
with its shape, strides and offset, compressed into the script, or beside it in a ``.bin``
file past ``INLINE_BYTES``; a digest checks them.  Each call runs as the contract made it
(``flag_gems.ops.<module>.<function>(...)``: the function torch dispatch reached, with the
arguments it received) and is compared with the aten op it is registered for, run by torch
on float64 CPU copies of the inputs (torch's own dtype where float64 is refused), within the
contract's tolerance.  It prints the seed's table (call, result, expected, verdict) and
exits 1 while any call is off, 0 once every one holds.

On an emulated lane "standalone" means: no plugin, no pytest, no registry - the one import
from pytest-fl-contract is its emulator module (``emulation.interpreter.bring_up``), which
puts FlagGems on Triton's interpreter with the lane's device profile and the platform's
compiler defect injected.  That module is 1000 lines of interpreter patches; inlining it
would freeze a copy that no test keeps right, and the defect it injects is the thing under
test, so the script names it (``--lane emulated``) and the CPU lane's profile without it
(``--lane cpu``).  On a hardware lane the script imports nothing of ours (``--lane device``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

INLINE_BYTES = 1 << 20  # a storage up to this size is written into the script; larger ones beside it


@dataclass(frozen=True)
class Tensor:
    """One input's storage and view: ``data`` is zlib-compressed, base64 (empty when written beside)."""

    name: str
    dtype: str  # torch's name: float32, int64, bool, ...
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    nbytes: int
    sha256: str
    data: str = ""

    @property
    def inline(self) -> bool:
        return self.nbytes <= INLINE_BYTES


@dataclass(frozen=True)
class Call:
    """One FlagGems call as the contract made it: arguments are encoded values (``encode``)."""

    module: str
    function: str
    aten: str | None  # the aten overload FlagGems registers it for ("sum.dim_IntList"): the reference
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    rtol: float
    atol: float


@dataclass(frozen=True)
class Repro:
    """What a reproduction holds: the case, its lane, the calls and their inputs."""

    key: str
    lane: str
    platform: str
    device: str  # the torch device type the calls ran on ("cpu" under the emulator)
    failure: str  # the case's failure, one line
    versions: Mapping[str, str]
    calls: tuple[Call, ...]
    tensors: tuple[Tensor, ...]
    emulated: tuple[str, tuple[str, ...]] | None = None  # (profile, injected defects)
    cpu_profile: str | None = None  # the plain CPU lane's profile (no defect)
    op: str | None = None
    contract: str | None = None
    device_name: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)


class Unrecordable(ValueError):
    """An argument a script cannot write down (an object with no literal form)."""


def tensor_record(name: str, t: Any) -> tuple[Tensor, bytes]:
    """``t``'s whole storage as bytes, and its record."""
    import torch

    storage = t.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage, 0, (storage.nbytes(),), (1,))
    data = raw.detach().cpu().numpy().tobytes()
    digest = hashlib.sha256(data).hexdigest()
    record = Tensor(
        name,
        str(t.dtype).removeprefix("torch."),
        tuple(t.shape),
        tuple(t.stride()),
        t.storage_offset(),
        len(data),
        digest,
    )
    if record.inline:
        record = Tensor(**{**record.__dict__, "data": base64.b64encode(zlib.compress(data, 6)).decode("ascii")})
    return record, data


def encode(value: Any, name_of: Any) -> Any:
    """A call argument as JSON-able data: tensors by name (``name_of(tensor)``), dtypes,
    devices, nested lists and tuples, numbers (inf and NaN too), strings, None."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": name_of(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": value.type}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, name_of) for v in value]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise Unrecordable(f"an argument of type {type(value).__name__} has no literal form")


def code(value: Any, reference: bool = False) -> str:
    """An encoded value as Python source; ``reference``: tensors through ``ref()`` and
    floating dtypes as float64 (the float64 reference's call)."""
    if isinstance(value, dict):
        kind, inner = next(iter(value.items()))
        if kind == "tensor":
            return f"ref({inner})" if reference else str(inner)
        if kind == "dtype":
            floating = inner in ("float16", "bfloat16", "float32", "float64")
            return "torch.float64" if reference and floating else f"torch.{inner}"
        if kind == "device":
            return "torch.device('cpu')" if reference else "torch.device(DEVICE)"
        if kind == "memory_format":
            return f"torch.{inner}"
        if kind == "float":
            return f"float({inner!r})"
        parts = [code(v, reference) for v in inner]
        if kind == "tuple":
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        return f"[{', '.join(parts)}]"
    return repr(value)


def call_text(call: Call, reference: bool = False) -> str:
    """The call's arguments as source: ``t0, [1], keepdim=False``."""
    return ", ".join([*(code(a, reference) for a in call.args), *(f"{k}={code(v, reference)}" for k, v in call.kwargs)])


def label(call: Call) -> str:
    return f"{call.function}({call_text(call)})"


def sidecar_name(script_name: str, tensor: Tensor) -> str:
    return f"{script_name.removesuffix('.py')}.{tensor.name}.bin"


def _header(repro: Repro, script_name: str) -> list[str]:
    v = repro.versions
    versions = ", ".join(f"{k} {v[k]}" for k in ("torch", "triton", "flag_gems") if k in v)
    where = (
        f"{repro.platform}, emulated on CPU (profile {repro.emulated[0]}, injected: "
        f"{', '.join(repro.emulated[1]) or 'none'})"
        if repro.emulated
        else f"{repro.platform}, {repro.device_name or repro.device}"
    )
    lanes = (
        (
            "--lane emulated (default): FlagGems on Triton's interpreter with the defect injected;\n"
            "    --lane cpu: the plain CPU lane (no defect): passes once the only cause is the defect.\n"
            "    Under the emulator the one import from pytest-fl-contract is its emulator module."
        )
        if repro.emulated
        else "--lane device (default): on this machine's accelerator; torch and flag_gems only."
    )
    return [
        "#!/usr/bin/env python3",
        f'"""Reproduction of {repro.key}',
        f"(lane {repro.lane}: {where}).",
        "",
        f"Failed with: {repro.failure}",
        f"Versions it failed on: {versions}.",
        "",
        "Each FlagGems call the case made, with its exact inputs, against torch's float64 result",
        "of the aten op FlagGems registers it for.  Exit 1 while a call is off, 0 once all hold.",
        f"    python {script_name} [--lane ...]",
        f"    {lanes}",
        "Written by fl-contract repro; nothing of the plugin runs here.",
        '"""',
    ]


_BODY = '''
import argparse
import base64
import hashlib
import importlib
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATOR = None  # the emulator's device module, under --lane emulated or cpu


class NotReproduced(Exception):
    """The script could not run its calls: exit 2, never 1 (1 says the defect is there)."""


def tensor(spec):
    """A saved input: its whole storage, bit for bit, viewed as the call had it."""
    import torch

    name, dtype, shape, stride, offset, nbytes, digest, data, file = spec
    if data:
        raw = zlib.decompress(base64.b64decode(data))
    else:
        with open(os.path.join(HERE, file), "rb") as f:
            raw = zlib.decompress(f.read())
    if len(raw) != nbytes or hashlib.sha256(raw).hexdigest() != digest:
        raise NotReproduced(f"input {name}: its saved bytes do not match their digest")
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    return flat.to(DEVICE).view(getattr(torch, dtype)).as_strided(shape, stride, offset)


def ref(t):
    """A float64 CPU copy (the reference's input); other dtypes as they are."""
    t = t.detach().cpu().clone()
    return t.double() if t.is_floating_point() else t


def no_reference():
    raise LookupError("no aten op registers this function: no torch reference")


def native(t):
    return t.detach().cpu().clone()


def flat(value):
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in flat(item)]
    return [value]


def compare(got, want, rtol, atol):
    """(verdict, result, expected) of one call: every tensor of its result within
    atol + rtol * |want| of the reference (NaN where it has NaN), or both raising."""
    import torch

    if isinstance(want, Exception) or isinstance(got, Exception):
        if isinstance(want, Exception) and isinstance(got, Exception):
            return "ok", f"raises {type(got).__name__}", f"raises {type(want).__name__}"
        if isinstance(got, Exception):
            return "WRONG", f"raises {type(got).__name__}: {str(got).strip().splitlines()[0][:160] if str(got).strip() else ''}", "a result"
        return "WRONG", "a result", f"raises {type(want).__name__}"
    got, want = flat(got), flat(want)
    if len(got) != len(want):
        return "WRONG", f"{len(got)} outputs", f"{len(want)} outputs"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, torch.Tensor):
            continue
        g = g.detach().cpu() if isinstance(g, torch.Tensor) else torch.tensor(g)
        w = w.detach().cpu()
        which = f"output {i}: " if len(want) > 1 else ""
        if tuple(g.shape) != tuple(w.shape):
            return "WRONG", f"{which}shape {tuple(g.shape)}", f"shape {tuple(w.shape)}"
        if w.is_floating_point() or w.is_complex():
            gd, wd = g.to(torch.complex128 if w.is_complex() else torch.float64), w.to(torch.complex128 if w.is_complex() else torch.float64)
            close = torch.isclose(gd, wd, rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = g.to(w.dtype) == w
        if not bool(close.all()):
            bad = (~close).nonzero()[0].tolist()
            where = tuple(bad)
            count = int((~close).sum())
            return ("WRONG", f"{which}{g[where].item():.6g} at {where} ({count} of {w.numel()} off)",
                    f"{w[where].item():.6g} (rtol {rtol:.3g}, atol {atol:.3g})")
    return "ok", "within tolerance", f"float64 torch (rtol {rtol:.3g}, atol {atol:.3g})"


FILLS = (float("nan"), 1.0e30, -7.0)  # what the memory around the tensors holds on each repeat


def fill_memory(fill):
    """Allocate, fill and free device memory, so that a read past a tensor meets ``fill``
    (under the emulator, its device heap: what it serves for lanes outside every tensor)."""
    import torch

    if DEVICE != "cpu":  # the device's caching allocator hands this block out next
        block = torch.empty(16 << 20, dtype=torch.float32, device=DEVICE)
        block.fill_(fill)
        del block
    if EMULATOR is not None:
        EMULATOR.poison(fill)


def bits(value):
    import torch

    out = []
    for v in flat(value):
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu().contiguous()
            size = v.element_size()
            out.append(v.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]) if size in (1, 2, 4, 8) else v)
        else:
            out.append(v)
    return out


def same_bits(a, b):
    import torch

    a, b = bits(a), bits(b)
    return len(a) == len(b) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
                                    else x == y for x, y in zip(a, b))


def call_once(fn, args_of):
    import torch

    try:
        args, kwargs = args_of()
        got = fn(*args, **kwargs)
        if DEVICE != "cpu":
            getattr(torch, DEVICE).synchronize()
        return got
    except Exception as exc:
        return exc


def run(label, fn, args_of, reference_of, native_of, rtol, atol):
    """One call's row: against the float64 reference, then repeated with the memory around
    its tensors filled with NaN, 1e30 and -7 (fresh inputs each time): a call that reads
    past its tensors gives other bits (the seed's "same input, different results")."""
    try:
        want = reference_of()
    except Exception:  # torch refuses float64 here: its own dtype on the CPU
        try:
            want = native_of()
        except Exception as exc:  # torch refuses the call itself: FlagGems must too
            want = exc
    repeats = []
    for fill in FILLS:
        fill_memory(fill)
        repeats.append((fill, call_once(fn, args_of)))
    got = repeats[0][1]
    if isinstance(want, LookupError):  # nothing to compare a result with: the call must not raise
        verdict, result, expected = ("WRONG" if isinstance(got, Exception) else "ok",
                                     f"raises {type(got).__name__}" if isinstance(got, Exception) else "a result", str(want))
    else:
        verdict, result, expected = compare(got, want, rtol, atol)
    if verdict == "ok" and not isinstance(got, Exception):
        for fill, again in repeats[1:]:
            if not same_bits(got, again):
                return label, f"changed after the memory around it was filled with {fill}", \
                    "bit-identical repeats of one call", "WRONG"
    return label, result, expected, verdict


def main(argv=None):
    """Exit 1: a call is off (the defect is there); 0: every call holds; 2: the script could
    not run its calls (an input, an import, the emulator): a broken environment never says
    "defect"."""
    try:
        return _main(argv)
    except SystemExit:
        raise
    except BaseException as exc:  # one line, never a traceback, never exit 1
        print(f"cannot reproduce here: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 2


def _main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", choices=sorted(LANES), default=DEFAULT_LANE)
    lane = parser.parse_args(argv).lane
    global EMULATOR
    if LANES[lane] is not None:
        from pytest_fl_contract.emulation.interpreter import bring_up  # Triton's interpreter, the defect injected

        bring_up(*LANES[lane])
        from pytest_fl_contract.emulation import device as EMULATOR  # its heap: what fill_memory fills
    import torch
    import flag_gems

    rows = CALLS(torch, flag_gems)
    print(__doc__.splitlines()[0])
    print(f"{__doc__.splitlines()[1]} Run now: --lane {lane}.")
    print(f"torch {torch.__version__}, flag_gems {getattr(flag_gems, '__version__', '?')}, device {DEVICE}")
    print()
    print("| call | result | expected | verdict |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |")
    wrong = sum(row[3] != "ok" for row in rows)
    print()
    print(f"{wrong} of {len(rows)} calls off: the defect is there" if wrong else "every call holds")
    return 1 if wrong else 0
'''


def render(repro: Repro, script_name: str) -> str:
    """The script's source (``script_name``: its file name, for sidecar inputs)."""
    lines = _header(repro, script_name)
    lines.append(_BODY)
    device = "cpu" if repro.emulated else repro.device
    if repro.emulated:
        lanes = {
            "emulated": (repro.emulated[0], tuple(repro.emulated[1])),
            "cpu": (repro.cpu_profile or repro.emulated[0], ()),
        }
        lines += [f"LANES = {lanes!r}", 'DEFAULT_LANE = "emulated"']
    else:
        lines += ['LANES = {"device": None}', 'DEFAULT_LANE = "device"']
    lines.append(f"DEVICE = {device!r}")
    lines.append("INPUTS = {")
    for t in repro.tensors:
        file = "" if t.inline else sidecar_name(script_name, t)
        lines.append(
            f"    {t.name!r}: ({t.name!r}, {t.dtype!r}, {t.shape!r}, {t.stride!r}, {t.offset!r}, {t.nbytes!r}, "
            f"{t.sha256!r},\n        {t.data!r}, {file!r}),"
        )
    lines.append("}")
    lines += [
        "",
        "",
        "def CALLS(torch, flag_gems):",
        '    """The calls the case made: FlagGems\' function against the aten op it registers."""',
    ]
    for t in repro.tensors:
        lines.append(f"    {t.name} = tensor(INPUTS[{t.name!r}])")
    lines.append("    rows = []")
    for call in repro.calls:
        fn = f"importlib.import_module({call.module!r}).{call.function}"
        names = list(dict.fromkeys(names_in([*call.args, *(v for _, v in call.kwargs)])))
        body = (
            f"([{', '.join(code(a) for a in call.args)}], {{{', '.join(f'{k!r}: {code(v)}' for k, v in call.kwargs)}}})"
        )
        # fresh inputs for every repeat (a call may write into them), aliasing kept within a call
        args = (
            f"lambda: (lambda {', '.join(names)}: {body})({', '.join(f'tensor(INPUTS[{n!r}])' for n in names)})"
            if names
            else f"lambda: {body}"
        )
        if call.aten:
            name, _, overload = call.aten.partition(".")
            aten = f"torch.ops.aten.{name}.{overload or 'default'}"
            reference = f"lambda: {aten}({call_text(call, reference=True)})"
            nat = _native(call, aten)
        else:  # no aten op registers it: torch has nothing to compare with, so the call must not raise
            reference = nat = "no_reference"
        lines.append(
            f"    rows.append(run({label(call)!r}, {fn},\n                    {args},\n"
            f"                    {reference},\n                    {nat},\n"
            f"                    {call.rtol!r}, {call.atol!r}))"
        )
    lines += ["    return rows", "", "", 'if __name__ == "__main__":', "    sys.exit(main())", ""]
    return "\n".join(lines)


def _native(call: Call, aten: str) -> str:
    """The reference in the inputs' own dtypes on the CPU (where torch refuses float64)."""

    def native_code(value: Any) -> str:
        if isinstance(value, dict) and "tensor" in value:
            return f"native({value['tensor']})"
        if isinstance(value, dict) and "device" in value:
            return "torch.device('cpu')"
        if isinstance(value, dict) and ("list" in value or "tuple" in value):
            kind = "list" if "list" in value else "tuple"
            parts = [native_code(v) for v in value[kind]]
            return (
                f"[{', '.join(parts)}]" if kind == "list" else f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
            )
        return code(value)

    text = ", ".join([*(native_code(a) for a in call.args), *(f"{k}={native_code(v)}" for k, v in call.kwargs)])
    return f"lambda: {aten}({text})"


def sidecars(repro: Repro, data: Mapping[str, bytes], script_name: str) -> dict[str, bytes]:
    """File name -> compressed bytes for each input too large to write into the script."""
    return {sidecar_name(script_name, t): zlib.compress(data[t.name], 6) for t in repro.tensors if not t.inline}


def names_in(values: Sequence[Any]) -> list[str]:
    """The tensor names an encoded argument list refers to."""
    found: list[str] = []
    for value in values:
        if isinstance(value, dict):
            kind, inner = next(iter(value.items()))
            if kind == "tensor":
                found.append(inner)
            elif kind in ("list", "tuple"):
                found += names_in(inner)
    return found
