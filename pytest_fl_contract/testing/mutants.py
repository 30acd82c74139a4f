"""The zoo's opt-in pytest plugin, so a vendor lane never sees it:
``pytest -p fl_contract -p pytest_fl_contract.testing.mutants --fl-mutant NAME`` applies one
mutant of ``zoo`` inside a contract run, right after flag_gems is imported and the lane's
workaround installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..util import FlContractError
from .zoo import get


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fl_contract").addoption(
        "--fl-mutant",
        dest="fl_mutant",
        metavar="NAME",
        help="apply a defect mutant (fl-contract mutants --list) to prove the contracts catch it",
    )
    parser.getgroup("fl_contract").addoption(
        "--fl-killer-file",
        dest="fl_killer_file",
        metavar="PATH",
        help="write the absolute node id of the first failing case here (the zoo records its killers)",
    )


@pytest.hookimpl(trylast=True)  # after fl_contract's: the lane's settings are resolved
def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("fl_mutant")
    if name:
        try:
            get(name)
        except FlContractError as exc:
            raise pytest.UsageError(str(exc)) from None
        from ..plugin import SESSION

        session = config.stash.get(SESSION, None)
        if session is None or session.settings.emulation is None:
            # a mutant rewrites a kernel's source for the interpreter; on a compiled lane it
            # would change nothing, and every contract would pass as if it had been caught
            where = (
                "the fl_contract plugin is not active"
                if session is None
                else f"platform {session.settings.platform.name} compiles its kernels"
            )
            raise pytest.UsageError(
                f"--fl-mutant {name}: mutants run on Triton's interpreter only (--platform cpu "
                f"or --fl-emulate), and {where}"
            )
    path = config.getoption("fl_killer_file")
    if path:
        config.pluginmanager.register(_Killer(config.rootpath, Path(path)), "fl-mutant-killer")


class _Killer:
    """Writes the first failing case's node id after the session's first case and the case
    that ran before it, absolute (a later run passes them from any directory).  Those two
    come along for defects that an earlier call sets up (a memoised plan, a scalar bound at
    the first launch); ``fl-contract mutants --record-killers`` keeps only the ones the kill
    needs."""

    def __init__(self, rootpath: Path, path: Path) -> None:
        self.rootpath, self.path, self.done, self.first, self.before = rootpath, path, False, "", ""

    def _absolute(self, nodeid: str) -> str:
        file, sep, rest = nodeid.partition("::")
        return f"{(self.rootpath / file).resolve()}{sep}{rest}"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.done:
            return
        if not report.failed:
            if report.when == "call":
                self.first = self.first or report.nodeid
                self.before = report.nodeid
            return
        self.done = True
        nodes = [n for n in dict.fromkeys((self.first, self.before)) if n and n != report.nodeid] + [report.nodeid]
        self.path.write_text("".join(self._absolute(n) + "\n" for n in nodes))


def pytest_fl_contract_flag_gems(flag_gems: Any, session: Any) -> None:
    """Right after flag_gems is imported and the lane's workaround installed."""
    # flag_gems already imported (the zoo's fork server): this runs while pytest is still
    # loading the initial conftests, before the options are parsed - only the known args are
    config = session.config
    name = config.getoption("fl_mutant", None) or getattr(
        getattr(config, "known_args_namespace", None), "fl_mutant", None
    )
    apply = get(name).apply if name else None
    if apply is not None:
        apply()
