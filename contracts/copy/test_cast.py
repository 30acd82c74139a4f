"""Cast contracts: the seed's second half.

Two copy tests failed on the Iluvatar lane for reasons of premise, not regression: one
read ``csrc/aten/copy_ops.cc``, which a wheel-only workspace does not have; the other
asserted that a same-device bf16 <-> fp32 cast does no host round trip, which only holds
where the backend has an on-device cast (not on bpu, iluvatar, mps, tsingmicro).  Here
both are scoped by markers from the registry, so every lane gets the same scoping.
"""

from __future__ import annotations

import re

import pytest

CASTS = [("bfloat16", "float32"), ("float32", "bfloat16"), ("float16", "float32"), ("float32", "float16")]


def _transfers(prof) -> list[str]:
    names = [e.name for e in prof.events()]
    return [n for n in names if re.search(r"Memcpy (HtoD|DtoH)|memcpy.*(HtoD|DtoH)", n, re.IGNORECASE)]


@pytest.mark.requires_device_cast
@pytest.mark.parametrize("src, dst", CASTS, ids=[f"{a}-to-{b}" for a, b in CASTS])
def test_same_device_cast_is_transfer_free(fl_settings, fl_device, src, dst):
    """Counted with torch.profiler (host<->device memcpy activities), never by timing."""
    if fl_settings.emulation is not None or fl_device == "cpu":
        pytest.skip(f"{fl_settings.platform.name} runs on the CPU here: a host cast has no device transfer to count")
    import torch
    from torch.profiler import ProfilerActivity, profile

    module = getattr(torch, fl_settings.platform.device_type)
    if not module.is_available():
        pytest.fail(
            f"platform {fl_settings.platform.name} but torch.{fl_settings.platform.device_type} has no device",
            pytrace=False,
        )
    x = torch.randn(1 << 20, device=fl_device).to(getattr(torch, src))
    module.synchronize()
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if fl_device == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=activities) as prof:
        y = x.to(getattr(torch, dst))
        module.synchronize()
    assert y.device == x.device and str(y.dtype) == f"torch.{dst}"
    transfers = _transfers(prof)
    assert not transfers, f"{src} -> {dst} on {fl_device} moved data through the host: {transfers[:4]}"
    torch.testing.assert_close(y.float().cpu(), x.float().cpu(), rtol=0, atol=0) if dst == "float32" else None


@pytest.mark.requires_csrc
@pytest.mark.requires_device_cast
def test_copy_implementation_has_a_device_cast_branch(fl_settings):
    """The backend's copy implementation names the platform's on-device cast (registry:
    copy_source = {path, pattern}; torch_fl keeps it in csrc/aten/copy_ops.cc)."""
    platform = fl_settings.platform
    if platform.copy_source is None:
        pytest.skip(f"the registry has no copy_source for {platform.name}")
    path, pattern = platform.copy_source
    source = fl_settings.layout.source_root / path
    if not source.is_file():
        pytest.fail(f"source checkout {fl_settings.layout.source_root} has no {path}", pytrace=False)
    text = source.read_text(encoding="utf-8", errors="replace")
    assert re.search(pattern, text), f"{path} has no on-device cast branch for {platform.name} (pattern {pattern!r})"
