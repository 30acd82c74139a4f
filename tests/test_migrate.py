"""`fl-contract import` on torch_fl-style lane files written here."""

from __future__ import annotations

import textwrap

from pytest_fl_contract.cli import main
from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.lanes.manifest import parse

ILUVATAR = textwrap.dedent("""
    display_name: Iluvatar BI-V150
    setup_script: .github/scripts/setup_iluvatar.sh
    ci_image: registry.local/torch_fl:iluvatar-4.5
    runner_labels: [self-hosted, iluvatar]
    container_volumes: [/data:/data]
    integration_environment: {TORCH_FL_PLATFORM: iluvatar, RETRIES: 2}
    container_options: --privileged
    timeout_minutes: 120
    wheel_artifact_name: torch_fl-iluvatar
    integration_wheel_source: artifact
    integration_tests:
      - name: Operator tests
        command: |
          cd tests
          pytest integration/ops -q
      - name: iluvatar_reduction_contract
        command: pytest tests/unit/test_iluvatar_masked_reductions.py
""")


def test_import_maps_what_it_can_and_keeps_the_rest_as_comments(tmp_path, capsys):
    (tmp_path / "iluvatar.yml").write_text(ILUVATAR)
    (tmp_path / "gcu.yml").write_text("runner_labels: [gcu]\nintegration_tests:\n  - {name: smoke, command: 'true'}\n")
    out = tmp_path / "imported.yaml"
    assert main(["import", str(tmp_path / "iluvatar.yml"), str(tmp_path / "gcu.yml"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "kept as comments (no manifest equivalent): container_volumes, container_options, wheel_artifact_name, integration_wheel_source"
        in err
    )
    text = out.read_text()
    assert "#   container_options: --privileged" in text
    manifest = parse(text, str(out), load_registry(entry_points=False))
    lane = manifest.lanes["iluvatar"]
    assert lane.platform == "iluvatar" and lane.display_name == "Iluvatar BI-V150"
    assert lane.image == "registry.local/torch_fl:iluvatar-4.5" and lane.runner_labels == ("self-hosted", "iluvatar")
    assert lane.env == {"TORCH_FL_PLATFORM": "iluvatar", "RETRIES": "2"} and lane.timeout_minutes == 120
    assert lane.setup == ("bash .github/scripts/setup_iluvatar.sh",)
    first = lane.steps[0]
    assert first.name == "operator-tests"
    assert first.args == ("bash", "-c", "set -euo pipefail\ncd tests\npytest integration/ops -q\n")
    assert [s.name for s in lane.steps] == ["operator-tests", "iluvatar_reduction_contract", "op_contracts"]
    assert lane.steps[-1].suites == ("reductions", "layers", "tensorops")  # the shipped step: cases meet the CPU lanes'
    assert manifest.lanes["gcu"].platform == "enflame"


def test_import_refuses_unknown_platform_file(tmp_path, capsys):
    (tmp_path / "quantum.yml").write_text("integration_tests: []\n")
    assert main(["import", str(tmp_path / "quantum.yml")]) == 2
    assert "is not a known platform" in capsys.readouterr().err


def test_import_refuses_bad_step(tmp_path, capsys):
    (tmp_path / "cuda.yml").write_text("integration_tests:\n  - {name: x}\n")
    assert main(["import", str(tmp_path / "cuda.yml")]) == 2
    assert "integration_tests[0] needs a 'command' string" in capsys.readouterr().err
