"""The same calls in fresh processes give the same results: bit for bit with this process's
and within tolerance of float64, from a cold Triton cache (an empty cache directory) and,
on hardware, from a warm one another process filled (FlagGems #6420: wrong only on the first
compile; the seed's own check: two separate processes, bit-identical).  On the CPU lane the
process half runs (the interpreter compiles nothing)."""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import Case, check, fitted

from pytest_fl_contract.hardware import isolation

PROCESS_CASES = [Case((3, 5, 4), 1), Case((3, 4, 8), -1)]


@pytest.fixture(scope="module")
def fresh(request, flag_gems, fl_settings, fl_device, fl_workaround, tmp_path_factory):
    """Every op's cases in one fresh process with an empty cache, and on hardware again
    with the cache that first one filled: ({(op, case id): result}, per temperature).  Once
    per run: the lane's xdist workers share it (an xdist worker's own config says so, not
    PYTEST_XDIST_WORKER, which a pytest started from a worker inherits: its base directory's
    parent is then every session's, and a batch of another run was read back)."""
    from pytest_fl_contract.contracts.reductions.sweeps import ops_for

    base = tmp_path_factory.getbasetemp()
    shared = str(base.parent if hasattr(request.config, "workerinput") else base)
    return isolation.once_per_run(shared, "fl-fresh-processes", lambda: _fresh(fl_settings, fl_device, fl_workaround,
                                                                               tmp_path_factory, ops_for))


def _fresh(fl_settings, fl_device, fl_workaround, tmp_path_factory, ops_for):
    ops = ops_for("full")
    calls = tuple((op.name, fitted(c, op, fl_settings.sweep).shape, c.dim, "float32") for op in ops
                  for c in PROCESS_CASES)
    cache = tmp_path_factory.mktemp("triton-cache")
    emulation = (fl_settings.emulation.profile, fl_settings.emulation.defects) if fl_settings.emulation else None
    temperatures = ("cold",) if emulation else ("cold", "warm")
    out = {}
    for temperature in temperatures:
        batch = isolation.Batch(calls, fl_device, str(tmp_path_factory.mktemp(temperature) / "results.pt"),
                                fl_settings.workaround if fl_workaround is not None else None, emulation,
                                cache_dir=str(cache), autotune=fl_settings.autotune.mode)
        results, why = isolation.run_batch(batch)
        out[temperature] = (dict(zip([(c[0], c[1], c[2]) for c in calls], results)) if results is not None else {}), why
    return out


@pytest.mark.parametrize("process_case", PROCESS_CASES, ids=lambda c: c.id)
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
        assert torch.equal(got.nan_to_num(), here.nan_to_num()), \
            f"{temperature} cache: a fresh process gave other bits than this one"
