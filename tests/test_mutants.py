"""Every mutant of the zoo is killed by the contracts (CI runs the whole zoo here)."""

from __future__ import annotations

import pytest

from pytest_fl_contract.cli import main
from pytest_fl_contract.testing import run, zoo
from pytest_fl_contract.util import FlContractError

from .conftest import ROOT


def test_zoo_has_at_least_twelve_described_mutants():
    assert len(zoo.MUTANTS) >= 12
    assert all(m.description and m.select for m in zoo.MUTANTS.values())


def test_unknown_mutant_is_one_line(capsys):
    assert main(["mutants", "--only", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("fl-contract: error: unknown mutant 'nosuch'; known: masked_row_load")
    with pytest.raises(FlContractError):
        zoo.get("nosuch")


def test_unknown_mutant_option_is_a_usage_error(pytester, run_subprocess):
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "fl_contract", "-p", run.PLUGIN, "--platform", "cpu", "--fl-mutant", "nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown mutant 'nosuch'" in result.stderr.str()


def test_vendor_lanes_never_see_the_zoo(pytester, run_subprocess):
    """The zoo is opt-in: the plugin alone has no mutant option, in --help or on the line."""
    result = run_subprocess("-p", "fl_contract", "--help")
    assert result.ret == 0 and "--fl-platforms-file" in result.stdout.str()
    assert "mutant" not in result.stdout.str()
    pytester.makepyfile("def test_x(): pass")
    result = run_subprocess("-p", "fl_contract", "--platform", "nvidia", "--fl-mutant", "masked_row_load")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.slow
def test_every_mutant_is_killed():
    verdicts = run.run_zoo([], ROOT / "contracts" / "reductions", jobs=2)
    survivors = {v.mutant: (v.status, v.detail) for v in verdicts if v.status != "killed"}
    assert not survivors, run.table(verdicts)
    assert all(v.killers for v in verdicts)


def test_sole_killers_name_what_only_one_contract_catches():
    from pytest_fl_contract.testing.run import Verdict, every_killer_table, sole_killers

    verdicts = [
        Verdict("a", "killed", ("dims:test_every_dim[x]", "dims:test_every_dim[y]"), 1.0),
        Verdict("b", "killed", ("dims:test_every_dim[x]", "layout:test_layout[z]"), 1.0),
        Verdict("c", "killed", ("special_values:test_special_values[n]",), 1.0),
        Verdict("d", "survived", (), 1.0),
    ]
    assert sole_killers(verdicts) == {"dims": ["a"], "special_values": ["c"]}
    text = every_killer_table(verdicts)
    assert "| b | killed | dims 1, layout 1 |" in text and "3 of 4 mutants killed" in text
