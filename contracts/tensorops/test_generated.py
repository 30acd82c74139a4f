"""Generated shapes: hypothesis draws matmul extents (M, K and N from 1 to 65 at and around tile
edges, with or without a batch) and index-op extents (rank 1-3, the indexed dim, an index
extent below and past the dim's size), and every draw must give torch's answer in float64.
Seeded per lane like the reductions' generated contract (the same draws on every run of a
lane); a draw that meets a known FlagGems defect the lane's workaround does not cover is left
to that defect's own strict xfail.  A failure prints the shrunk case."""

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pytest_fl_contract.contracts.reductions.test_generated import lane_seed

from pytest_fl_contract.families.tensorops import check
from pytest_fl_contract.plugin import session_of
from pytest_fl_contract.registry.schema import flag_gems_version
from pytest_fl_contract.registry.tensorops import MATMUL, TensorCall, TensorCase
from pytest_fl_contract.session import note_seed

SIZES = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 63, 64, 65)
BUDGET = {"quick": 10, "full": 60}


@st.composite
def cases(draw, op):
    if op.family == MATMUL:
        m, k, n = (draw(st.sampled_from(SIZES)) for _ in range(3))
        return TensorCase((draw(st.integers(1, 3)), m, k, n) if op.name == "bmm" else (m, k, n))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES[:10])) for _ in range(rank))
    dim = draw(st.integers(0, rank - 1))
    top = shape[dim] if op.name == "scatter" else 2 * shape[dim] + 1  # scatter's index is unique along dim
    return TensorCase(shape, dim=dim, index=draw(st.integers(1, top)))


def test_generated(flag_gems, fl_device, fl_settings, request, tensor_op):
    op = tensor_op
    session = session_of(request.config)
    lane = f"{fl_settings.platform.name}/{request.config.option.junitprefix}"
    version, emulated = flag_gems_version(), fl_settings.emulation is not None
    wrapped = session.workaround is not None and f"{op.module}.{op.entry}" in set(session.workaround.entries)
    note_seed(request.node, lane_seed(lane, 0))
    ran = []

    @seed(lane_seed(lane, 0))
    @settings(
        max_examples=BUDGET[fl_settings.sweep], deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=cases(op))
    def draw(case):
        call = TensorCall(case, routed=wrapped, contract="generated")
        if set(op.known_defects(call, version, emulated)) - set(session.covered):
            return
        if not emulated and op.corrupting(call, version):
            return
        ran.append(case)
        check(op, case, op.operands(case), device=fl_device, dtype="float32", gems=flag_gems, what="generated: ")

    draw()
    if not ran:
        pytest.skip(f"{op.name}: every draw met a known FlagGems defect")
