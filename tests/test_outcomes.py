"""The expected outcomes of the CPU lanes (the README shows them): the cpu lane passes;
the emulated Iluvatar lane fails accuracy and determinism for every op whose kernel uses
a 2-D row mask without the workaround, and passes with it.  If the contracts could not
tell these apart they would be broken."""

from __future__ import annotations

import os
from collections import defaultdict

import pytest
from junitparser import JUnitXml

from pytest_fl_contract.lanes.junit import count
from pytest_fl_contract.registry import ops

from .conftest import ROOT

SELECT = ["-k", "(test_accuracy and float32) or test_determinism", "-p", "xdist", "-n", "2"]
ROW_MASK_OPS = {"sum", "mean", "softmax", "argmax"}  # flag_gems 5.0.2: ops with *_non_inner kernels


def failures(pytester, run_subprocess, *lane_args, select=SELECT):
    """Run the contracts; the failing ops per contract, as the lane's JUnit summary says."""
    result = run_subprocess(str(ROOT / "contracts" / "reductions"), "-p", "fl_contract", *lane_args, *select,
                            "--junitxml=lane.xml", "-q", "-p", "no:cacheprovider")
    summary = count(JUnitXml.fromfile(str(pytester.path / "lane.xml")), "lane").summary
    failed = defaultdict(set)  # contract -> ops
    for op, contracts in summary.failures.items():
        for contract in contracts:
            failed[contract].add(op)
    return result, dict(failed)


@pytest.mark.slow
def test_cpu_lane_passes(pytester, run_subprocess):
    result, failed = failures(pytester, run_subprocess, "--platform", "cpu")
    assert result.ret == 0 and failed == {}


@pytest.mark.slow
def test_emulated_iluvatar_without_workaround_is_caught_per_op(pytester, run_subprocess):
    result, failed = failures(pytester, run_subprocess, "--platform", "iluvatar", "--fl-emulate", "--fl-no-workaround")
    assert result.ret == 1
    assert failed["accuracy"] == ROW_MASK_OPS
    assert failed["determinism"] == ROW_MASK_OPS
    result.stdout.fnmatch_lines(["*emulated defect: loads_seen=*faulted_loads=*"])


@pytest.mark.slow
def test_emulated_iluvatar_with_workaround_passes(pytester, run_subprocess):
    result, failed = failures(pytester, run_subprocess, "--platform", "iluvatar", "--fl-emulate")
    assert result.ret == 0 and failed == {}
    result.stdout.fnmatch_lines(["emulated defect: loads_seen=*"])


SEED_WORKAROUND = '''
"""The seed's torch_fl workaround, as reviewed: it wraps sum, prod, std, logsumexp, softmax
and log_softmax, and leaves every out= entry point alone."""
from pytest_fl_contract.workarounds import masked_reductions as mr

COVERS = ("masked_2d_row_load",)
SEED_LIST = {"sum_dim", "prod_dim", "std", "logsumexp", "softmax", "log_softmax"}


def install():
    every = mr.targets
    mr.targets = lambda: tuple(t for t in every() if t.attr in SEED_LIST and not t.out)
    return mr.install()


def uninstall():
    mr.uninstall()
'''


@pytest.mark.slow
def test_contracts_show_what_the_seed_workaround_misses(pytester, run_subprocess):
    """Put the seed's workaround under the contracts (--fl-workaround): on flag_gems 5.0.2
    mean and argmax stay wrong, and aten's logsumexp (through sum_dim_out) too."""
    pytester.makepyfile(seed_workaround=SEED_WORKAROUND)
    result, failed = failures(pytester, run_subprocess, "--platform", "iluvatar", "--fl-emulate",
                              "--fl-workaround", "seed_workaround", "--fl-source-root", str(pytester.path),
                              select=["-k", "(test_accuracy and float32) or test_determinism or logsumexp", *SELECT[2:]])
    assert result.ret == 1
    assert failed["accuracy"] == {"mean", "argmax"}
    assert failed["determinism"] == {"mean", "argmax"}
    assert failed["out"] == {"logsumexp"}




@pytest.mark.slow
def test_flaggems_54_line_is_caught_for_every_non_inner_op(pytester, run_subprocess, fg54_site):
    """On the seed's line every op of its table has a non-inner kernel: without the
    workaround each one fails the seed-table contract, and the accuracy sweep catches them
    all; with it, both hold."""
    pytester._monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fg54_site), str(ROOT)]))
    select = ["-k", "(test_accuracy and float32 and 3x5x64) or test_seed_table", "-p", "xdist", "-n", "2"]
    lane = ["--platform", "iluvatar", "--fl-emulate"]
    result, failed = failures(pytester, run_subprocess, *lane, "--fl-no-workaround", select=select)
    assert result.ret == 1
    assert failed["seed_table"] == {op.name for op in ops.OPS if op.seed_table}
    # index ops over (3, 5, 64): argmax's N = 5 is its known tile defect, argmin has no non-inner kernel; prod: toy shapes
    assert failed["accuracy"] == {op.name for op in ops.OPS if op.kind != "index" and op.interpreter != "toy"}
    result, failed = failures(pytester, run_subprocess, *lane, select=select)
    assert result.ret == 0 and failed == {}
