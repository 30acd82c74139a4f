"""Which device each xdist worker of a lane runs on (``--fl-devices N|all``): pure, tested directly.

A host with several accelerators runs a lane no faster than one with a single card unless
the workers spread over them.  Choosing the device inside the worker (``set_device``) comes
too late for what a process does before a case asks - a context on device 0, a vendor runtime
that reserves every visible card - and a worker xdist starts again after a crash gets a new
id, so a round robin by id moves it.  So the controller pins each worker before its process
imports anything: xdist's execnet spec of the worker carries the platform's visible-devices
variable (``popen//env:CUDA_VISIBLE_DEVICES=3``), round robin over the devices in spec order.
The process starts seeing one device, and a replaced worker keeps its spec and its device.

The variable is the platform registry's (``visible_devices:``, a default by device type).
On an emulated lane it is ``FL_CONTRACT_EMULATED_DEVICES``: the emulated host has the devices
it lists (one where it is unset), or as many as ``--fl-devices N`` names, and each worker sees
only its own id there.  One device - the default, ``1``, or ``all`` on a host with one - is
today's run: nothing is pinned and xdist gets the arguments it always got.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Union

from ..util import FlContractError

ALL = "all"
EMULATED_VAR = "FL_CONTRACT_EMULATED_DEVICES"  # the emulated host's devices, and a pinned worker's one
PINNED_ENV = "FL_CONTRACT_DEVICE"  # in a pinned worker: "INDEX/COUNT", its place in the plan
# The visible-devices variable by device type, where the registry's platform names none
# (FlagGems' own parallel benchmark and tuner use CUDA_VISIBLE_DEVICES and MUSA_VISIBLE_DEVICES;
# the rest are the vendors' runtime variables).
BY_DEVICE_TYPE = {
    "cuda": "CUDA_VISIBLE_DEVICES",
    "npu": "ASCEND_RT_VISIBLE_DEVICES",
    "mlu": "MLU_VISIBLE_DEVICES",
    "musa": "MUSA_VISIBLE_DEVICES",
    "gcu": "TOPS_VISIBLE_DEVICES",
}
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

Asked = Union[int, str, None]  # a count, ALL, or None (not asked: one device)


def parse(value: object, source: str = "--fl-devices") -> Asked:
    """``--fl-devices``' value: a positive count or ``all``; anything else is one line."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if text == ALL:
        return ALL
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise FlContractError(f"{source} {str(value)!r}: expected a number of devices (1 or more) or 'all'")


def visible_ids(environ: Mapping[str, str], var: str) -> tuple[str, ...] | None:
    """The devices ``var`` lists (``0,2,3``; a UUID each is fine), or None where it is unset."""
    value = environ.get(var)
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class Plan:
    """The devices a run's workers spread over, by worker index (the order of xdist's specs)."""

    var: str
    ids: tuple[str, ...]
    source: str  # how they were found, for the header

    def device_of(self, worker: int) -> str:
        return self.ids[worker % len(self.ids)]

    def env_of(self, worker: int) -> dict[str, str]:
        """What worker ``worker``'s process starts with."""
        return {self.var: self.device_of(worker), PINNED_ENV: f"{worker % len(self.ids)}/{len(self.ids)}"}

    def line(self, workers: int) -> str:
        spread = ", ".join(f"gw{w} {self.var}={self.device_of(w)}" for w in range(workers))
        return f"{len(self.ids)} devices ({self.source}), one per worker round robin: {spread}"


def plan(
    asked: Asked, var: str, environ: Mapping[str, str], count: Callable[[], int], *, emulated: bool = False
) -> Plan | None:
    """The devices ``asked`` names on this host, or None for one device (today's run).

    Where ``var`` is set its list is the host's devices (a runner that was given a few cards
    keeps to them); else ``count()`` says how many the platform's runtime sees (ids 0..N-1).
    An emulated host has as many devices as asked (``all``: the variable's list, else one)."""
    if asked is None or asked == 1:
        return None
    listed = visible_ids(environ, var)
    if listed is not None:
        available, source = listed, f"{var}={','.join(listed)}"
        if not listed:
            raise FlContractError(f"--fl-devices {asked}: {var} is set but lists no device")
    elif emulated:
        n = 1 if asked == ALL else int(asked)
        available, source = tuple(str(i) for i in range(n)), "emulated"
    else:
        n = count()
        available, source = tuple(str(i) for i in range(n)), f"{n} counted by the platform's runtime"
    if asked == ALL:
        ids = available
    elif int(asked) > len(available):
        raise FlContractError(f"--fl-devices {asked}: more devices than this host has: {len(available)} ({source})")
    else:
        ids = available[: int(asked)]
    bad = next((i for i in ids if "//" in i or not i.isprintable() or " " in i), None)
    if bad is not None:
        raise FlContractError(f"--fl-devices: device id {bad!r} ({source}) cannot be passed to a worker")
    return Plan(var, ids, source) if len(ids) > 1 else None


def expand(tx: Sequence[str]) -> list[str]:
    """xdist's ``--tx`` list, one spec a worker (``3*popen`` is three), as its NodeManager reads it."""
    specs: list[str] = []
    for spec in tx:
        count, star, rest = spec.partition("*")
        if star and count.isdigit():
            specs += [rest] * int(count)
        else:
            specs.append(spec)
    return specs


def pinned(tx: Sequence[str], chosen: Plan) -> list[str]:
    """Each worker's spec with its device in its environment; only local (popen) workers
    can be pinned by a variable of this host, and each device needs a worker."""
    specs = expand(tx)
    remote = next((s for s in specs if "popen" not in s.split("//")), None)
    if remote is not None:
        raise FlContractError(
            f"--fl-devices spreads local xdist workers over this host's devices; --tx {remote!r} is not one"
        )
    if len(specs) < len(chosen.ids):
        raise FlContractError(
            f"--fl-devices: {len(chosen.ids)} devices but {len(specs)} xdist workers: give each "
            f"device one (-n {len(chosen.ids)} or more, or -n auto)"
        )
    return [spec + "".join(f"//env:{k}={v}" for k, v in chosen.env_of(w).items()) for w, spec in enumerate(specs)]


@dataclass(frozen=True)
class WorkerDevice:
    """A pinned worker's device, as its own process sees it."""

    var: str
    id: str
    index: int
    count: int

    def line(self) -> str:
        return f"{self.var}={self.id} (device {self.index + 1} of {self.count})"


def worker_device(environ: Mapping[str, str], var: str | None) -> WorkerDevice | None:
    """This process's device where the controller pinned it (``PINNED_ENV``), else None."""
    place = environ.get(PINNED_ENV, "")
    index, slash, count = place.partition("/")
    if not (slash and index.isdigit() and count.isdigit()) or var is None or var not in environ:
        return None
    return WorkerDevice(var, environ[var], int(index), int(count))


def runtime_count(device_type: str, timeout: float = 120.0) -> int:
    """How many devices the platform's torch sees, asked in a short child process: the
    controller never imports torch (nor opens a context on a card its workers will use)."""
    import subprocess
    import sys

    code = f"import torch; print(int(getattr(torch, {device_type!r}).device_count()))"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        return int(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        raise FlContractError(
            f"--fl-devices: cannot count the {device_type} devices (torch.{device_type}.device_count() "
            "in a child process failed): list them in the platform's visible-devices variable"
        ) from None


def variable(visible_devices: str | None, emulated: bool) -> str | None:
    """The variable that pins a worker's device on this lane (None: the platform has none)."""
    return EMULATED_VAR if emulated else visible_devices
