"""``catch:``: an expected-fail step shows the defect caught only when every op it names
failed a contract - a defect caught for sum and missed for mean is not caught.  Whose
failure a case is, is read from the case: its name names the op (and the plugin's tag, where
there is one, agrees), never from the summary a step writes of itself."""

from __future__ import annotations

from pytest_fl_contract.lanes import verdict
from pytest_fl_contract.reporting import junit

from .hostile import cli, one_line


def _counts(*ops: str) -> junit.StepCounts:
    failed = [(f"test_accuracy[{op}-3x5x64-d{d}]", op) for op in ops for d in (0, 1)]
    return junit.StepCounts("s", tests=10, passed=10 - len(failed), failed=len(failed), failed_cases=failed)


def test_every_named_op_must_fail_a_contract():
    caught = verdict.expectation("fail", "failed", _counts("sum", "mean"), ("sum", "mean"))
    assert caught.ok and caught.note.startswith("defect caught: 4 failed (mean 2, sum 2)")
    missed = verdict.expectation("fail", "failed", _counts("sum"), ("sum", "mean", "argmax"))
    assert not missed.ok
    assert missed.note == "NOT caught for mean, argmax (no contract of theirs failed): 2 failed (sum 2)"
    assert verdict.expectation("fail", "failed", _counts("sum"), ()).ok  # no list: any failed case


def test_the_record_carries_the_list_so_merge_decides_alike(tmp_path, capsys):
    name, value = verdict.record("s", "fail", False, "failed", True, catch=("sum", "mean"))
    assert verdict.read_record(value)["catch"] == ["sum", "mean"]
    # a lane report whose record wants sum and mean caught, with one failed case and no plugin tag:
    # its own name says it is sum's, so sum is caught and mean is not
    xml = (
        f'<testsuites><testsuite name="lane/s" tests="1" failures="1"><properties>'
        f"<property name=\"{name}\" value='{value}'/></properties>"
        '<testcase classname="contracts.reductions.test_accuracy" name="test_accuracy[sum-3x5x64-d1]">'
        '<failure message="wrong"/></testcase></testsuite></testsuites>'
    )
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "lane.xml").write_text(xml)
    code, _, err = cli(capsys, "merge", "--reports", str(reports), "-o", str(tmp_path / "m.xml"))
    assert (
        code == 1
        and "step s: failed (expected to fail: NOT caught for mean (no contract of theirs failed): 1 failed)" in err
    )


def test_catch_needs_a_list_on_an_expected_failure(tmp_path, capsys):
    for body, why in (
        ("        catch: [sum]\n", "catch must be a list of op names, on an expect: fail step"),
        ("        expect: fail\n        catch: sum\n", "catch must be a list of op names"),
        ("        expect: fail\n        catch: ['']\n", "catch must be a list of op names"),
    ):
        manifest = tmp_path / "m.yaml"
        manifest.write_text(
            "lanes:\n  l:\n    platform: cpu\n    steps:\n      - name: t\n        pytest: [-q]\n" + body
        )
        code, _, err = cli(capsys, "check", str(manifest))
        assert code == 2
        one_line(err, why)
