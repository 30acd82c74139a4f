"""The overload scoreboard (issue 57): synthetic JUnit of the overload suite in, one status per
overload out - in the two shapes a lane's report has (pytest's own file, each case's fields in
its ``<properties>``; the runner's rewrite, the fields in the suite's ``fl_cases`` tag) - and
the outputs a lane engineer reads: the one-line summary, JSON, Markdown, the parity line, the
CLI's files and its one-line refusal of bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from pytest_fl_contract.cli import main
from pytest_fl_contract.reporting import junit
from pytest_fl_contract.results import cases, scoreboard
from pytest_fl_contract.util import FlContractError

PROVENANCE = {
    "version_torch": "2.13.0+cpu",
    "version_triton": "3.7.1",
    "version_flag_gems": "5.0.2",
    "fl_device": "cpu",
    "fl_platform": "iluvatar",
    "fl_emulated": "yes",
}
FAILURE = {"failed": "failure", "error": "error"}


def case_xml(
    lane: str,
    overload: str,
    n: int,
    status: str,
    outcome: str,
    *,
    transform: str = "none",
    inline: bool = True,
    message: str | None = None,
) -> tuple[str, str, dict]:
    """One case: (its XML, its fl_cases key, its fl_cases tag).  ``inline``: the fields inside
    the ``<testcase>`` (pytest's file); else only in the tag (the runner's rewrite)."""
    name = f"test_overload[{overload}-{n}-{transform}]"
    fields = {
        "overload": overload,
        "status": status,
        "detail": f"{status.lower()} detail {n}",
        "transform": transform,
        "sample": f"sample {n}",
    }
    msg = message or f"{status}: {fields['detail']}"
    if outcome == "passed":
        body = ""
    elif outcome in FAILURE:
        body = f"<{FAILURE[outcome]} message={quoteattr(msg)}>trace</{FAILURE[outcome]}>"
    elif outcome == "xpassed":
        body = f"<failure message={quoteattr('[XPASS(strict)] known defect d1')} />"
    elif outcome == "xfailed":
        body = f'<skipped type="pytest.xfail" message={quoteattr("known defect d1: " + msg)} />'
    else:
        body = f'<skipped type="pytest.skip" message={quoteattr(msg)} />'
    props = "".join(f"<property name={quoteattr('fl_' + k)} value={quoteattr(v)} />" for k, v in fields.items())
    if inline:
        body = f"<properties>{props}</properties>{body}"
    tag = dict(fields) if not inline else {}
    if outcome in ("xfailed", "xpassed"):
        tag["defect"] = "d1"
    xml = (
        f'<testcase classname={quoteattr(f"{lane}.overloads.test_overloads")} name={quoteattr(name)} time="0.01">'
        f"{body}</testcase>"
    )
    return xml, f"overloads.test_overloads::{name}", tag


def lane_xml(
    lane: str,
    spec: list[tuple[str, str, str]] | list[tuple[str, str, str, str]],
    *,
    inline: bool = True,
    registered: object = None,
    extra: dict | None = None,
) -> str:
    """LANE.xml with one overload step; ``spec``: (overload, fl_status, outcome[, transform])."""
    cases_, tags = [], {}
    for n, item in enumerate(spec):
        overload, status, outcome, *rest = item
        xml, key, tag = case_xml(
            lane, overload, n, status, outcome, transform=rest[0] if rest else "none", inline=inline
        )
        cases_.append(xml)
        if tag:
            tags[key] = tag
    props = dict(PROVENANCE, fl_cases=json.dumps(tags), **(extra or {}))
    if registered is not None:
        props[scoreboard.REGISTERED] = json.dumps(registered)
    properties = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)} />" for k, v in props.items())
    return (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        f"<testsuites name={quoteattr(lane)}><testsuite name={quoteattr(f'{lane}/overloads')} "
        f'tests="{len(cases_)}"><properties>{properties}</properties>{"".join(cases_)}</testsuite></testsuites>\n'
    )


# Every status, and the known-defect case: (overload, fl_status, pytest outcome)
SPEC = [
    ("add.Tensor", "PASS", "passed"),
    ("add.Tensor", "PASS", "passed"),  # STRICT 2/2
    ("sum.dim_IntList", "PASS", "passed"),
    ("sum.dim_IntList", "WRONG", "failed"),  # PARTIAL 1 of 2
    ("mm", "FAULT", "failed"),
    ("mm", "ERROR", "error"),
    ("mm", "TIMEOUT", "failed"),  # FAILED 0 of 3
    ("cumsum", "UNSUPPORTED", "skipped"),
    ("cumsum", "UNSUPPORTED", "skipped"),  # UNSUPPORTED
    ("rand", "UNTESTED", "skipped"),  # UNTESTED (reason)
    ("softmax.int", "PASS", "passed"),
    ("softmax.int", "WRONG", "xfailed"),  # known defect only
    ("abs", "PASS", "passed"),
    ("abs", "UNSUPPORTED", "skipped"),  # STRICT, one layout refused
]
EXPECTED = {
    "add.Tensor": ("STRICT", 2, 2),
    "sum.dim_IntList": ("PARTIAL", 1, 2),
    "mm": ("FAILED", 0, 3),
    "cumsum": ("UNSUPPORTED", 0, 0),
    "rand": ("UNTESTED", 0, 0),
    "softmax.int": ("PARTIAL", 1, 2),
    "abs": ("STRICT", 1, 1),
    "zeros": ("UNTESTED", 0, 0),
}
REGISTERED = sorted(EXPECTED)  # "zeros" is registered and has no case at all


def board_from(tmp_path: Path, text: str, name: str = "lane-a") -> scoreboard.Board:
    path = tmp_path / f"{name}.xml"
    path.write_text(text, encoding="utf-8")
    return scoreboard.board_of(cases.read_one(path))


@pytest.mark.parametrize("inline", [True, False], ids=["pytest-file", "runner-rewrite"])
def test_every_status_from_the_cases(tmp_path: Path, inline: bool) -> None:
    board = board_from(tmp_path, lane_xml("lane-a", SPEC, inline=inline, registered=REGISTERED))
    got = {v.overload: (v.status, v.passed, v.ran) for v in board.verdicts}
    assert got == EXPECTED
    assert board.registered == len(REGISTERED) and board.unnamed == 0
    known = board.get("softmax.int")
    assert known is not None and known.known_only and known.defects == ("d1",) and known.failing == 0
    assert known.label == "PARTIAL 1 of 2 (known defect d1 only)"
    mm = board.get("mm")
    assert mm is not None and not mm.known_only and mm.failing == 3 and mm.reason.startswith("FAULT:")
    assert board.get("cumsum").reason == "unsupported detail 7"  # type: ignore[union-attr]
    assert board.get("rand").reason == "untested detail 9"  # type: ignore[union-attr]
    assert board.get("zeros").reason == scoreboard.ABSENT  # type: ignore[union-attr]
    assert board.get("abs").unsupported == 1  # type: ignore[union-attr]
    assert board.summary() == (
        "registered 8: STRICT 2 / PARTIAL 2 / FAILED 1 / UNSUPPORTED 1 / UNTESTED 2; known defects only: 1"
    )


def test_the_suites_word_is_held_against_the_outcome(tmp_path: Path) -> None:
    """A case that passed saying WRONG, failed saying PASS or was skipped saying PASS is an
    ERROR: a suite whose own bookkeeping broke gets no STRICT from it."""
    spec = [("a", "WRONG", "passed"), ("b", "PASS", "failed"), ("c", "PASS", "skipped"), ("d", "PASS", "xpassed")]
    board = board_from(tmp_path, lane_xml("lane-a", spec))
    for name in "abcd":
        verdict = board.get(name)
        assert verdict is not None and verdict.status == "FAILED" and verdict.failing == 1, verdict
    assert board.get("a").reason.startswith("ERROR: the case passed but recorded fl_status WRONG")  # type: ignore[union-attr]
    assert board.get("d").reason.startswith("XPASS(strict): known defect d1 did not show")  # type: ignore[union-attr]


def test_denominator_without_a_table_and_with_a_count(tmp_path: Path) -> None:
    spec = [("add.Tensor", "PASS", "passed"), ("rand", "UNTESTED", "skipped")]
    plain = board_from(tmp_path, lane_xml("lane-a", spec))
    assert plain.registered == 2 and "no registration table" in plain.registered_from
    counted = board_from(tmp_path, lane_xml("lane-a", spec, registered=5))
    assert counted.registered == 5 and counted.unnamed == 3
    assert counted.counts() == {"STRICT": 1, "PARTIAL": 0, "FAILED": 0, "UNSUPPORTED": 0, "UNTESTED": 4}
    assert sum(counted.counts().values()) == counted.registered


def test_bad_interface_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(FlContractError, match="fl_status 'MAYBE' is not one of PASS"):
        board_from(tmp_path, lane_xml("lane-a", [("a", "MAYBE", "passed")]))
    text = lane_xml("lane-a", [("a", "PASS", "passed")]).replace('value="none"', 'value="sideways"')
    with pytest.raises(FlContractError, match="fl_transform 'sideways'"):
        board_from(tmp_path, text)
    orphan = lane_xml("lane-a", [("a", "PASS", "passed")]).replace("fl_overload", "fl_not_it")
    with pytest.raises(FlContractError, match="fl_status PASS without fl_overload: pass detail 0"):
        board_from(tmp_path, orphan)
    other = lane_xml("lane-a", [("a", "PASS", "passed")]).replace('name="fl_', 'name="x_')
    with pytest.raises(FlContractError, match="no overload cases"):
        board_from(tmp_path, other)


def test_markdown_json_and_provenance(tmp_path: Path) -> None:
    board = board_from(tmp_path, lane_xml("lane-a", SPEC, registered=REGISTERED, extra={"fl_seed": "1234"}))
    data = json.loads(scoreboard.to_json(board))
    assert data["schema"] == scoreboard.SCHEMA and data["lane"] == "lane-a"
    assert data["report"].endswith("lane-a.xml") and data["summary"] == board.summary()
    assert data["provenance"]["version_flag_gems"] == "5.0.2" and data["provenance"]["fl_seed"] == "1234"
    assert "fl_cases" not in data["provenance"] and scoreboard.REGISTERED not in data["provenance"]
    assert data["counts"] == board.counts() and len(data["overloads"]) == len(REGISTERED)
    mm = next(o for o in data["overloads"] if o["overload"] == "mm")
    assert mm["status"] == "FAILED" and mm["transforms"] == {"none": {"passed": 0, "failing": 3, "known": 0}}
    text = scoreboard.markdown(board)
    assert f"**{board.summary()}**" in text and "flag_gems 5.0.2" in text and "seed 1234" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("|")[2].split()[0] for r in rows] == [
        "FAILED",
        "PARTIAL",
        "PARTIAL",
        "UNSUPPORTED",
        "UNTESTED",
        "UNTESTED",
        "STRICT",
        "STRICT",
    ]
    assert "(known only)" in next(r for r in rows if "softmax.int" in r)
    assert not any(
        "STRICT" in r for r in scoreboard.markdown(board, only_problems=True).splitlines() if r.startswith("| `")
    )


def test_the_parity_line(tmp_path: Path) -> None:
    """A line per overload not the same on every lane: another status, or PARTIAL by another count."""
    sums = [("sum", "PASS", "passed"), ("sum", "PASS", "passed"), ("sum", "WRONG", "failed")]
    a = board_from(tmp_path, lane_xml("lane-a", [("mm", "PASS", "passed"), ("abs", "PASS", "passed"), *sums]), "lane-a")
    sums[1] = ("sum", "WRONG", "failed")
    b = board_from(
        tmp_path, lane_xml("lane-b", [("mm", "WRONG", "failed"), ("abs", "PASS", "passed"), *sums]), "lane-b"
    )
    lines = scoreboard.across([a, b])
    assert [d.line() for d in lines] == [
        "mm: FAILED on lane-b; STRICT on lane-a (WRONG: wrong detail 0)",
        "sum: PARTIAL 1 of 3 on lane-b; PARTIAL 2 of 3 on lane-a (WRONG: wrong detail 3)",
    ]
    assert scoreboard.across_dict([a, b]) == [
        {"overload": "mm", "line": lines[0].line(), "lanes": {"lane-a": "STRICT", "lane-b": "FAILED"}},
        {"overload": "sum", "line": lines[1].line(), "lanes": {"lane-a": "PARTIAL 2 of 3", "lane-b": "PARTIAL 1 of 3"}},
    ]
    assert "- mm: FAILED on lane-b; STRICT on lane-a" in scoreboard.lane_lines([a, b])


def test_the_cli_writes_each_lane_and_prints_the_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "lane-a.xml").write_text(lane_xml("lane-a", SPEC, registered=REGISTERED), encoding="utf-8")
    (folder / "lane-b.xml").write_text(lane_xml("lane-b", [("mm", "PASS", "passed")], inline=False), encoding="utf-8")
    out = tmp_path / "board"
    assert main(["scoreboard", str(folder), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "`lane-a`: registered 8: STRICT 2 / PARTIAL 2 / FAILED 1 / UNSUPPORTED 1 / UNTESTED 2" in text
    assert "`lane-b`: registered 1: STRICT 1 / PARTIAL 0 / FAILED 0 / UNSUPPORTED 0 / UNTESTED 0" in text
    assert "mm: FAILED on lane-a; STRICT on lane-b" in text
    assert sorted(p.name for p in out.iterdir()) == [
        "lane-a.scoreboard.json",
        "lane-a.scoreboard.md",
        "lane-b.scoreboard.json",
        "lane-b.scoreboard.md",
    ]
    assert json.loads((out / "lane-b.scoreboard.json").read_text())["counts"]["STRICT"] == 1


@pytest.mark.parametrize(
    "content, says",
    [
        ("<testsuites><testsuite name='x'><testcase", "not a JUnit report"),
        (None, "no such report"),
    ],
)
def test_the_cli_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, says: str
) -> None:
    path = tmp_path / "lane.xml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["scoreboard", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_report_of_another_suite_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lane.xml"
    path.write_text(lane_xml("lane", [("a", "PASS", "passed")]).replace('name="fl_', 'name="x_'), encoding="utf-8")
    assert main(["scoreboard", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no lane holds overload cases" in err and err.count("\n") == 1


def test_case_properties_are_read_from_pytests_file(tmp_path: Path) -> None:
    """junit.Case.properties: what ``record_property`` wrote inside a case."""
    path = tmp_path / "x.xml"
    path.write_text(lane_xml("x", [("add.Tensor", "PASS", "passed")]), encoding="utf-8")
    (case,) = junit.read(path).cases
    assert dict(case.properties)["fl_overload"] == "add.Tensor" and dict(case.properties)["fl_status"] == "PASS"


SUITE = """
import pytest

def record(record_property, overload, status, transform="none"):
    for name, value in (("overload", overload), ("status", status), ("detail", status.lower() + " here"),
                        ("transform", transform), ("sample", "s0")):
        record_property("fl_" + name, value)

def test_pass(record_property):
    record(record_property, "add.Tensor", "PASS")

def test_wrong(record_property):
    record(record_property, "sum.dim_IntList", "WRONG", "boundary")
    assert False, "WRONG: max error 4.68 at (0, 3)"

def test_pass_too(record_property):
    record(record_property, "sum.dim_IntList", "PASS", "pow2")

def test_unsupported(record_property):
    record(record_property, "cumsum", "UNSUPPORTED")
    pytest.skip("UNSUPPORTED: bfloat16 refused")
"""


def test_a_real_run_through_the_plugin_and_the_runners_rewrite(pytester: pytest.Pytester, run_subprocess) -> None:
    """pytest writes record_property inside each case; the runner's rewrite drops them; the
    session's ``fl_cases`` tag carries them across, so both files give the same board."""
    pytester.makepyfile(test_overloads=SUITE)
    raw = pytester.path / "raw.xml"
    result = run_subprocess(
        "-p",
        "fl_contract",
        "--platform",
        "cpu",
        f"--junitxml={raw}",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::pytest.PytestWarning",
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    rewritten = pytester.path / "lane.xml"
    junit.write(junit.rename_suites(junit.read(raw), "lane/overloads"), rewritten)
    assert all(c.properties for c in junit.read(raw).cases)
    assert not any(c.properties for c in junit.read(rewritten).cases)
    boards = [scoreboard.board_of(cases.read_one(p)) for p in (raw, rewritten)]
    for board in boards:
        assert {v.overload: v.status for v in board.verdicts} == {
            "add.Tensor": "STRICT",
            "sum.dim_IntList": "PARTIAL",
            "cumsum": "UNSUPPORTED",
        }
        assert board.get("cumsum").reason == "unsupported here"  # type: ignore[union-attr]
        assert board.get("sum.dim_IntList").transforms == (("boundary", 0, 1, 0), ("pow2", 1, 0, 0))  # type: ignore[union-attr]
        assert board.provenance.get("fl_platform") == "cpu"
    assert boards[0].summary() == boards[1].summary()


def test_the_runner_writes_the_board_beside_the_lane_report_and_forgets_the_last(tmp_path: Path) -> None:
    import io
    import os
    import textwrap

    from pytest_fl_contract.lanes.manifest import Lane, Step
    from pytest_fl_contract.lanes.runner import run_lane

    from .conftest import ROOT

    def step(name: str, body: str) -> Step:
        (tmp_path / f"test_{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
        return Step(
            name,
            "pytest",
            (
                str(tmp_path / f"test_{name}.py"),
                "-q",
                "-p",
                "no:cacheprovider",
                f"--rootdir={tmp_path}",
                "-W",
                "ignore::pytest.PytestWarning",
            ),
        )

    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    reports = tmp_path / "reports"
    run = run_lane(Lane("ov", "cpu", (step("overloads", SUITE),), env=env), reports, progress=io.StringIO())
    json_path, md_path = scoreboard.paths_of(reports, "ov")
    line = "registered 3: STRICT 1 / PARTIAL 1 / FAILED 0 / UNSUPPORTED 1 / UNTESTED 0"
    assert f"overload scoreboard: **{line}**" in run.markdown, run.markdown
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["summary"] == line and data["lane"] == "ov" and data["report"] == str(reports / "ov.xml")
    assert data["provenance"]["fl_platform"] == "cpu" and data["provenance"]["version_flag_gems"]
    assert line in md_path.read_text(encoding="utf-8")
    # the next run holds no overload case: no board of the last run is left to be read as its own
    plain = Step("plain", "command", (sys.executable, "-c", "print('no overloads here')"))
    run = run_lane(Lane("ov", "cpu", (plain,), env=env), reports, progress=io.StringIO())
    assert run.ok and "overload scoreboard" not in run.markdown
    assert not json_path.exists() and not md_path.exists()


def test_parity_and_merge_carry_the_overload_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "lane-a.xml").write_text(
        lane_xml("lane-a", [("mm", "PASS", "passed"), ("abs", "PASS", "passed")]), encoding="utf-8"
    )
    (folder / "lane-b.xml").write_text(
        lane_xml("lane-b", [("mm", "WRONG", "failed"), ("abs", "PASS", "passed")], inline=False), encoding="utf-8"
    )
    line = "mm: FAILED on lane-b; STRICT on lane-a (WRONG: wrong detail 0)"
    out = tmp_path / "parity.json"
    assert main(["parity", str(folder / "lane-a.xml"), str(folder / "lane-b.xml"), "--json", str(out)]) == 0
    assert line in capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["overloads"]["differ"] == [
        {"overload": "mm", "line": line, "lanes": {"lane-a": "STRICT", "lane-b": "FAILED"}}
    ]
    assert data["overloads"]["summaries"]["lane-a"].startswith("registered 2: STRICT 2")
    assert main(["merge", "--reports", str(folder), "-o", str(tmp_path / "all.xml")]) == 1  # lane-b failed a case
    text = capsys.readouterr().out
    assert "`lane-b`: registered 2: STRICT 1 / PARTIAL 0 / FAILED 1" in text and line in text


# -- measuring the method (benchmarks/overload_method.py) -------------------------------

CLEAN = [
    ("sum.dim_IntList", "PASS", "passed", "none"),
    ("sum.dim_IntList", "PASS", "passed", "pow2"),
    ("sum.dim_IntList", "PASS", "passed", "boundary"),
    ("mm", "PASS", "passed", "none"),
    ("mm", "PASS", "passed", "pow2"),
    ("mm", "PASS", "passed", "strided"),
    ("abs", "WRONG", "failed", "none"),
]
BROKEN = [
    ("sum.dim_IntList", "PASS", "passed", "none"),
    ("sum.dim_IntList", "PASS", "passed", "pow2"),
    ("sum.dim_IntList", "WRONG", "failed", "boundary"),
    ("mm", "WRONG", "failed", "none"),
    ("mm", "WRONG", "xfailed", "pow2"),
    ("mm", "PASS", "passed", "strided"),
    ("abs", "WRONG", "failed", "none"),
]


def test_the_method_counts_catches_per_input_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from .conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import overload_method

    clean, broken, quiet = tmp_path / "clean.xml", tmp_path / "broken.xml", tmp_path / "quiet.xml"
    clean.write_text(lane_xml("clean", CLEAN), encoding="utf-8")
    broken.write_text(lane_xml("broken", BROKEN, inline=False), encoding="utf-8")
    quiet.write_text(lane_xml("quiet", CLEAN), encoding="utf-8")
    out = tmp_path / "m.json"
    assert (
        overload_method.main(
            [
                "--clean",
                str(clean),
                "--lane",
                f"no-workaround={broken}",
                "--mutant",
                f"m1={broken}",
                "--mutant",
                f"m2={quiet}",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    rows = json.loads(out.read_text(encoding="utf-8"))
    lane, m1, m2 = rows
    # sum only by the boundary transform; mm by OpInfo's sample and by pow2 (a known defect's xfail counts);
    # abs fails on the clean run too: no catch
    assert lane["units"] == {"mm": ["opinfo", "pow2"], "sum.dim_IntList": ["transforms"]}
    assert (lane["defects"], lane["by"], lane["only_transforms"], lane["clean_failures"]) == (
        2,
        {"pow2": 1, "opinfo": 1, "transforms": 1},
        1,
        1,
    )
    assert lane["cases"] == {"pow2": 2, "opinfo": 3, "transforms": 2}
    assert m1["units"] == {"m1": ["opinfo", "pow2", "transforms"]} and m2["units"] == {"m2": []}
    assert (
        "| no-workaround | 2 | 1/2 (50%) | 1/2 (50%) | 1/2 (50%) | 2/2 (100%) | 1/2 (50%) | 2 / 3 / 2 | 1 | 0 |" in text
    )
    assert "| mutant zoo (2 mutants) | 2 | 1/2 (50%) | 1/2 (50%) | 1/2 (50%) | 1/2 (50%) | 0/2 (0%) |" in text
    # a quick sweep's reports have no pow2 case: that column says so, never 0
    quick = [c for c in CLEAN if c[3] != "pow2"]
    clean.write_text(lane_xml("clean", quick), encoding="utf-8")
    broken.write_text(lane_xml("broken", [c for c in BROKEN if c[3] != "pow2"]), encoding="utf-8")
    assert overload_method.main(["--clean", str(clean), "--lane", f"q={broken}"]) == 0
    assert "| q | 2 | not run | 1/2 (50%) | 1/2 (50%) |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, says",
    [
        (["--lane", "x=y.xml"], "name the clean run"),
        (["--clean", "c.xml", "--lane", "nonsense"], "expected NAME=REPORT"),
        (["--clean", "missing.xml", "--lane", "x=missing.xml"], "no such report"),
        (["--run-zoo", "no_such_mutant"], "--run-zoo: no mutant 'no_such_mutant' in the zoo"),
    ],
)
def test_the_method_refuses_bad_input_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    from .conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.chdir(tmp_path)
    import overload_method

    assert overload_method.main(args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_bad_overload_case_is_one_line_in_the_views_and_takes_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """parity, merge and the HTML page show the scoreboard beside their own output: an overload
    case breaking the interface is said there in one line; the rest of their output stands."""
    from pytest_fl_contract.results import html

    a, b = tmp_path / "lane-a.xml", tmp_path / "lane-b.xml"
    a.write_text(lane_xml("lane-a", [("mm", "PASS", "passed")]), encoding="utf-8")
    b.write_text(lane_xml("lane-b", [("mm", "MAYBE", "passed")]), encoding="utf-8")
    assert main(["parity", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "### fl-contract parity" in text and "**overload scoreboard: case " in text and "'MAYBE'" in text
    page = html.lane_page(cases.read_one(b))
    assert 'id="scoreboard-error"' in page and "MAYBE" in page and 'id="outcomes"' in page
    assert scoreboard.report_lines(junit.read(b), str(b), "lane-b").count("\n") == 2
