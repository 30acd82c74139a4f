"""Device profiles: what the emulated device tells FlagGems' tile heuristics.

FlagGems picks its reduction tiles from the vendor's heuristics and the SM count
(``softmax_heur_tile_k`` doubles TILE_K while the grid has more than one wave, and
``TILE_N = cdiv(8192, TILE_K)``).  Tiles decide which shapes end in a partial row tile,
so they decide where the masked-row defect shows.  Under the interpreter the cost of a
launch follows the grid size, so the ``*-small`` profiles keep the real vendor
heuristics but report few SMs: wide TILE_K, small grids, fast contracts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry.schema import GRID_LIMITS


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    vendor: str  # flag_gems vendor whose backend and heuristics are used
    device_name: str  # what torch.cuda.get_device_name() reports
    sm_count: int
    capability: tuple[int, int]
    l2_cache_bytes: int
    total_memory: int
    assumption: str
    # CUDA's launch limits (grid x, y, z), which the CUDA-like backends share: a launch past
    # them fails on the device ("invalid argument") where the interpreter would just loop
    max_grid: tuple[int, int, int] = GRID_LIMITS
    # FlagGems' ARCH for the device (sm_90): its backend then registers that architecture's
    # overrides (runtime/backend/_nvidia/hopper/ops) as on the part.  None: FlagGems cannot
    # query an architecture on the CPU, so the generic kernels run
    arch: str | None = None


PROFILES: dict[str, DeviceProfile] = {
    p.name: p
    for p in (
        DeviceProfile(
            "nvidia-small",
            "nvidia",
            "NVIDIA emulated (4 SMs)",
            4,
            (9, 0),
            50 * 2**20,
            80 * 2**30,
            "NVIDIA heuristics with 4 SMs: tiles as wide as they get, grids small enough "
            "for the interpreter; row tiles of cdiv(8192, TILE_K) as on real parts",
        ),
        DeviceProfile(
            "nvidia-h200",
            "nvidia",
            "NVIDIA H200 (emulated)",
            132,
            (9, 0),
            50 * 2**20,
            141 * 2**30,
            "an H200's 132 SMs: the tiles the GPU lane really uses; slow for large K",
        ),
        DeviceProfile(
            "nvidia-hopper",
            "nvidia",
            "NVIDIA Hopper (emulated, 4 SMs)",
            4,
            (9, 0),
            50 * 2**20,
            80 * 2**30,
            "nvidia-small's heuristics with FlagGems' Hopper overrides registered (5.0.2: mul, "
            "mm, fill, sqrt) as on an H100 or H200, where nvidia-small runs the generic kernels",
            arch="sm_90",
        ),
        DeviceProfile(
            "iluvatar-small",
            "iluvatar",
            "Iluvatar BI-V150 (emulated, 4 SMs)",
            4,
            (8, 0),
            16 * 2**20,
            64 * 2**30,
            "FlagGems' iluvatar backend heuristics with 4 SMs (same tile rule as NVIDIA "
            "for non-inner reductions in 5.0.2), small grids for the interpreter",
        ),
        DeviceProfile(
            "iluvatar-bi-v150",
            "iluvatar",
            "Iluvatar BI-V150 (emulated)",
            64,
            (8, 0),
            16 * 2**20,
            64 * 2**30,
            "BI-V150 with 64 compute clusters reported as SMs: an assumption, the vendor "
            "publishes no SM count we could check",
        ),
    )
}


def get_profile(name: str) -> DeviceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown device profile {name!r}; known: {known}") from None
