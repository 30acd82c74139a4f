"""The contract suites shipped in the package, and how to run them with no path at all.

``contracts/`` of the repository is the package ``pytest_fl_contract.contracts`` (the wheel
carries it).  A suite runs with the packaged ``pytest.ini`` as its configuration and its
directory as the rootdir, so node ids are the same from a checkout and from a wheel, and
running from inside a vendor's checkout never picks up the vendor's pytest.ini or
conftest.py.  Its pytest cache (the run record that orders the next run's cases longest
first) goes to the user's cache directory, never into site-packages.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..util import FlContractError

PACKAGE = "pytest_fl_contract.contracts"
SUITES = ("reductions", "layers", "tensorops", "copy", "probes", "overloads")


def root() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FlContractError(f"{PACKAGE} is not installed (reinstall pytest-fl-contract)")
    return Path(list(spec.submodule_search_locations)[0])


def paths(suites: Sequence[str]) -> list[Path]:
    base = root()
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise FlContractError(f"unknown contract suite {unknown[0]!r}; known: {', '.join(SUITES)}")
    return [base / s for s in (suites or SUITES)]


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$FL_CONTRACT_CACHE``, else ``$XDG_CACHE_HOME/fl-contract``, else ``~/.cache/fl-contract``."""
    if environ.get("FL_CONTRACT_CACHE"):
        return Path(environ["FL_CONTRACT_CACHE"])
    return Path(environ.get("XDG_CACHE_HOME") or Path(environ.get("HOME") or Path.home()) / ".cache") / "fl-contract"


def pytest_argv(suites: Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    """``python -m pytest`` over the packaged suites, isolated from the caller's configuration."""
    base = root()
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "fl_contract",
        "-c",
        str(base / "pytest.ini"),
        "--rootdir",
        str(base),
        "-o",
        f"cache_dir={cache_dir() / 'pytest'}",
        *map(str, paths(suites)),
        *extra,
    ]
