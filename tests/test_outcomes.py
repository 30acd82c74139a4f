"""The contracts tell workarounds apart: the seed's own, put under them, leaves ops wrong.

The CPU lanes' own outcomes (the cpu lane passes, the emulated Iluvatar lane passes with
the workaround and, without it, fails a contract for every op the defect reaches on each
FlagGems line) are the main job's verdicts (``ci/manifest.yaml``'s ``catch:`` lists, held to
the scan of FlagGems' source by ``test_coverage``); they are not run twice here."""

from __future__ import annotations

from collections import defaultdict

import pytest
from junitparser import JUnitXml

from pytest_fl_contract.reporting.junit import count

from .conftest import ROOT

SELECT = ["-k", "(test_accuracy and float32) or test_determinism", "-p", "xdist", "-n", "0"]


def failures(pytester, run_subprocess, *lane_args, select=SELECT):
    """Run the contracts; the failing ops per contract, as the lane's JUnit summary says."""
    result = run_subprocess(
        str(ROOT / "contracts" / "reductions"),
        "-p",
        "fl_contract",
        *lane_args,
        *select,
        "--junitxml=lane.xml",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    summary = count(JUnitXml.fromfile(str(pytester.path / "lane.xml")), "lane").summary
    failed = defaultdict(set)  # contract -> ops
    for op, contracts in summary.failures.items():
        for contract in contracts:
            failed[contract].add(op)
    return result, dict(failed)


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
    result, failed = failures(
        pytester,
        run_subprocess,
        "--platform",
        "iluvatar",
        "--fl-emulate",
        "--fl-workaround",
        "seed_workaround",
        "--fl-source-root",
        str(pytester.path),
        select=["-k", "(test_accuracy and float32) or test_determinism or logsumexp", *SELECT[2:]],
    )
    assert result.ret == 1
    assert failed["accuracy"] == {"mean", "argmax"}
    assert failed["determinism"] == {"mean", "argmax"}
    assert failed["out"] == {"logsumexp"}
