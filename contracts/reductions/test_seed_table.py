"""The seed's verification table as a contract: every op in it (sum, softmax, log_softmax,
prod, std, logsumexp) over dim 1 with N = 4 rows and K = 1024 columns.

On the BI-V150 the seed measured all of them wrong before the workaround (relative error
0.6 to 2.7e12) and <= 6e-8 after, against a CPU run.  Here the reference is float64, where
torch's own fp32 CPU result is up to ~1.3e-7 away (softmax), so the bound is two fp32
ulps of the largest magnitude (2**-22 = 2.4e-7): seven orders of magnitude below the
smallest error the defect produced.  Ops the installed FlagGems lacks skip, saying so."""

import pytest

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry import ROWS
from pytest_fl_contract.registry.reductions import Case

SEED_OPS = [op for op in ROWS.rows("reductions") if op.seed_table]
BOUND = 2.0**-22
SHAPES = {"quick": Case((2, 4, 1024), 1), "full": Case((556, 4, 1024), 1)}  # N=4, K=1024, dim=1
TOY = Case((1, 4, 128), 1)  # N=4 still: ops whose tl.reduce runs element by element on the interpreter


@pytest.mark.parametrize("seed_op", SEED_OPS, ids=lambda op: op.name)
def test_seed_table(flag_gems, fl_device, fl_settings, seed_op):
    op = seed_op
    if not op.installed():
        pytest.skip(f"flag_gems {flag_gems.__version__} has no {op.name} op")
    case = TOY if fl_settings.sweep == "quick" and op.interpreter == "toy" else SHAPES[fl_settings.sweep]
    x = make_input(case, "float32", fl_device, seed=4)
    reference = op.reference(x, case.dim)
    got = op.call(x, case.dim).detach().cpu().double()
    assert got.shape == reference.shape, f"{op.name}: shape {tuple(got.shape)} != {tuple(reference.shape)}"
    relative = ((got - reference).abs().max() / reference.abs().max()).item()
    assert relative <= BOUND, (
        f"{op.name} over dim 1 of {case.shape}: relative error {relative:.3g} > {BOUND:.3g} "
        "(the seed: 0.6 to 2.7e12 before the workaround, <= 6e-8 after)"
    )
