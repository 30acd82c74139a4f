from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_fl_contract.cli import main
from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.lanes.manifest import load, parse
from pytest_fl_contract.util import FlContractError

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load_registry(entry_points=False)
GOOD_STEP = "      - name: s\n        command: [echo, hi]\n"


def lanes(body: str) -> str:
    return "lanes:\n" + body


MALFORMED = [  # (manifest text, what the one line must say)
    ("", "must be a mapping"),
    ("- a\n- b\n", "must be a mapping"),
    ("lanes: [\n", "not valid YAML"),
    ("lanes: {}\n", "'lanes' must be a non-empty mapping"),
    ("lanes: []\n", "'lanes' must be a non-empty mapping"),
    ("lane:\n  x: {}\n", "unknown top-level key 'lane'"),
    ("version: 2\n" + lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP), "unsupported version 2"),
    (lanes("  Bad_Name:\n    platform: cpu\n    steps:\n" + GOOD_STEP), "lane name 'Bad_Name' must match"),
    (lanes("  ../etc:\n    platform: cpu\n    steps:\n" + GOOD_STEP), "lane name '../etc' must match"),
    (lanes("  a:\n    steps:\n" + GOOD_STEP), "lane 'a': unknown platform None"),
    (lanes("  a:\n    platform: nosuch\n    steps:\n" + GOOD_STEP), "lane 'a': unknown platform 'nosuch'"),
    (lanes("  a:\n    platform: cpu\n"), "lane 'a': a lane needs a non-empty list of steps"),
    (lanes("  a:\n    platform: cpu\n    steps: []\n"), "a lane needs a non-empty list of steps"),
    (lanes("  a:\n    platform: cpu\n    stepz: []\n    steps:\n" + GOOD_STEP), "lane 'a': unknown key 'stepz'"),
    (lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP + "  a:\n    platform: cpu\n"), "duplicate key 'a'"),
    (lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP + GOOD_STEP), "lane 'a' step 's': duplicate step name"),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: S!\n        command: [x]\n"),
        "step name 'S!' must match",
    ),
    (lanes("  a:\n    platform: cpu\n    steps:\n      - command: [x]\n"), "step name None must match"),
    (lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n"), "step 's': a step needs exactly one of"),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        pytest: []\n"),
        "a step needs exactly one of",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: 'echo hi'\n"),
        "command must be a non-empty argv list",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: []\n"),
        "command must be a non-empty argv list",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        shell: true\n"),
        "with shell: true, command must be a string",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        pytest: [a]\n        shell: true\n"),
        "shell applies to command steps only",
    ),
    (lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        pytest: tests\n"), "pytest must be a list"),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        timeout: 0\n"),
        "timeout must be a number of seconds",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        timeout: -5\n"),
        "timeout must be a number of seconds",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        timeout: soon\n"),
        "timeout must be a number of seconds",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        timeout: true\n"),
        "timeout must be a number of seconds",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        timeout: 999999\n"),
        "timeout must be a number of seconds",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        tiemout: 5\n"),
        "step 's': unknown key 'tiemout'",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        env: [A]\n"),
        "env must map names to strings",
    ),
    (
        lanes(
            "  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        allow_failure: yes please\n"
        ),
        "allow_failure must be true or false",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        expect: maybe\n"),
        "expect must be 'pass' or 'fail'",
    ),
    (lanes("  a:\n    platform: cpu\n    steps:\n      - use: nosuch\n"), "unknown shared step 'nosuch'"),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        flaggems_tests: [weather]\n"),
        "or all; unknown: 'weather'",
    ),
    (
        lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        flaggems_tests: matmul\n"),
        "flaggems_tests names families: a list",
    ),
    (
        lanes(
            "  a:\n    platform: cpu\n    steps:\n      - name: s\n        flaggems_tests: [matmul]\n"
            "        contracts: layers\n"
        ),
        "flaggems_tests runs pytest: it cannot go with",
    ),
    (
        lanes("  a:\n    platform: cpu\n    flaggems_tests_from: ''\n    steps:\n" + GOOD_STEP),
        "flaggems_tests_from: a FlagGems wheel or directory",
    ),
    (
        lanes("  a:\n    platform: cpu\n    flaggems_tests_from: $HOME/x\n    steps:\n" + GOOD_STEP),
        "flaggems_tests_from: a FlagGems wheel or directory",
    ),
    (lanes("  a:\n    platform: cpu\n    steps:\n      - just a string\n"), "a step must be a mapping"),
    (lanes("  a: 3\n"), "lane 'a': a lane must be a mapping"),
    (
        lanes("  a:\n    platform: cpu\n    runner_labels: gpu\n    steps:\n" + GOOD_STEP),
        "runner_labels must be a list",
    ),
    (lanes("  a:\n    platform: cpu\n    timeout_minutes: -1\n    steps:\n" + GOOD_STEP), "timeout_minutes must be"),
    ("defaults: {timeout: 0}\n" + lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP), "defaults.timeout"),
    ("defaults: {colour: red}\n" + lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP), "defaults may only set"),
    (
        "shared_steps: {x: {command: 5}}\n" + lanes("  a:\n    platform: cpu\n    steps:\n" + GOOD_STEP),
        "lane '(shared_steps)' step 'x': command must be",
    ),
]


@pytest.mark.parametrize("text, message", MALFORMED, ids=[f"m{i:02d}" for i in range(len(MALFORMED))])
def test_malformed_manifest_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and err.startswith(f"fl-contract: error: {path}"), err
    assert message in err
    assert "Traceback" not in captured.out + captured.err


def test_errors_carry_line_numbers(tmp_path):
    text = lanes("  a:\n    platform: cpu\n    steps:\n      - name: s\n        command: [x]\n        tiemout: 5\n")
    with pytest.raises(FlContractError, match=r"manifest.yaml:7: lane 'a' step 's': unknown key 'tiemout'"):
        parse(text, "manifest.yaml", REGISTRY)


def test_the_shipped_manifest_is_valid_and_covers_the_cpu_lanes():
    manifest = load(ROOT / "ci" / "manifest.yaml", REGISTRY)
    assert {"cpu", "iluvatar-emulated", "iluvatar-emulated-noworkaround"} <= set(manifest.lanes)
    # every lane runs the contracts, but those that run FlagGems' own suite under the three CPU lanes, a line each,
    # and the emulated Hopper's (its overrides: every op enabled and the differential)
    suites = {name for name, lane in manifest.lanes.items() if not any(s.name == "op_contracts" for s in lane.steps)}
    assert suites == {
        "flaggems-suite-502-fg54",
        "flaggems-suite-fg54",
        "nvidia-hopper-emulated",
        "cpu-tuning-miscompiled",
    }
    tuning = manifest.lanes["cpu-tuning-miscompiled"]
    assert tuning.steps[0].expect == "fail" and "amax" in tuning.steps[0].catch
    hopper = manifest.lanes["nvidia-hopper-emulated"]
    assert [s.name for s in hopper.steps] == ["every_op_contracts", "override_contracts", "compiler_probes"]
    assert hopper.pytest_args[-2:] == ("--fl-profile", "nvidia-hopper")
    for name in suites - {"nvidia-hopper-emulated", "cpu-tuning-miscompiled"}:
        steps = manifest.lanes[name].steps
        assert [s.kind for s in steps][-1] == "compare"
        assert {f for s in steps for f in s.flaggems_tests} == {
            "reductions",
            "min/max",
            "variance/norms",
            "normalization",
            "matmul",
            "index",
            "scans",
        }
    assert manifest.lanes["flaggems-suite-502-fg54"].flaggems_tests_from == "${FL_FLAGGEMS_54}"
    assert manifest.lanes["iluvatar-emulated-noworkaround"].steps[0].expect == "fail"
    with_lanes = {lane.platform for lane in manifest.lanes.values()}
    assert with_lanes >= {"nvidia", "iluvatar", "ascend", "mthreads", "enflame", "hygon"}


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "lanes",
                    "steps",
                    "platform",
                    "name",
                    "command",
                    "pytest",
                    "use",
                    "timeout",
                    "env",
                    "shell",
                    "expect",
                    "cpu",
                    "a",
                    "shared_steps",
                    "defaults",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(doc=yaml_values)
def test_fuzzed_manifests_never_raise_anything_but_a_clear_error(doc):
    text = yaml.safe_dump(doc)
    try:
        parse(text, "fuzz.yaml", REGISTRY)
    except FlContractError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("fuzz.yaml")


def test_no_hardware_lane_runs_a_suite_its_platform_can_only_skip():
    """Every case of the copy suite requires a device cast (read from its markers, not listed
    here): on a platform without one the step would run nothing, which is a failure
    (docs/verdicts.md), so such a lane must not have the step at all."""
    import ast

    source = (ROOT / "contracts" / "copy" / "test_cast.py").read_text()
    tests = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    ]
    assert tests
    marked = {t.name for t in tests if any("requires_device_cast" in ast.unparse(d) for d in t.decorator_list)}
    assert marked == {t.name for t in tests}
    manifest = load(ROOT / "ci" / "manifest.yaml", REGISTRY)
    for name, lane in manifest.lanes.items():
        lacks = REGISTRY.get(lane.platform).lacks
        for step in lane.steps:
            assert not ("copy" in step.suites and "device_cast" in lacks), (name, step.name)
