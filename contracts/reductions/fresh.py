"""The fresh-process batches ``test_processes`` compares with: every op's cases in a process
with an empty Triton cache and, on hardware, in another with the cache the first one filled.
Described without torch, so the session can start them before its workers (``hardware.shared``)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.config.settings import Settings
from pytest_fl_contract.hardware import isolation, shared
from pytest_fl_contract.hardware.device import device_of
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.reductions import Case

# the third reaches the multi-row non-inner kernels: two rows of outputs, the reduced extent past
# one 1024-wide tile, columns past one program (a fresh process that compiles them wrong only cold)
PROCESS_CASES = [Case((3, 5, 4), 1), Case((3, 4, 8), -1), Case((2, 1100, 5), 1)]
NAME = "fl-fresh-processes"


def job(settings: Settings, directory: str | Path) -> shared.Job:
    # every row of the registry, not ops_for(): that imports flag_gems, which held the
    # controller 5 - 7 s before it started its workers; a row the installed FlagGems lacks
    # raises in the child, and no case asks for it
    calls = tuple(
        (op.name, fitted(c, op, settings.sweep).shape, c.dim, "float32")
        for op in ROWS.rows("reductions")
        for c in PROCESS_CASES
    )
    emulation = (settings.emulation.profile, settings.emulation.defects) if settings.emulation else None
    temperatures = ("cold",) if emulation else ("cold", "warm")  # the interpreter compiles nothing
    base = Path(directory) / NAME
    batches = [
        (
            t,
            asdict(
                isolation.Batch(
                    calls,
                    device_of(settings),
                    f"{base}-{t}.pt",
                    settings.workaround,
                    emulation,
                    cache_dir=f"{base}-triton-cache",
                    autotune=settings.autotune.mode,
                )
            ),
        )
        for t in temperatures
    ]
    return shared.Job(str(directory), NAME, f"{__name__}:run", batches)


def run(batches: list[tuple[str, dict[str, Any]]]) -> dict[str, tuple[str | None, str]]:
    """Each batch in turn (the warm one reads the cache the cold one filled): {temperature:
    (its results file, or None and why)}."""
    out: dict[str, tuple[str | None, str]] = {}
    for temperature, data in batches:
        batch = isolation.Batch.from_json(data)
        why = isolation.run_batch(batch)
        out[temperature] = (None if why else batch.out, why)
    return out
