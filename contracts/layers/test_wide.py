"""Wide extents: a normalized extent past 2**20 elements, Triton's largest tile (registry:
Layer.wide).  A kernel that takes the extent as one tile does not compile there - group
norm's forward takes a whole group (next_pow2(C / groups) x next_pow2(H * W)), so a 1024 x 1024
map with two channels a group fails - and one that loops over it holds.  The interpreter
refuses the tile alike: every lane runs it, forward only (a few seconds emulated)."""

from pytest_fl_contract.families.layers import check, make_inputs


def test_wide(flag_gems, fl_device, wide_layer, wide_case):
    check(
        wide_layer,
        wide_case,
        make_inputs(wide_layer, wide_case),
        device=fl_device,
        dtype="float32",
        gems=flag_gems,
        what=f"{wide_case.id}: ",
    )
