"""The same calls in fresh processes give the same results: bit for bit with this process's
and within tolerance of float64, from a cold Triton cache (an empty cache directory) and,
on hardware, from a warm one another process filled (FlagGems #6420: wrong only on the first
compile; the seed's own check: two separate processes, bit-identical).  On the CPU lane the
process half runs (the interpreter compiles nothing).  The batches run once per run, started
by the session before its workers where the run selects this whole file (``fresh.py``)."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions import fresh as batches
from pytest_fl_contract.contracts.reductions.sweeps import fitted

from pytest_fl_contract.families.reductions import check
from pytest_fl_contract.hardware import shared
from pytest_fl_contract.hardware.schedule import record_wait


@pytest.fixture(scope="module")
def fresh_run(request, flag_gems, fl_settings, tmp_path_factory):
    """({temperature: ({(op, shape, dim): result}, why)}, seconds waited on another process,
    [True] until a case has recorded that wait).  The directory is the run's: an xdist
    worker's own config says so, not PYTEST_XDIST_WORKER, which a pytest started from a
    worker inherits (its base directory's parent is then every session's)."""
    base = tmp_path_factory.getbasetemp()
    directory = base.parent if hasattr(request.config, "workerinput") else base
    job = batches.job(fl_settings, directory)
    got = shared.once_per_run(job)
    calls = [(c[0], tuple(c[1]), c[2]) for c in job.arg[0][1]["calls"]]
    results = {}
    for temperature, (path, why) in got.value.items():
        values = torch.load(path, weights_only=False) if path else None
        results[temperature] = (dict(zip(calls, values)) if values is not None else {}), why
    return results, got.waited, [True]


@pytest.fixture
def fresh(request, fresh_run):
    """The batches' results; the case whose set-up waited on them says how long, so the
    lane's longest-first record counts its own time, not the batches'."""
    results, waited, unrecorded = fresh_run
    if unrecorded:
        unrecorded.clear()
        record_wait(request.node, waited)
    return results


@pytest.mark.parametrize("process_case", batches.PROCESS_CASES, ids=lambda c: c.id)
def test_fresh_process(flag_gems, fl_device, fl_settings, any_op, process_case, fresh):
    op, case = any_op, fitted(process_case, any_op, fl_settings.sweep)
    g = torch.Generator().manual_seed(hash(tuple(case.shape)) % 10_000)
    x = torch.randn(case.shape, generator=g).to(fl_device)
    here = op.call(x, case.dim).cpu()
    for temperature, (results, why) in fresh.items():
        assert not why, f"{temperature} cache: {why}"
        got = results[(op.name, case.shape, case.dim)]
        assert not isinstance(got, str), f"{temperature} cache: the fresh process raised {got}"
        if op.kind != "index":
            check(op, got, x, case.dim)
        assert torch.equal(got.nan_to_num(), here.nan_to_num()), (
            f"{temperature} cache: a fresh process gave other bits than this one"
        )
