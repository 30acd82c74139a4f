"""Re-running a lane's cases in a fresh pytest process, under the lane's own options.

A case is named by its key within its step (``reductions.test_accuracy::test_accuracy[...]``,
``Row.key`` less the step); ``nodeid`` turns that into a node id under the suite's root (the
packaged contracts by default), and ``Runner.run`` runs a list of them, in that order, in one
fresh process and reads each one's outcome back from the JUnit file it wrote.  The lane's
options come from its report (``lane_options``): the platform, the emulator's profile and
injected defects, the workaround (off or which), the sweep and the tuning mode - the re-run
is the lane's run, not this machine's default.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..util import FlContractError


def ident(key: str) -> str:
    """A row key less its step (``op_contracts/reductions...`` -> ``reductions...``)."""
    return key.split("/", 1)[1] if "/" in key.split("::", 1)[0] else key


def lane_options(properties: Mapping[str, str]) -> list[str]:
    """The pytest options that run a case as the report's lane ran it."""
    out: list[str] = []
    if properties.get("fl_platform"):
        out += ["--fl-platform", properties["fl_platform"]]
    emulated = properties.get("fl_emulated", "no")
    if emulated and emulated != "no":
        profile, _, rest = emulated.partition(";")
        out += ["--fl-emulate", "--fl-profile", profile.strip()]
        for defect in rest.partition("defects:")[2].split(","):
            if defect.strip() and defect.strip() != "none":
                out += ["--fl-inject", defect.strip()]
    workaround = properties.get("fl_workaround")
    if workaround == "off":
        out.append("--fl-no-workaround")
    elif workaround:
        out += ["--fl-workaround", workaround]
    if properties.get("fl_sweep") in ("quick", "full"):
        out += ["--fl-sweep", properties["fl_sweep"]]
    if properties.get("fl_autotune") in ("rotate", "tuned") and not out.count("--fl-emulate"):
        out += ["--fl-autotune", properties["fl_autotune"]]
    return out


def nodeid(case: str, root: Path) -> str:
    """A case key (``pkg.test_mod.TestClass::test_x[id]``) as a node id under ``root``
    (``pkg/test_mod.py::TestClass::test_x[id]``): the longest dotted prefix that is a file."""
    classname, sep, name = case.partition("::")
    if not sep:
        raise FlContractError(f"{case!r}: not a case key (module::test)")
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = Path(*parts[:cut]).with_suffix(".py")
        if (root / path).is_file():
            return "::".join([path.as_posix(), *parts[cut:], name])
    raise FlContractError(f"{case!r}: no test module {'/'.join(parts)}.py (or a prefix) under {root}")


def clean_env() -> dict[str, str]:
    """This process's environment less what would make the re-run another run: the caller's
    PYTEST_ADDOPTS (a ``-n 2`` there against our ``-p no:xdist``) and an xdist worker's
    identity (a re-run from inside a test worker is not that worker)."""
    return {
        k: v
        for k, v in os.environ.items()
        if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST_") and k != "PYTEST_CURRENT_TEST"
    }


def check_versions(properties: Mapping[str, str]) -> str | None:
    """Why this environment cannot re-run the report's cases (another FlagGems), or None."""
    from ..util import installed_version

    wanted = properties.get("version_flag_gems")
    have = installed_version("flag_gems")
    if wanted and have and wanted != have:
        return (
            f"the report ran flag_gems {wanted}, this environment has {have}: re-run where {wanted} is "
            "installed (PYTHONPATH or its virtual environment)"
        )
    return None


@dataclass(frozen=True)
class Runner:
    """Runs cases of one suite root in fresh processes."""

    root: Path
    options: tuple[str, ...] = ()  # the lane's options and the caller's
    config: tuple[str, ...] = ()  # -c INI --rootdir ROOT, or nothing (the suite's own)
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 1800

    @staticmethod
    def packaged(options: Sequence[str] = (), env: Mapping[str, str] | None = None) -> Runner:
        from ..config.suites import cache_dir, root

        base = root()
        return Runner(
            base,
            tuple(options),
            (
                "-p",
                "fl_contract",
                "-c",
                str(base / "pytest.ini"),
                "--rootdir",
                str(base),
                "-o",
                f"cache_dir={cache_dir() / 'pytest'}",
            ),
            dict(env or {}),
        )

    def argv(self, cases: Sequence[str], junit: Path, extra: Sequence[str] = ()) -> list[str]:
        ids = [nodeid(c, self.root) for c in cases]
        config = self.config or ("--rootdir", str(self.root))  # keys are relative to the root, never to our cwd
        return [
            sys.executable,
            "-m",
            "pytest",
            *config,
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-q",
            "--tb=line",
            *self.options,
            *extra,
            f"--junitxml={junit}",
            *(str(self.root / i) for i in ids),
        ]

    def run(
        self, cases: Sequence[str], extra: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Each case's outcome (passed, failed, error, skipped, ...) from one fresh process
        running ``cases`` in this order; a case pytest never reported is "missing"."""
        from ..results.cases import read

        with tempfile.TemporaryDirectory(prefix="fl-triage-") as tmp:
            junit = Path(tmp) / "rerun.xml"
            try:  # from a directory of its own: never inside the suite (its conftest is not a rootdir's)
                subprocess.run(
                    self.argv(cases, junit, extra),
                    cwd=tmp,
                    env={**clean_env(), **self.env, **(env or {})},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=self.timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return {c: "timeout" for c in cases}
            if not junit.is_file():
                return {c: "missing" for c in cases}
            found = {ident(row.key): row.outcome for report in read(junit, "rerun") for row in report.rows}
        return {c: found.get(c, "missing") for c in cases}
