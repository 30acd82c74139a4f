"""The compiler probe battery as contracts: one case per probe, on the lane's device.

A failure names the compiler defect the probe is evidence for and the FlagGems ops whose
kernels rely on that feature; no flag_gems is imported here."""

import pytest

from pytest_fl_contract.probes import catalogue as probes
from pytest_fl_contract.probes.battery import PROBES, Probe


def _param(probe: Probe):
    marks = [pytest.mark.requires_capability(*probe.needs)] if probe.needs else []
    return pytest.param(probe, id=probe.id, marks=marks)


@pytest.mark.parametrize("probe", [_param(p) for p in PROBES])
def test_probe(probe: Probe, fl_device: str, fl_settings, probe_row) -> None:
    outcome = probe.run(fl_device)
    row = probes.row_of(probe, outcome)
    probe_row(row)
    if outcome.skipped is not None:
        pytest.skip(outcome.skipped)
    assert outcome.passed, (
        f"{probe.variant}: result {row.result}, expected {row.expected} - evidence for "
        f"{probes.label(probe.defect, fl_settings.platform, fl_settings.registry)}"
    )
