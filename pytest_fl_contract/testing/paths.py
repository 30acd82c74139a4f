"""Which kernel paths the op rows' cases really reach (test tooling, on the emulator).

Each row's ``paths`` says which kernel a call launches and whether it takes one tile or a
loop (``ONE_TILE_PER_CTA``); the emulated device records every launch with its constexpr
values (``DEVICE.launches``), so a path whose case no longer reaches it - a FlagGems release
that changed a heuristic - is seen, and so is a kernel of the op's module that no path
reaches.  ``python -m pytest_fl_contract.testing.paths`` prints the check as JSON (for
another FlagGems line in a child process) or, with ``--markdown``, the README's path table.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

from ..registry import ROWS, reductions
from ..registry.schema import flag_gems_version


@dataclass(frozen=True)
class Seen:
    op: str
    path: str
    kernel: str
    tiles: bool | None
    launched: tuple[tuple[str, Any], ...]  # (kernel, its switch's value) per launch
    reached: bool
    error: str = ""


def _inputs(op: reductions.Op, path: reductions.Path) -> Any:
    import torch

    g = torch.Generator().manual_seed(5)
    if path.dtype.startswith(("float", "bfloat")):
        return torch.randn(path.shape, generator=g).to(getattr(torch, path.dtype))
    return torch.randint(-9, 9, path.shape, generator=g, dtype=getattr(torch, path.dtype))


def _call(op: reductions.Op, path: reductions.Path, x: Any) -> None:
    import torch

    if path.entry is None:
        op.call(x, path.dim, **dict(path.kwargs))
        return
    out = op.torch_fn(x.double(), path.dim, False).float()
    op.fn(path.entry)(torch.randn_like(out), out, path.dim, torch.float32)


def trace(version: str | None = None) -> list[Seen]:
    """Every path of every installed op in this FlagGems line, called once with launches
    recorded (the emulator must be up and flag_gems imported)."""
    from ..emulation.device import DEVICE

    version = version or flag_gems_version()
    seen = []
    for op in ROWS.rows("reductions"):
        if not op.installed():
            continue
        for path in op.paths_in(version):
            DEVICE.launches = []
            error = ""
            try:
                _call(op, path, _inputs(op, path))
            except Exception as exc:  # a path that raises does not reach anything: said
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
            launched = tuple((kernel, switches.get(path.switch)) for kernel, switches in DEVICE.launches)
            reached = any(k == path.kernel and (path.tiles is None or value is path.tiles) for k, value in launched)
            seen.append(Seen(op.name, path.name, path.kernel, path.tiles, launched, reached and not error, error))
    DEVICE.launches = None
    return seen


def trace_layers(version: str | None = None) -> list[Seen]:
    """Every path of every installed normalization layer (``registry.layers``), called once
    through torch dispatch - forward, and backward where the path says - with launches recorded."""
    import flag_gems

    from ..emulation.device import DEVICE
    from ..families.layers import make_inputs, run

    version = version or flag_gems_version()
    seen = []
    for layer in ROWS.installed("layers", version):
        for path in layer.paths:
            if not path.in_version(version):
                continue
            DEVICE.launches = []
            error = ""
            try:
                run(
                    layer,
                    path.case,
                    make_inputs(layer, path.case),
                    device="cpu",
                    dtype="float32",
                    gems=flag_gems,
                    backward=path.backward,
                )
            except Exception as exc:  # a path that raises does not reach anything: said
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
            launched = tuple((kernel, None) for kernel, _ in DEVICE.launches)
            reached = any(k == path.kernel for k, _ in launched)
            seen.append(Seen(layer.name, path.name, path.kernel, None, launched, reached and not error, error))
    DEVICE.launches = None
    return seen


def unreached_layers(seen: list[Seen]) -> dict[str, list[str]]:
    """Per layer, the kernels of its module no path launched and the row does not explain."""
    missing: dict[str, list[str]] = {}
    for layer in ROWS.rows("layers"):
        mine = [s for s in seen if s.op == layer.name]
        if not mine:
            continue
        names = {k for s in mine for k, _ in s.launched}
        for kernel in _kernels_in(layer.module):
            if kernel not in names and kernel not in layer.unreached:
                missing.setdefault(layer.name, []).append(kernel)
    return missing


def _kernels_in(module_name: str) -> tuple[str, ...]:
    import triton

    module = sys.modules[module_name]
    return tuple(
        sorted(
            name
            for name, value in vars(module).items()
            if "kernel" in name and isinstance(value, triton.runtime.KernelInterface)
        )
    )


def kernels_of(op: reductions.Op) -> tuple[str, ...]:
    """The Triton kernels the op's FlagGems module defines (launchable objects named *kernel*)."""
    import triton

    module = sys.modules[op.module]
    return tuple(
        sorted(
            name
            for name, value in vars(module).items()
            if "kernel" in name and isinstance(value, triton.runtime.KernelInterface)
        )
    )


def unreached(seen: list[Seen]) -> dict[str, list[str]]:
    """Per op, its kernels (and one-tile / loop sides of a switch) that no path launched and
    the row does not explain."""
    missing: dict[str, list[str]] = {}
    for op in ROWS.rows("reductions"):
        mine = [s for s in seen if s.op == op.name]
        if not mine:
            continue
        launched = {pair for s in mine for pair in s.launched}
        names = {k for k, _ in launched}
        for kernel in kernels_of(op):
            if kernel in op.unreached:
                continue
            if kernel not in names:
                missing.setdefault(op.name, []).append(kernel)
                continue
            values = {v for k, v in launched if k == kernel}
            if values & {True, False} and not {True, False} <= values:
                side = "a loop over tiles" if True in values else "one tile"
                missing.setdefault(op.name, []).append(f"{kernel} ({side})")
    return missing


def main(argv: list[str] | None = None) -> int:
    from ..emulation.interpreter import bring_up
    from ..hardware.device import import_flag_gems

    bring_up("nvidia-small")
    import_flag_gems()
    seen, layer_seen = trace(), trace_layers()
    print(
        json.dumps(
            {
                "version": flag_gems_version(),
                "seen": [asdict(s) for s in seen + layer_seen],
                "unreached": {**unreached(seen), **unreached_layers(layer_seen)},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
