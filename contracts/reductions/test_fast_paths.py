"""The workaround's own fast path, on every plan family this device takes (``workarounds/paths.py``).

Its kernels run on the vendor's compiler too, and the sweeps' small shapes reach only its
one-launch tiles and slabs: a split that reads the next m's rows, a merge of split statistics
that forgets to rescale, a slab step that is not a whole number of rows, passed them all.
Each case runs the smallest shape that takes its path on this device's model, checks that
the call launched that path's kernels, agrees with float64 torch, and (on hardware, where
programs run at once) gives the same bits twice, and a third time on the fast path's own
launches of its compiled kernels: the interpreter runs programs one at a time, and sees every
lane a kernel loads (none may lie outside its tensors, stored or not).  Then the
same plan once more on values far from zero (``far_from_zero``), and a softmax plan on
columns that open with -inf rows (``neg_inf_heads``) and, in half precision, with
``half_to_float``.  A path this device's model never takes within the size limit is
skipped, saying so.  The
parameters (op, plan family, dtype) come from the conftest (``fast_path_params``).
"""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import Case, assert_agrees, make_input

from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.testing.spy import spy_launches
from pytest_fl_contract.workarounds import masked_reductions, paths

FAST = "pytest_fl_contract.workarounds.fastpath"
LIMIT, LIMIT_EMULATED = 1 << 26, 1 << 22  # elements: the interpreter runs a few million in seconds
OFFSET, SPREAD, SPIKE = -100.0, 30.0, 200.0


def far_from_zero(x: torch.Tensor) -> torch.Tensor:
    """``x`` (M, N, K) as values around -100 with a spread of 30, except the last row of every
    other (m, k) column, which holds 200: its column's maximum by far.  A negative column shows
    a running maximum that starts at 0 rather than -inf (exp underflows to a zero sum); a spike
    in the last row shows a split merge or a row tail that misses the last split's maximum
    (exp overflows); sums of hundreds of such values pass half precision's range, so a sum
    narrowed to the input's dtype before its scale or in its partials shows."""
    y = x.float().cpu().mul(SPREAD).add_(OFFSET)
    M, _, K = y.shape
    y.select(1, -1).masked_fill_((torch.arange(M * K) % 2 == 0).reshape(M, K), SPIKE)
    return y.to(x.dtype).to(x.device)


def neg_inf_heads(x: torch.Tensor) -> torch.Tensor:
    """``x`` (M, N, K) with -inf in the leading rows of three (m, k) columns in four: all rows
    but the last, the first half, or every row (torch's answer there: NaN).  Masked attention
    along a non-inner dim looks like this.  A fold, a split's statistics or a merge whose
    ``-inf`` guard is gone computes exp(-inf - -inf) = NaN for a block that holds only -inf,
    and a column that still has finite values turns NaN."""
    y = x.float().cpu().clone()
    M, N, K = y.shape
    heads = torch.tensor([0, N - 1, N // 2, N])[torch.arange(M * K) % 4].reshape(M, 1, K)  # -inf rows a column opens with
    return y.masked_fill_(torch.arange(N).reshape(1, N, 1) < heads, float("-inf")).to(x.dtype).to(x.device)


def _out_of_bounds(kernels: frozenset[str], emulated: bool) -> dict[str, int]:
    """On the interpreter, which sees every lane a kernel loads: the lanes each kernel has
    loaded from outside its tensors so far (on hardware: nothing to read)."""
    if not emulated:
        return {}
    from pytest_fl_contract.emulation.device import out_of_bounds_lanes

    return out_of_bounds_lanes(kernels)


def test_fast_path(request, flag_gems, fl_device, fl_workaround, fast_op, fast_path, dtype):
    from pytest_fl_contract.workarounds import fastpath, tilemodel

    op = fast_op
    if fl_workaround is None or fl_workaround.module != masked_reductions.__name__:
        pytest.skip("the fast path is the masked_reductions workaround's, and this lane runs "
                    f"{'none' if fl_workaround is None else fl_workaround.module}")
    if not fastpath.enabled():
        pytest.skip("the fast path is off (FL_CONTRACT_FASTPATH=0)")
    where = torch.device(fl_device)
    device = tilemodel.device_info(where.type, where.index or 0)
    elem = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    emulated = settings_of(request.config).emulation is not None
    limit = LIMIT_EMULATED if emulated else LIMIT
    shape = paths.path_shapes(paths.kind_of(op.fastpath), device, elem, limit).get(fast_path)
    if shape is None:
        pytest.skip(f"{fast_path.name}: this device's model ({device.source}) takes it for no shape of the "
                    f"spread up to {limit} elements")
    x = make_input(Case(shape, 1), dtype, fl_device, op=op)
    what = f"{op.name} {'x'.join(map(str, shape))} dim=1 {dtype} ({fast_path.name})"
    before = _out_of_bounds(fast_path.kernels, emulated)
    with spy_launches([FAST]) as spy:
        first = op.call(x, 1)
    assert set(spy.launched) == fast_path.kernels, f"{what}: launched {spy.launched}, the path launches {sorted(fast_path.kernels)}"
    assert_agrees(op, lambda: first, x, 1, what=what)
    if not emulated:
        again = op.call(x, 1)
        assert torch.equal(first, again), f"{what}: two identical calls gave different bits"
        # the first call went through the launch cache (under the spy), the third through the
        # fast path's own launch of the compiled kernel (``fastpath._Site``): the same bits
        direct = op.call(x, 1)
        assert torch.equal(first, direct), (f"{what}: the fast path's own launch of the compiled kernel gave "
                                            "other bits than the launch cache's (its arguments are passed wrong)")
    far = far_from_zero(x)
    assert_agrees(op, lambda: op.call(far, 1), far, 1, what=f"{what}, values around {OFFSET:g} with {SPIKE:g} spikes")
    if op.running_max:  # the fast path's softmax plans
        heads = neg_inf_heads(far)
        assert_agrees(op, lambda: op.call(heads, 1), heads, 1, what=f"{what}, columns opening with -inf rows")
        if dtype == "float16":  # the kernel's store casts to the output's dtype, float32 here
            assert_agrees(op, lambda: op.call(x, 1, half_to_float=True), x, 1, what=f"{what}, half_to_float=True",
                          torch_kwargs={"dtype": torch.float32})
    grew = {k: n - before[k] for k, n in _out_of_bounds(fast_path.kernels, emulated).items() if n > before[k]}
    assert not grew, f"{what}: the fast path's kernels loaded lanes outside their tensors (lanes per kernel): {grew}"
