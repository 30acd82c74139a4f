"""Every mutant of the zoo is killed by the contracts (CI runs the whole zoo here)."""

from __future__ import annotations

from dataclasses import replace

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


@pytest.mark.parametrize("lane", [("--platform", "nvidia"), ()], ids=["compiled-lane", "plugin-inactive"])
def test_a_mutant_on_a_lane_that_compiles_is_a_usage_error(pytester, run_subprocess, lane):
    """A mutant rewrites a kernel's source for the interpreter: on a compiled lane (an H200's)
    it changed nothing and every contract passed, as if the mutant had been caught."""
    pytester.makepyfile("def test_x(): pass")
    plugin = ("-p", "fl_contract") if lane else ()
    result = run_subprocess(*plugin, "-p", run.PLUGIN, *lane, "--fl-mutant", "masked_row_load")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "mutants run on Triton's interpreter only" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.slow
def test_every_mutant_is_killed():
    verdicts = run.run_zoo([], ROOT / "contracts" / "reductions", jobs=2)
    survivors = {v.mutant: (v.status, v.detail) for v in verdicts if v.status != "killed"}
    assert not survivors, run.table(verdicts)
    assert all(v.killers for v in verdicts)


def test_every_mutant_has_a_recorded_killer_that_exists():
    """A new mutant records its killer (``fl-contract mutants --record-killers``), or the zoo
    searches its whole selection on every CI run; a removed one leaves no entry behind."""
    killers = run.recorded_killers()
    assert set(killers) == set(zoo.MUTANTS), "record them: fl-contract mutants --record-killers [--only NEW]"
    for mutant, nodes in killers.items():
        for node in nodes:
            assert (ROOT / "contracts" / node.split("::", 1)[0]).is_file(), (mutant, node)


@pytest.mark.slow
def test_a_recorded_killer_that_no_longer_kills_falls_back_to_the_search(tmp_path):
    """A killer is a hint: one that does not exist, or passes against the mutant, costs a
    second run, never the verdict; a survivor still survives."""
    killers = {
        "keepdim_ignored": ("reductions/test_accuracy.py::test_accuracy[nosuch-case]",),
        "negative_dim_off_by_one": ("reductions/test_install.py::test_install_is_idempotent_and_uninstall_exact",),
    }
    verdicts = {v.mutant: v for v in run.run_zoo(list(killers), ROOT / "contracts" / "reductions", 2, killers=killers)}
    for name in killers:
        assert verdicts[name].status == "killed" and verdicts[name].tries == 2, run.table(list(verdicts.values()))
        *before, last = verdicts[name].nodes
        assert len(before) <= 2 and all(n.startswith("reductions/test_") and "::" in n for n in verdicts[name].nodes)
        assert last.split("::", 1)[1] == verdicts[name].killers[0].split(":", 1)[1]
    assert "2 searched past a recorded killer" in run.table(list(verdicts.values()))
    # neither needs a case before its killer: what --record-killers keeps is the killer alone
    cut = run.minimal(
        [
            replace(v, nodes=("reductions/test_empty.py::test_empty_and_unit_dims[sum-0x5-d0]", *v.nodes))
            for v in verdicts.values()
        ],
        ROOT / "contracts" / "reductions",
        2,
    )
    assert [v.nodes for v in cut] == [v.nodes[-1:] for v in verdicts.values()]
    path = tmp_path / "killers.json"
    path.write_text(
        '{"gone": ["reductions/test_x.py::test_y"], "keepdim_ignored": "stale::x", '
        '"mean_wrong_count": "reductions/test_x.py::test_y"}'
    )
    assert run.record(list(verdicts.values()), path) == 3  # "gone" left the zoo
    assert run.recorded_killers(path)["keepdim_ignored"] == verdicts["keepdim_ignored"].nodes
    assert run.recorded_killers(path)["mean_wrong_count"] == ("reductions/test_x.py::test_y",)  # a string: read


def test_minimal_keeps_the_earlier_case_a_kill_needs(monkeypatch):
    """A defect that an earlier call sets up (a scalar bound at the first launch) keeps that
    call; the killer alone, and after the case just before it, are tried first; a mutant no
    shorter record kills keeps its whole one."""
    tried = []

    def fake_zoo(names, contracts, jobs, killers, search):
        assert not search  # a shorter record that does not kill is an answer, not a search
        tried.append(dict(killers))
        return [run.Verdict(n, "killed" if killers[n][0] == needs[n] else "survived", (), 1.0) for n in names]

    needs = {"setup_by_first": "first", "needs_all": "none"}
    monkeypatch.setattr(run, "run_zoo", fake_zoo)
    verdicts = [run.Verdict(n, "killed", ("x",), 1.0, nodes=("first", "before", "killer")) for n in needs]
    verdicts.append(run.Verdict("alone", "killed", ("x",), 1.0, nodes=("killer",)))
    cut = {v.mutant: v.nodes for v in run.minimal(verdicts, ROOT, 2)}
    assert cut == {
        "setup_by_first": ("first", "killer"),
        "needs_all": ("first", "before", "killer"),
        "alone": ("killer",),
    }
    assert [t["setup_by_first"] for t in tried] == [("killer",), ("before", "killer"), ("first", "killer")]
    assert all("alone" not in t for t in tried)


def test_malformed_killers_are_no_killers(tmp_path):
    path = tmp_path / "killers.json"
    for text in ("", "[1]", "{", '{"a": 1, "b": "no node id", "c": [], "d": ["x::y", 2]}'):
        path.write_text(text)
        assert run.recorded_killers(path) == {}
    assert run.recorded_killers(tmp_path / "missing.json") == {}


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
