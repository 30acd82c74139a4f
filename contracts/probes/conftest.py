"""Each probe case is tagged with the compiler defect it is evidence for, so the lane
summary lists a failing probe as ``compiler: <defect>; affects <ops>`` next to the failing
reduction contracts; and the battery's table is printed at the end of the run, ready for a
vendor bug report."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pytest

from pytest_fl_contract.plugin import settings_of
from pytest_fl_contract.probes import catalogue as probes
from pytest_fl_contract.probes.battery import PROBES, Probe
from pytest_fl_contract.session import tag_case

ROW = pytest.StashKey[probes.Row]()
_rows: list[probes.Row] = []  # this process's table (the xdist controller gets the workers' rows)


@pytest.hookimpl(trylast=True)  # after any other suite's conftest tagged everything it collected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    settings = settings_of(config)
    for item in items:
        params = getattr(item, "callspec", None)
        probe = params.params.get("probe") if params is not None else None
        if isinstance(probe, Probe):  # a module may name the defect its cases are evidence for (DEFECT)
            defect = getattr(getattr(item, "module", None), "DEFECT", None) or probe.defect
            tag_case(item, probes.label(defect, settings.platform, settings.registry), probe.id)


@pytest.fixture
def probe_row(request: pytest.FixtureRequest) -> Any:
    """``probe_row(row)``: this case's line of the table (the key lives here: the test
    module may be imported under another name than this conftest)."""
    return lambda row: request.node.stash.__setitem__(ROW, row)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
    rep = yield
    row = item.stash.get(ROW, None)
    if row is not None and rep.when == "call":
        rep.fl_probe = asdict(row)  # plain data: travels from an xdist worker with the report
    return rep


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    row = getattr(report, "fl_probe", None)
    if isinstance(row, dict):
        _rows.append(probes.Row(**row))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not _rows:
        return
    order = {probe.id: i for i, probe in enumerate(PROBES)}
    rows = sorted(_rows, key=lambda r: order.get(r.probe, len(order)))
    settings = settings_of(config)
    terminalreporter.section("fl-contract compiler probes")
    for line in [
        *probes.render_text(rows),
        probes.tally(rows),
        *probes.notes(rows),
        *probes.findings(rows, settings.platform, settings.registry),
    ]:
        terminalreporter.write_line(line)
