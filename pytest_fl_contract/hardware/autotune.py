"""How a hardware lane runs FlagGems' autotuned kernels (``triton.autotune``, ``libtuner``).

FlagGems autotunes some reductions (std, prod, ... over ``naive_reduction``'s configs) per
new key, e.g. per (M, N): each new shape compiles and times every config, then runs the
fastest.  Only the winner's output is ever checked; the others run for their timing.  On a
contract lane, whose shapes are nearly all new, that is half the lane's time for no
coverage (measured: std and prod accuracy cases 6 - 16 s each on an H200, others < 1.1 s).

``rotate`` (the hardware default) runs one config per (kernel, key), picked by a stable
hash of both, and times nothing: a case compiles one kernel, the same case always gets the
same config (a failure reproduces), and over a sweep every config runs *and is checked*,
where tuning checks only the winners.  ``tuned`` keeps FlagGems' own tuning: kernels under
``triton.autotune`` get Triton's results cached on disk (``TRITON_CACHE_AUTOTUNING``) so
workers and warm runs share them; ``libtuner`` kernels keep FlagGems' own database, as ever.
The emulator has no driver to time: it always runs a tuner's first config.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..config.tuning import MODES, PRIVATE_DB, Plan, plan  # noqa: F401 - the plan install() applies
from ..imports import after_import
from ..util import FlContractError


def pick(configs: Sequence[Any], kernel: str, key: Sequence[Any]) -> Any:
    """One of ``configs``, the same for the same kernel and key in every process (a digest,
    not ``hash``: string hashing is salted per process, xdist workers would disagree; and not
    crc32, whose low bits stay put when keys differ in one digit: (m, 7) chose one config
    for every m)."""
    digest = hashlib.blake2b(f"{kernel}|{key!r}".encode(), digest_size=8).digest()
    return configs[int.from_bytes(digest, "big") % len(configs)]


def tuner_key(tuner: Any, kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key the tuner caches its choice under, from the call being tuned: ``LibTuner``'s
    own ``get_key`` (its strategies bucket sizes: a bucket is one choice), else Triton's
    (the ``key`` arguments, then every tensor's dtype)."""
    args = {**(getattr(tuner, "nargs", None) or {}), **kwargs}
    get_key = getattr(tuner, "get_key", None)
    if callable(get_key):
        return tuple(get_key({k: v for k, v in args.items() if k in tuner.arg_names}))
    key: list[Any] = [args[k] for k in tuner.keys if k in args]
    key += [str(v.dtype) for k, v in args.items() if k in tuner.arg_names and hasattr(v, "dtype")]
    return tuple(key)


def _rotate(autotuner: ModuleType) -> None:
    """Patch ``Autotuner`` (FlagGems' ``LibTuner`` is a subclass): pruning leaves the one
    picked config, and timing it is skipped (with one candidate there is nothing to choose)."""
    cls = autotuner.Autotuner
    if "__fl_rotate__" in vars(cls):
        return
    prune = cls.prune_configs

    def prune_configs(self: Any, kwargs: dict[str, Any], *rest: Any, **more: Any) -> list[Any]:
        configs = list(prune(self, kwargs, *rest, **more))
        if len(configs) < 2:
            return configs
        kernel = getattr(getattr(self, "base_fn", None), "__name__", type(self).__name__)
        return [pick(configs, kernel, tuner_key(self, kwargs))]

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]

    cls.__fl_rotate__ = (cls.prune_configs, cls._bench)
    cls.prune_configs, cls._bench = prune_configs, _bench


def _unrotate(autotuner: ModuleType) -> None:
    cls = autotuner.Autotuner
    if "__fl_rotate__" in vars(cls):
        cls.prune_configs, cls._bench = cls.__fl_rotate__
        del cls.__fl_rotate__


def install(p: Plan, environ: MutableMapping[str, str] | None = None) -> Callable[[], None]:
    """Apply a plan on a hardware lane, before flag_gems (and its tuners) are imported: its
    environment (``tuned`` only where the lane left it unset), then the patch once triton's
    autotuner module has run.  Returns what undoes both (a lane ends; pytester runs lanes
    in one process)."""
    environ = os.environ if environ is None else environ
    if p.mode == "rotate" and "flag_gems.utils.libentry" in sys.modules:
        raise FlContractError(
            "flag_gems was imported before the lane started (by a plugin?): rotate could no longer keep "
            "its untimed choices out of FlagGems' tuning database; run with --fl-autotune tuned"
        )
    before = {name: environ.get(name) for name, _ in p.env}
    for name, value in p.env:
        if p.override:
            environ[name] = value
        else:
            environ.setdefault(name, value)
    withdraw = after_import("triton.runtime.autotuner", _rotate) if p.mode == "rotate" else (lambda: None)

    def undo() -> None:
        withdraw()
        for name, value in before.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
        module = sys.modules.get("triton.runtime.autotuner")
        if module is not None and p.mode == "rotate":
            _unrotate(module)

    return undo


# -- every config of a tuning space (issue 59, class 1: tuning state decides correctness) --------


@dataclass(frozen=True)
class Choice:
    """A config an autotuner ran for one key: which of how many (after pruning), to name a
    failing one so a vendor can pin it (kernel, key, config)."""

    kernel: str
    key: tuple[Any, ...]
    config: str
    index: int
    count: int

    def line(self) -> str:
        return f"{self.kernel} key={self.key!r} config {self.index + 1} of {self.count}: {self.config}"


_FOUND: dict[str, Any] = {}


def _tuners(cls: type) -> tuple[list[Any], list[Any]]:
    """The process's autotuners and FlagGems' LibEntry objects (made when FlagGems' modules are
    imported, so found again only when modules were imported since: one heap walk, not one a
    config)."""
    import gc

    if _FOUND.get("modules") != len(sys.modules) or _FOUND.get("cls") is not cls:
        objects = gc.get_objects()
        _FOUND.update(
            modules=len(sys.modules),
            cls=cls,
            tuners=[o for o in objects if isinstance(o, cls)],
            entries=[o for o in objects if type(o).__name__ == "LibEntry" and hasattr(o, "kernel_cache")],
        )
    return _FOUND["tuners"], _FOUND["entries"]


@contextlib.contextmanager
def config_forced(index: int) -> Iterator[list[Choice]]:
    """Every autotuner of this process (Triton's ``Autotuner``; FlagGems' ``LibTuner`` is one)
    runs its config number ``index`` (modulo its count after pruning) for every key; yields the
    choices as they are made.  The tuners' caches (and LibEntry's compiled kernels, which skip
    the tuner once a key has a winner) are set aside for the context and given back after it,
    so the lane's own choices, tuned or rotated, are untouched (LibTuner's database too: a
    dict stands in for it, so no forced choice is written there): an empty tuning state inside,
    the lane's after.  The one config left is timed as the lane times (rotate: not at all, in
    its private database; tuned: for real, so what FlagGems' database records is measured)."""
    module = sys.modules.get("triton.runtime.autotuner")
    if module is None:
        yield []
        return
    cls = module.Autotuner
    base_prune = vars(cls)["__fl_rotate__"][0] if "__fl_rotate__" in vars(cls) else cls.prune_configs
    saved_prune = cls.prune_configs
    choices: list[Choice] = []

    def prune_configs(self: Any, kwargs: dict[str, Any], *rest: Any, **more: Any) -> list[Any]:
        configs = list(base_prune(self, kwargs, *rest, **more))
        if not configs:
            return configs
        kernel = getattr(getattr(self, "base_fn", None), "__name__", type(self).__name__)
        at = index % len(configs)
        choices.append(Choice(kernel, tuner_key(self, kwargs), str(configs[at]), at, len(configs)))
        return [configs[at]]

    tuners, entries = _tuners(cls)
    # every tuner's choices, Triton's dict and LibTuner's database alike (its ConfigCache: a
    # key found there is launched with the stored config, never pruned, so nothing would be
    # forced - on an H100 addmm's and bmm's every-config cases said "no autotuned kernel")
    caches = [(t, t.cache) for t in tuners if hasattr(t, "cache")]
    kernels = [(e, e.kernel_cache) for e in entries]
    for tuner, _ in caches:
        tuner.cache = {}
    for entry, cache in kernels:
        entry.kernel_cache = tuple({} for _ in cache)
    cls.prune_configs = prune_configs
    try:
        yield choices
    finally:
        cls.prune_configs = saved_prune
        for tuner, cache in caches:
            tuner.cache = cache
        for entry, cache in kernels:
            entry.kernel_cache = cache


def every_config(case: Callable[[], None], limit: int = 64) -> tuple[int, list[str]]:
    """``case`` (a call and its check against the reference, raising AssertionError when the
    result is wrong) under each config of the tuning spaces it reaches: config i of every tuner
    at once, i up to the largest space (at most ``limit``).  Returns how many configs ran and,
    per failing one, the choices it ran (kernel, key, config) and why; ``(0, [])`` where no
    autotuned kernel is on the call's path."""
    failures: list[str] = []
    spaces, at = 1, 0
    while at < min(spaces, limit):
        with config_forced(at) as choices:
            try:
                case()
                problem = None
            except AssertionError as exc:
                problem = (str(exc).strip().splitlines() or [""])[0][:300]
        if not choices:
            if at == 0:
                return 0, [] if problem is None else [f"no autotuned kernel ran: {problem}"]
        else:
            spaces = max(spaces, *(c.count for c in choices))
        if problem is not None:
            ran = "; ".join(dict.fromkeys(c.line() for c in choices)) or "no tuner"
            failures.append(f"{ran}: {problem}")
        at += 1
    return min(spaces, limit), failures
