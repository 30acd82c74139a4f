"""What a GPU lane's CI job carries from one run to the next: Triton's kernel cache,
FlagGems' generated code and the lane's durations record, and the key to keep them under.

A lane's xdist workers share Triton's on-disk cache within a run, and a self-hosted runner
that keeps its home keeps it between runs; an ephemeral runner (a container, a fresh VM)
starts cold every time and compiles every kernel again.  ``fl-contract triton-cache LANE``
says which directories to restore before ``fl-contract run`` and save after it.

Triton's cache is content-addressed (an entry's name hashes the kernel's source, its
compile options, Triton's own build and the target), so a stale entry is never used
wrongly: it only takes space.  The key's job is therefore not correctness but to bound
growth and to restore the newest matching cache: ``fl-contract-triton-<lane>-<digest>``,
the digest over what makes the compiled kernels of two runs of the lane differ (torch,
Triton, FlagGems and pytest-fl-contract versions, Python's major.minor, the machine).  CI
restores the newest cache under that key and saves a new one each run; an upgrade starts a
new key instead of piling new kernels onto the old ones.  FlagGems' directory holds the
code it generates (rewritten by each process) and libtuner's database of tuned configs,
named by device and Triton version but not FlagGems': one more reason its version is in
the key.

Nothing here imports torch, triton or flag_gems: versions come from package metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from platform import machine
from typing import TYPE_CHECKING

from ..util import FlContractError, installed_version

if TYPE_CHECKING:
    from ..lanes.manifest import Lane, Step

PREFIX = "fl-contract-triton-"
DIST = "pytest-fl-contract"
# Distributions whose versions change the kernels: Triton under PyTorch's names too (nightly,
# ROCm), FlagGems under both spellings (metadata may know it by either).
DISTS = ("torch", "triton", "pytorch-triton", "pytorch-triton-rocm", "flag_gems", "flag-gems", DIST)
DIGEST_CHARS = 16
EMULATE = "--fl-emulate"


@dataclass(frozen=True)
class TritonCache:
    """The directories to carry (Triton's, FlagGems') and the key to save them under."""

    paths: tuple[str, ...]
    key: str


def _home(environ: Mapping[str, str]) -> str:
    """``~`` as ``os.path.expanduser`` reads it (``HOME``; without it, the user's home)."""
    if "HOME" in environ:
        return environ["HOME"].rstrip("/") or "/"
    return os.path.expanduser("~")


def _set(environ: Mapping[str, str], name: str, why: str) -> str | None:
    """The variable's value; None when unset.  Set but empty is refused: ``why`` says what
    the package would do with it, which is never a directory worth carrying."""
    value = environ.get(name)
    if value == "":
        raise FlContractError(f"{name} is set but empty: {why}; unset it or name a directory")
    return value


def triton_dir(environ: Mapping[str, str] = os.environ) -> str:
    """Triton's cache directory as ``triton.knobs`` resolves it: ``TRITON_CACHE_DIR``, else
    ``$TRITON_HOME/.triton/cache``, else ``~/.triton/cache`` (no ``~`` expansion of either
    variable: Triton does none)."""
    given = _set(environ, "TRITON_CACHE_DIR", "Triton cannot compile with no cache directory")
    if given is not None:
        return given
    home = environ.get("TRITON_HOME")  # empty: Triton's cache is .triton/cache in the working directory
    return os.path.join(_home(environ) if home is None else home, ".triton", "cache")


def flaggems_dir(environ: Mapping[str, str] = os.environ) -> str:
    """FlagGems' cache (``flag_gems.utils.code_cache``): ``FLAGGEMS_CACHE_DIR``, else ``~/.flaggems``."""
    given = _set(environ, "FLAGGEMS_CACHE_DIR", "FlagGems would write its generated code into the working directory")
    return given if given is not None else os.path.join(_home(environ), ".flaggems")


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """Each directory once, and none inside another that is carried already."""
    found: list[str] = []
    for path in paths:
        if "\n" in path or "\r" in path:
            raise FlContractError(f"cache directory {path!r} holds a line break: no CI output can carry it")
        if not any(PurePath(path).is_relative_to(kept) for kept in found):
            found = [kept for kept in found if not PurePath(kept).is_relative_to(path)] + [path]
    return tuple(found)


def cache_dirs(environ: Mapping[str, str] = os.environ, cwd: str | None = None) -> tuple[str, ...]:
    """Triton's, FlagGems' and fl-contract's directories, absolute: a relative one is the
    working directory's, where ``fl-contract run`` starts the lane's steps.  fl-contract's
    holds the packaged suites' pytest cache: the durations a lane orders its cases by,
    longest first (an H200 reductions lane, cold: 107 s without a record, 89 s with one)."""
    from ..config.suites import cache_dir

    base = os.getcwd() if cwd is None else cwd
    found = (triton_dir(environ), flaggems_dir(environ), str(cache_dir({**environ, "HOME": _home(environ)})))
    return _outermost(os.path.normpath(os.path.join(base, d)) for d in found)


def fingerprint(version: Callable[[str], str | None] | None = None) -> dict[str, str]:
    """What makes two runs' kernels differ: the versions (``-``: not installed; ``version``
    reads them, by default from package metadata), Python and the machine."""
    from .. import __version__

    lookup = installed_version if version is None else version
    found = {dist: lookup(dist) or "-" for dist in DISTS}
    if found[DIST] == "-":  # a source tree that was never installed: its own
        found[DIST] = __version__
    found["python"] = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found["machine"] = machine()
    return found


def cache_key(lane: str, platform: str, found: Mapping[str, str] | None = None, packages: Sequence[str] = ()) -> str:
    """``fl-contract-triton-<lane>-<digest>``: readable where CI lists caches, the digest over
    the platform, ``fingerprint()`` and the pip specs the lane installs for itself (its
    ``packages:``, a FlagGems other than this environment's)."""
    facts: dict[str, object] = {"platform": platform, **(fingerprint() if found is None else found)}
    if packages:
        facts["packages"] = list(packages)
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:DIGEST_CHARS]
    return f"{PREFIX}{lane}-{digest}"


def plan(lane: str, platform: str, environ: Mapping[str, str] = os.environ, cwd: str | None = None) -> TritonCache:
    """The lane's directories in ``environ`` and its key (a manifest lane: ``lane_plan``)."""
    return TritonCache(cache_dirs(environ, cwd), cache_key(lane, platform))


def _compiles(lane: Lane, step: Step) -> bool:
    """Whether the step can compile a kernel: not a comparison of reports, not under
    Triton's interpreter (``--fl-emulate``, ``TRITON_INTERPRET=1``); a command may."""
    if step.kind == "compare" or {**lane.env, **step.env}.get("TRITON_INTERPRET") == "1":
        return False
    return not (step.kind == "pytest" and EMULATE in (*lane.pytest_args, *step.args))


def interpreted(lane: Lane) -> str | None:
    """Why the lane compiles no kernel, so has no cache worth carrying; None when it does."""
    if lane.platform == "cpu":
        return "platform cpu: Triton's interpreter compiles nothing"
    if not any(_compiles(lane, step) for step in lane.steps):
        return f"every step runs on Triton's interpreter ({EMULATE}), which compiles nothing"
    return None


def lane_plan(lane: Lane, environ: Mapping[str, str] = os.environ, cwd: str | None = None) -> TritonCache | None:
    """The lane's cache, None when it compiles nothing.  The directories are those of the
    environment each compiling step gets (the manifest's lane and step ``env:`` over
    ``environ``), as ``fl-contract run`` gives it."""
    if interpreted(lane) is not None:
        return None
    from ..lanes.manifest import PACKAGE_VAR

    envs = [{**environ, **lane.env, **step.env} for step in lane.steps if _compiles(lane, step)]
    specs = [PACKAGE_VAR.sub(lambda m: environ.get(m.group(1), m.group(0)), spec) for spec in lane.packages]
    return TritonCache(
        _outermost(path for env in envs for path in cache_dirs(env, cwd)),
        cache_key(lane.name, lane.platform, packages=specs),
    )
