"""A matmul's accumulator across K tiles: operands whose partial sums are a hundred times the
result (``values="cancelling"``: K's halves cancel), in every float dtype, against float64.
FlagGems' kernels accumulate in fp32 over the whole of K and round once; a kernel that rounds
its accumulator to a half type between tiles, or asks the dot for a half-type result, agrees
with torch on normal operands (the result and the partial sums are of one size there) and
loses whole units here."""

from pytest_fl_contract.families.tensorops import check


def test_partial_sums_past_the_result(flag_gems, fl_device, matmul_op, long_case, dtype):
    check(
        matmul_op,
        long_case,
        matmul_op.operands(long_case, values="cancelling"),
        device=fl_device,
        dtype=dtype,
        gems=flag_gems,
        what=f"K's halves cancel, {dtype}: ",
    )
