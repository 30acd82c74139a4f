"""Generated shapes: hypothesis draws ranks 1-4, sizes that are 1, primes, powers of two and
their neighbours and tile boundaries, a dim, keepdim and a float dtype, and every draw must
do what torch does.  Derandomized with a seed per lane (the same examples on every run of a
lane, different ones on another lane); a small budget on the interpreter, a large one on
hardware.  A failure prints the shrunk example as a one-line reproduction.  Draws that run
into a known FlagGems defect the lane's workaround does not cover are left to that
defect's own strict xfail elsewhere."""

import math
import zlib

import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st
from pytest_fl_contract.contracts.reductions.sweeps import disagreement

from pytest_fl_contract.families.reductions import make_input
from pytest_fl_contract.plugin import session_of, settings_of
from pytest_fl_contract.registry.reductions import Call, Case
from pytest_fl_contract.registry.schema import flag_gems_version
from pytest_fl_contract.session import note_seed

SIZES = [1, 2, 3, 5, 7, 8, 13, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129]
BUDGET = {"quick": 40, "full": 200}
FAMILY_BUDGET = 20  # the op families on the interpreter: a few milliseconds a program, smaller draws (FAMILY_LIMIT)
# Hardware compiles a kernel per new shape: 200 draws of one op in one test were the lane's
# long pole (114 s for prod on an H200).  Shards, each with its own seed and a share of the
# budget, let xdist spread them over workers; the interpreter keeps one.
SHARDS = {"quick": 1, "full": 8}


LIMIT = {"quick": 2**12, "full": 2**18}  # elements: the interpreter runs programs one by one
FAMILY_LIMIT = 2**10  # the op families on the interpreter: one program per output row (``sweeps.fitted``)


@st.composite
def draws(draw, toy: bool, limit: int):
    rank = draw(st.integers(1, 4))
    sizes = SIZES[:8] if toy else SIZES
    shape = tuple(draw(st.sampled_from(sizes)) for _ in range(rank))
    assume(math.prod(shape) <= limit)
    dim = draw(st.integers(-rank, rank - 1))
    return shape, dim, draw(st.booleans()), draw(st.sampled_from(["float32", "float16", "bfloat16"]))


def lane_seed(lane: str, shard: int) -> int:
    """The hypothesis seed of a lane's shard: the same draws on every run of that lane, and
    for every op (``scripts/replay_generated.py`` lists them from this)."""
    return zlib.crc32(f"{lane}/{shard}".encode() if shard else lane.encode())


def problem_of(op, draw, device: str, *, routed: bool, covered=frozenset(), version=None, emulated=False):
    """What FlagGems gets wrong on one draw, or None; None too for a draw that meets a known
    defect not covered, whose own strict xfail stands for it."""
    shape, dim, keepdim, dtype = draw
    call = Call(shape, dim, dtype, routed=routed)
    if set(op.known_defects(call, version, emulated)) - set(covered):
        return None
    if not emulated and op.corrupting(call, version):  # never run on hardware, as the conftest skips such cases
        return None
    x = make_input(Case(shape, dim), dtype, device, op=op)
    keep = keepdim and op.keepdim != "none"
    problem = disagreement(op, lambda: op.call(x, dim, keep), x, dim, keep)
    if problem is None:
        return None
    return (
        f"{problem}; reproduce: ROWS.get({op.name!r}).call(make_input(Case({shape}, {dim}), {dtype!r}, "
        f"{device!r}, op=ROWS.get({op.name!r})), {dim}, {keep})"
    )


def pytest_generate_tests(metafunc):
    shards = SHARDS[settings_of(metafunc.config).sweep]
    if "shard" in metafunc.fixturenames and shards > 1:
        metafunc.parametrize("shard", range(shards), ids=[f"shard{i}" for i in range(shards)], indirect=True)


@pytest.fixture
def shard(request) -> int:
    return getattr(request, "param", 0)


def test_generated(flag_gems, fl_device, fl_settings, request, any_op, shard):
    op = any_op
    session = session_of(request.config)
    quick = fl_settings.sweep == "quick"
    lane = f"{fl_settings.platform.name}/{request.config.option.junitprefix}"
    version, emulated = flag_gems_version(), fl_settings.emulation is not None
    toy = quick and op.interpreter == "toy"

    note_seed(request.node, lane_seed(lane, shard))
    limit = 2**8 if toy else FAMILY_LIMIT if quick and op.family != "reductions" else LIMIT[fl_settings.sweep]

    budget = FAMILY_BUDGET if quick and op.family != "reductions" else BUDGET[fl_settings.sweep]

    @seed(lane_seed(lane, shard))
    @settings(
        max_examples=budget // SHARDS[fl_settings.sweep] // (8 if toy else 1),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(draw=draws(toy, limit))
    def check(draw):
        if draw[3] == "bfloat16" and not fl_settings.platform.has("bf16"):
            return
        problem = problem_of(
            op, draw, fl_device, routed=session.wraps(op), covered=session.covered, version=version, emulated=emulated
        )
        assert problem is None, problem

    check()
