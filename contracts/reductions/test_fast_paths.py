"""The workaround's own fast path, on every plan family this device takes (``workarounds/paths.py``).

Its kernels run on the vendor's compiler too, and the sweeps' small shapes reach only its
one-launch tiles and slabs: a split that reads the next m's rows, a merge of split statistics
that forgets to rescale, a slab step that is not a whole number of rows, passed them all.
Each case runs the smallest shape that takes its path on this device's model, on columns of
random values, of values far from zero with and without a spike in the last row, and (softmax)
opening with -inf rows, side by side in one call (``hostile``); checks that the call launched
that path's kernels, that each family of columns agrees with float64 torch, and (on hardware,
where programs run at once) gives the same bits twice, and a third time on the fast path's own
launches of its compiled kernels: the interpreter runs programs one at a time, and sees every
lane a kernel loads (none may lie outside its tensors, stored or not).  Half-precision softmax
runs once more with ``half_to_float``.  A path this device's model never takes within the size
limit is skipped, saying so.  The parameters (op, plan family, dtype) come from the conftest (``fast_path_params``).
"""

import pytest
import torch
from pytest_fl_contract.contracts.reductions.sweeps import assert_agrees

from pytest_fl_contract.families.reductions import bits, make_input
from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.registry.reductions import Case
from pytest_fl_contract.testing.spy import spy_launches
from pytest_fl_contract.workarounds import masked_reductions, paths

FAST = "pytest_fl_contract.workarounds.fastpath"
LIMIT, LIMIT_EMULATED = 1 << 26, 1 << 22  # elements: the interpreter runs a few million in seconds
OFFSET, SPREAD, SPIKE = -100.0, 30.0, 200.0


FAMILIES = (
    "random values",
    f"values around {OFFSET:g}",
    f"values around {OFFSET:g} with a {SPIKE:g} spike in the last row",
    f"values around {2 * OFFSET:g} in columns opening with -inf rows",
)  # the last: softmax only


def families(softmax: bool) -> tuple[str, ...]:
    """The families ``hostile`` deals columns round: the -inf heads are softmax's alone."""
    return FAMILIES if softmax else FAMILIES[:-1]


def hostile(x: torch.Tensor, softmax: bool) -> torch.Tensor:
    """``x`` (M, N, K) with its (m, k) columns dealt round ``FAMILIES``: column c = m * K + k
    belongs to family c % F (F = 4 for softmax, 3 otherwise), so every tile, split and slab of
    the plan holds columns of each, and one call checks them all (on the interpreter a call
    costs seconds, and its cost is the kernel's steps, not its values).

    - random values: ``x`` as it is.
    - values around -100 with a spread of 30: a running maximum that starts at 0 rather than
      -inf shows (exp underflows to a zero sum); sums of hundreds of them pass half
      precision's range, so a sum narrowed to the input's dtype before its scale or in its
      partials shows.
    - the same with 200 in the last row, its column's maximum by far: a split merge or a row
      tail that misses the last split's maximum shows (exp overflows).
    - softmax: -inf in the leading rows, all but the last, the first half, or every row
      (torch's answer there: NaN), masked attention along a non-inner dim, on values around
      -200, every other column with the spike (the first without).  A fold, a split's
      statistics or a merge whose ``-inf`` guard is gone computes exp(-inf - -inf) = NaN for
      a block that holds only -inf, and a column that still has finite values turns NaN; a
      maximum folded from 0 rather than -inf underflows exp of every finite value (below
      -104 in float32) to a zero sum, even where one is left."""
    y = x.float().cpu().clone()
    M, N, K = y.shape
    count = len(families(softmax))
    column = torch.arange(M * K).reshape(M, 1, K)
    family, nth = column % count, column // count
    y = torch.where(family > 0, y * SPREAD + torch.where(family == 3, 2 * OFFSET, OFFSET), y)
    spiked = (family == 2) | ((family == 3) & (nth % 2 == 1))
    y[:, -1:, :] = torch.where(spiked, torch.tensor(SPIKE), y[:, -1:, :])
    if softmax:
        heads = torch.tensor([N - 1, N // 2, N])[nth % 3]  # -inf rows a column of the last family opens with
        y.masked_fill_((family == 3) & (torch.arange(N).reshape(1, N, 1) < heads), float("-inf"))
    return y.to(x.dtype).to(x.device)


def assert_families_agree(op, got: torch.Tensor, y: torch.Tensor, what: str, **kwargs) -> None:
    """Each family of ``hostile``'s columns against float64 torch on its own: columns become
    the rows of an (M * K, N) problem reduced over dim 1, so a family's tolerance scales with
    its own values (random values are not held to a tolerance of 200s), and a failure names
    the family."""
    M, N, K = y.shape
    rows = y.permute(0, 2, 1).reshape(M * K, N)
    out = got.permute(0, 2, 1).reshape(M * K, N) if got.dim() == 3 else got.reshape(M * K)
    names = families(op.running_max)
    for index, name in enumerate(names):
        part = out[index :: len(names)]
        assert_agrees(op, lambda: part, rows[index :: len(names)], 1, what=f"{what}, {name}", **kwargs)  # noqa: B023 - called at once


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
        pytest.skip(
            "the fast path is the masked_reductions workaround's, and this lane runs "
            f"{'none' if fl_workaround is None else fl_workaround.module}"
        )
    if not fastpath.enabled():
        pytest.skip("the fast path is off (FL_CONTRACT_FASTPATH=0)")
    where = torch.device(fl_device)
    device = tilemodel.device_info(where.type, where.index or 0)
    elem = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    emulated = settings_of(request.config).emulation is not None
    limit = LIMIT_EMULATED if emulated else LIMIT
    shape = paths.path_shapes(paths.kind_of(op.fastpath), device, elem, limit).get(fast_path)
    if shape is None:
        pytest.skip(
            f"{fast_path.name}: this device's model ({device.source}) takes it for no shape of the "
            f"spread up to {limit} elements"
        )
    x = hostile(make_input(Case(shape, 1), dtype, fl_device, op=op), op.running_max)
    what = f"{op.name} {'x'.join(map(str, shape))} dim=1 {dtype} ({fast_path.name})"
    before = _out_of_bounds(fast_path.kernels, emulated)
    with spy_launches([FAST]) as spy:
        first = op.call(x, 1)
    assert set(spy.launched) == fast_path.kernels, (
        f"{what}: launched {spy.launched}, the path launches {sorted(fast_path.kernels)}"
    )
    assert_families_agree(op, first, x, what)
    if not emulated:
        again = op.call(x, 1)
        # bit for bit, not torch.equal of floats: softmax's all -inf columns are NaN in every call
        assert torch.equal(bits(first), bits(again)), f"{what}: two identical calls gave different bits"
        # the first call went through the launch cache (under the spy), the third through the
        # fast path's own launch of the compiled kernel (``fastpath._Site``): the same bits
        direct = op.call(x, 1)
        assert torch.equal(bits(first), bits(direct)), (
            f"{what}: the fast path's own launch of the compiled kernel "
            "gave other bits than the launch cache's (its arguments are passed wrong)"
        )
    if op.running_max and dtype == "float16":  # the kernel's store casts to the output's dtype, float32 here
        assert_families_agree(
            op,
            op.call(x, 1, half_to_float=True),
            x,
            f"{what}, half_to_float=True",
            torch_kwargs={"dtype": torch.float32},
        )
    grew = {k: n - before[k] for k, n in _out_of_bounds(fast_path.kernels, emulated).items() if n > before[k]}
    assert not grew, f"{what}: the fast path's kernels loaded lanes outside their tensors (lanes per kernel): {grew}"
