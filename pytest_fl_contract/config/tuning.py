"""How a lane runs FlagGems' autotuned kernels, as a plan: the mode a run asked for and what it
sets in the environment - decided with the rest of the settings, applied by the hardware lane
(``hardware.autotune.install``), where the why of each mode is told."""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("rotate", "tuned")
DEFAULT_MODE = "rotate"
# FlagGems' tuning database under rotate: in memory, one per process, shared by its threads
# (plain ``sqlite://`` is one database per thread: a tuner's table made in one is missing in
# the next)
PRIVATE_DB = "sqlite:///file:fl_contract_rotate?mode=memory&cache=shared&uri=true"


@dataclass(frozen=True)
class Plan:
    mode: str  # rotate | tuned | first (the emulator's)
    env: tuple[tuple[str, str], ...]  # variables it sets
    override: bool = False  # over the lane's own values (rotate: never the user's database)

    def line(self) -> str:
        return {
            "rotate": "rotate (one config per kernel and key, chosen by hash, none timed)",
            "tuned": "tuned (FlagGems' own tuning, Triton's results cached on disk)",
            "first": "first config (the emulator times nothing)",
        }[self.mode]


def plan(mode: str | None, emulated: bool) -> Plan:
    """What a lane does with autotuned kernels.  ``rotate`` gives FlagGems' tuning database
    (``FLAGGEMS_DB_URL``) to an in-memory SQLite per process: its one untimed config must
    never reach the user's database, where real runs would read it as a measured winner."""
    if emulated:
        return Plan("first", ())
    mode = mode or DEFAULT_MODE
    if mode == "tuned":
        return Plan("tuned", (("TRITON_CACHE_AUTOTUNING", "1"),))
    return Plan("rotate", (("FLAGGEMS_DB_URL", PRIVATE_DB),), override=True)
