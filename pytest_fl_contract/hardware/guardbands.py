"""Guard bands (issue 59): every tensor allocated during a contract's call lies inside a band of
known bytes, so a kernel that stores past its output is seen at once, naming the byte range.

A store past a tensor does not fault on a GPU: it corrupts whatever the allocator put next,
and the symptom shows later, in another op (FlagGems #5389, #6083; ``special_log_softmax``'s
N = 1 cases on an H200 passed in one run and failed in the next).  Here, while ``guarded`` is
active, each allocating aten op (``empty``, ``empty_strided``, ``*_like``, ``new_*``, ``clone``,
``_to_copy``: FlagGems' outputs, and the operands a lane moves to its device) returns its tensor
as a view into a larger buffer, ``BAND`` bytes of ``FILL`` before and after; the caller's
in-place operands get the same through ``banded_copy``.  After the call ``settle`` synchronises
and runs a canary, so a device fault is the case's that caused it, never the next one's; then
``Guard.breaches`` reads every band back: any byte that changed is a write outside the tensor.

The same case on the CPU emulator: a store outside every tensor of a launch is the emulator's
``EmulatedDeviceFault``; inside the bands it lands in the band (the band belongs to the launch's
storage) and is reported here instead - both name the same lanes.  A tensor that ``resize_``
grew past its span is not checked (its band is its payload now) and is said so.

Nothing here imports torch at module import.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

FILL = 0xA5  # a byte no float, int or bool result of a small contract case is made of
BAND = 256  # bytes each side: a multiple of every dtype's size, wider than one 64-lane fp32 tile row
ALLOCATING = (
    "empty.memory_format",
    "empty_strided.default",
    "empty_like.default",
    "new_empty.default",
    "new_empty_strided.default",
    "zeros.default",
    "zeros_like.default",
    "new_zeros.default",
    "ones.default",
    "ones_like.default",
    "new_ones.default",
    "full.default",
    "full_like.default",
    "new_full.default",
    "clone.default",
    "_to_copy.default",
)


def byte_ranges(offsets: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Sorted byte offsets as half-open ranges.

    >>> byte_ranges([-3, -2, 20, 21, 22, 24])
    ((-3, -1), (20, 23), (24, 25))
    """
    out: list[list[int]] = []
    for o in offsets:
        if out and out[-1][1] == o:
            out[-1][1] = o + 1
        else:
            out.append([o, o + 1])
    return tuple((a, b) for a, b in out)


@dataclass(frozen=True)
class Breach:
    """Bytes outside one tensor that changed: offsets relative to the tensor's first byte
    (negative: before it; ``nbytes`` and up: past its end)."""

    allocation: str  # what the tensor was: dtype, shape, the op and the code that allocated it
    nbytes: int
    ranges: tuple[tuple[int, int], ...]

    def __str__(self) -> str:
        where = ", ".join(
            f"bytes [{a}, {b})" + (" before" if b <= 0 else " past the end" if a >= self.nbytes else "")
            for a, b in self.ranges
        )
        return f"{self.allocation} ({self.nbytes} bytes): written outside at {where}"


def _span(shape: Sequence[int], stride: Sequence[int]) -> int:
    """Elements from a view's first to its last element, inclusive (0 when empty)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(shape, stride))


def _caller() -> str:
    """Where the allocation was asked for: the first FlagGems frame, else the first outside
    torch and this module (a contract's operand)."""
    frame: FrameType | None = sys._getframe(2)
    fallback = None
    while frame is not None:
        name = frame.f_code.co_filename
        if "flag_gems" in name:
            return f"{name[name.rindex('flag_gems') :]}:{frame.f_lineno}"
        if fallback is None and "torch" not in name and __name__.replace(".", "/") not in name:
            fallback = f"{name.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        frame = frame.f_back
    return fallback or "?"


@dataclass
class _Banded:
    buffer: Any  # the whole allocation, uint8
    payload: Any  # the tensor handed out
    shape: tuple[int, ...]
    nbytes: int  # its span in bytes
    label: str


def banded(like: Any, label: str = "") -> tuple[Any, _Banded | None]:
    """A tensor equal to ``like`` (values, dtype, shape, strides) inside guard bands, and its
    record; an empty tensor or one with a negative stride comes back as it is."""
    import torch

    if like.numel() == 0 or any(st < 0 for st in like.stride()) or like.layout != torch.strided:
        return like, None
    size = like.element_size()
    nbytes = _span(like.shape, like.stride()) * size
    buffer = torch.full((BAND + nbytes + BAND,), FILL, dtype=torch.uint8, device=like.device)
    payload = buffer[BAND : BAND + nbytes].view(like.dtype).as_strided(like.shape, like.stride())
    with torch.no_grad():
        payload.copy_(like)
    if like.requires_grad:
        payload.requires_grad_(True)
    what = f"{str(like.dtype).removeprefix('torch.')}{list(like.shape)}" + (f" from {label}" if label else "")
    return payload, _Banded(buffer, payload, tuple(like.shape), nbytes, what)


def _breach(record: _Banded) -> Breach | None | str:
    import torch

    if tuple(record.payload.shape) != record.shape:
        return f"{record.label}: resized to {list(record.payload.shape)} after allocation, its band not checked"
    band = torch.cat([record.buffer[:BAND], record.buffer[BAND + record.nbytes :]]).cpu()
    changed = (band != FILL).nonzero().flatten().tolist()
    if not changed:
        return None
    offsets = [o - BAND if o < BAND else o - BAND + record.nbytes for o in changed]
    return Breach(record.label, record.nbytes, byte_ranges(offsets))


@dataclass
class Guard:
    """The bands of one case: allocations made under ``guarded`` and operands from ``banded_copy``."""

    records: list[_Banded] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    def copy(self, tensor: Any, label: str = "operand") -> Any:
        out, record = banded(tensor, label)
        if record is not None:
            self.records.append(record)
        return out

    def breaches(self) -> list[Breach]:
        """Every band that changed; call after ``settle``."""
        found = []
        for record in self.records:
            got = _breach(record)
            if isinstance(got, str):
                self.unchecked.append(got)
            elif got is not None:
                found.append(got)
        return found


def banded_copy(guard: Guard, value: Any) -> Any:
    """``value`` with every tensor in it (tuples, lists, dicts) replaced by a banded copy: the
    in-place operands and inputs of a call."""
    import torch

    if isinstance(value, torch.Tensor):
        return guard.copy(value)
    if isinstance(value, (tuple, list)):
        return type(value)(banded_copy(guard, v) for v in value)
    if isinstance(value, dict):
        return {k: banded_copy(guard, v) for k, v in value.items()}
    return value


def _mode(guard: Guard) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Banding(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            out = func(*args, **(kwargs or {}))
            name = str(func.name()).removeprefix("aten::")
            if (name if "." in name else f"{name}.default") not in ALLOCATING or not hasattr(out, "numel"):
                return out
            payload, record = banded(out, f"{func.name()} at {_caller()}")
            if record is not None:
                guard.records.append(record)
            return payload

    return Banding()


@contextlib.contextmanager
def guarded(guard: Guard | None = None) -> Iterator[Guard]:
    """Every tensor an allocating aten op makes inside the block lies inside guard bands."""
    guard = guard or Guard()
    with _mode(guard):
        yield guard


def settle(device: str) -> str | None:
    """Wait for the device and run a canary: the error line of a fault the case left behind
    (charged to that case), or None."""
    import torch

    try:
        module = getattr(torch, device.split(":")[0], None)
        sync = getattr(module, "synchronize", None)
        if callable(sync) and device != "cpu":
            sync()
        canary = torch.arange(8, device=device, dtype=torch.int32)
        got = int((canary * 2).sum().item())
        if got != 56:
            return f"the canary kernel computed {got}, not 56: the device is not sane after this case"
    except Exception as exc:  # a deferred fault surfaces at the sync or the canary
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def verdict(what: str, guard: Guard, fault: str | None) -> str | None:
    """The failure message of a case, or None: a device fault first (it makes the bands
    unreadable), else every changed band."""
    if fault is not None:
        return f"{what}: device fault after the call (synchronise and canary): {fault}"
    found = guard.breaches()
    if not found:
        return None
    return f"{what}: writes outside the tensors: " + "; ".join(str(b) for b in found)
