"""out=: the op writes its result into the buffer it is given (NaN-filled beforehand, so a
partial write shows) and returns that buffer, over each case of the sweep."""

from pytest_fl_contract.families.tensorops import check


def test_out(flag_gems, fl_device, out_op):
    for case in out_op.cases["quick"]:
        check(
            out_op,
            case,
            out_op.operands(case),
            device=fl_device,
            dtype="float32",
            gems=flag_gems,
            out=True,
            what="out=: ",
        )
