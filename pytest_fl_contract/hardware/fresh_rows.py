"""Every family's rows in fresh processes: each case of the lane's sweep called in a child
with an empty Triton cache and, on hardware, in another with the cache the first filled,
compared bit for bit with this process's call (FlagGems #6420: wrong only on a cold compile).
The reductions have their own batches (``contracts/reductions/fresh.py``: one call per op,
without the family protocol); the layers and tensor ops use these, so a row registered in
either family is in them with no other edit.

Described without torch, so a job is the same JSON in every process of a run
(``shared.once_per_run``: made once, by whichever process gets there first)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..config.settings import Settings
from ..registry import ROWS
from . import isolation, shared
from .device import device_of

NAME = "fl-fresh-rows"
DTYPE = "float32"


def calls(family: str, sweep: str, backward: bool) -> tuple[tuple[str, dict[str, Any], str, bool], ...]:
    """Every case of the sweep of every row of ``family`` (the registry's, not the installed
    FlagGems' selection: a row the installed line lacks raises in the child, and no case asks
    for it)."""
    return tuple((row.name, asdict(case), DTYPE, backward) for row in ROWS.rows(family) for case in row.cases[sweep])


def job(settings: Settings, family: str, backward: bool, directory: str | Path) -> shared.Job:
    emulation = (settings.emulation.profile, settings.emulation.defects) if settings.emulation else None
    temperatures = ("cold",) if emulation else ("cold", "warm")  # the interpreter compiles nothing
    base = Path(directory) / f"{NAME}-{family}"
    batches = [
        (
            t,
            asdict(
                isolation.RowBatch(
                    calls(family, settings.sweep, backward),
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
    return shared.Job(str(directory), f"{NAME}-{family}", f"{__name__}:run", batches)


def run(batches: list[tuple[str, dict[str, Any]]]) -> dict[str, tuple[str | None, str]]:
    """Each batch in turn (the warm one reads the cache the cold one filled): {temperature:
    (its results file, or None and why)}."""
    out: dict[str, tuple[str | None, str]] = {}
    for temperature, data in batches:
        batch = isolation.RowBatch.from_json(data)
        why = isolation.run_rows(batch)
        out[temperature] = (None if why else batch.out, why)
    return out


def results(
    got: dict[str, tuple[str | None, str]], family: str, sweep: str, backward: bool
) -> dict[str, tuple[dict[tuple[str, str], Any], str]]:
    """{temperature: ({(row, case id): outputs or the error}, why none)} from ``run``'s files."""
    import torch

    keys = [(row.name, case.id) for row in ROWS.rows(family) for case in row.cases[sweep]]
    out = {}
    for temperature, (path, why) in got.items():
        values = torch.load(path, weights_only=False) if path else None
        out[temperature] = (dict(zip(keys, values)) if values is not None else {}), why
    return out


def gathered(config: Any, settings: Settings, family: str, backward: bool, basetemp: Path) -> dict[str, Any]:
    """The run's fresh-process results for ``family`` (made once per run: an xdist worker's
    own config says it is one, and its base directory's parent is the run's)."""
    directory = basetemp.parent if hasattr(config, "workerinput") else basetemp
    made = job(settings, family, backward, directory)
    return results(shared.once_per_run(made).value, family, settings.sweep, backward)


def _same(a: Any, b: Any, tolerance: dict[str, float] | None = None) -> bool:
    """Bit for bit (NaN where NaN); within ``tolerance`` where the row sums in no fixed order."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        rtol, atol = (tolerance["rtol"], tolerance["atol"]) if tolerance else (0.0, 0.0)
        return torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    return torch.equal(a, b)


def check(row: Any, case: Any, here: dict[str, Any], fresh: dict[str, tuple[dict[tuple[str, str], Any], str]]) -> None:
    """Each fresh process's outputs of the case are this process's, bit for bit (NaN where
    this one has NaN); a row whose kernels accumulate with atomics (scatter_add_, index_add:
    the order of the adds, and so the last bits, differ from run to run on a GPU) within the
    row's own tolerance, which a kernel compiled wrong still breaks."""
    from ..families import of

    exact = not getattr(row, "accumulates", False)
    for temperature, (values, why) in fresh.items():
        assert not why, f"{temperature} cache: {why}"
        got = values.get((row.name, case.id))
        assert got is not None, f"{temperature} cache: the fresh process has no result for {row.name} {case.id}"
        assert not isinstance(got, str), f"{temperature} cache: the fresh process raised {got}"
        assert set(got) == set(here), f"{temperature} cache: outputs {sorted(got)}, here {sorted(here)}"
        for key, mine in here.items():
            mine = mine.detach().cpu()
            tolerance = None if exact else of(row).tolerance(row, case, DTYPE, key)
            assert _same(got[key], mine, tolerance), (
                f"{row.name} {case.id} {key}: a fresh process ({temperature} cache) gave other results than this "
                f"one{'' if exact else f' past its tolerance {tolerance}'} (shape {tuple(got[key].shape)} "
                f"{got[key].dtype}, here {tuple(mine.shape)} {mine.dtype})"
            )
