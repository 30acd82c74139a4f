"""One process, one kernel, changing sizes: each op called over a sequence of shapes that
share a kernel specialisation but differ in what a compiler may specialise on (a size of 1,
divisible by 16 or not, a power of two or not), interleaved A, B, A, C, B, each against
float64.  A kernel bound to the scalars of its first launch (FlagGems #4099: var_mean on
Iluvatar kept the first N) passes every contract that calls one shape per process."""

import pytest
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees, fitted

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.registry.reductions import Case

SEQUENCES = {  # N along dim 1 of (M, N, K), then along the last dim: the kernel's runtime N changes
    "non-inner": lambda ns: [Case((3, n, 64), 1) for n in ns] + [Case((1, ns[0], 64), 1)],
    "inner": lambda ns: [Case((3, 4, n), -1) for n in ns] + [Case((4, 1, ns[0]), -1)],  # M % 4 == 0: argmin
}


def _sizes_of(kind):
    # an index op's non-inner tile is N itself below 128 (a power of two compiles): keep to those
    return (4, 16, 4, 8, 16) if kind == "index" else (5, 16, 5, 12, 16)


# each form with a call every op's sequence makes (N = 16), whose known FlagGems defects the
# case is marked with (a defect of every call of the form, such as special_log_softmax's)
FORMS = [pytest.param(form, make((16,))[0], id=form) for form, make in SEQUENCES.items()]


@pytest.mark.parametrize("form, first", FORMS)
def test_interleaved_sizes(flag_gems, fl_device, fl_settings, any_op, form, first):
    op = any_op
    for i, case in enumerate(SEQUENCES[form](_sizes_of(op.kind))):
        case = fitted(case, op, fl_settings.sweep)
        x = make_input(case, "float32", fl_device, seed=i, op=op if op.kind == "index" else None)
        assert_agrees(
            op,
            lambda x=x, c=case: op.call(x, c.dim),
            x,
            case.dim,
            what=f"call {i + 1} of the sequence, {case.shape} dim={case.dim}",
        )


@pytest.mark.parametrize("form, first", FORMS)
def test_an_earlier_result_survives_a_later_call(flag_gems, fl_device, fl_settings, any_op, form, first):
    """A result held while the op runs again on other values of the same shape, then read: an
    output buffer cached per shape and handed out again overwrites it."""
    import torch

    op, case = any_op, fitted(first, any_op, fl_settings.sweep)
    index = op if op.kind == "index" else None
    x, y = (make_input(case, "float32", fl_device, seed=s, op=index) for s in (0, 1))
    try:
        held = op.call(x, case.dim)
    except Exception:  # refused (a known defect of the form, or torch's refusal): test_interleaved_sizes holds it
        pytest.skip(f"{op.name} refuses the call itself: no result to hold")
    kept = held.clone()
    op.call(y, case.dim)
    assert torch.equal(held.cpu(), kept.cpu()), f"{op.name}: the first call's result changed when it ran again"
    assert_agrees(op, lambda: held, x, case.dim, what="the first call's result, held")
