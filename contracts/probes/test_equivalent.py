"""Equivalent-kernel probes (issue 59): every compiler probe's kernel against its generated
equivalent variants (``probes.variants``: a dead branch, tl.assume in an untaken branch,
reordered statements, a split mask, an unrolled loop), and on hardware against Triton's
interpreter running the same launches.  Two kernels that mean the same must give the same
bits; a disagreement is a compiler defect (``equivalent_kernels_differ``), reported with the
smallest disagreeing variant as a standalone script.  No flag_gems is imported here."""

import numpy as np
import pytest

from pytest_fl_contract.emulation.interpreter import UnsupportedTriton
from pytest_fl_contract.probes import variants
from pytest_fl_contract.probes.battery import PROBES, Probe, ProbeSkip, interpreted

DEFECT = "equivalent_kernels_differ"
MAX_INTERPRETED_PROGRAMS = 4096  # the interpreter runs programs one by one in Python


def _param(probe: Probe):
    marks = [pytest.mark.requires_capability(*probe.needs)] if probe.needs else []
    return pytest.param(probe, id=probe.id, marks=marks)


def agree(a: np.ndarray, b: np.ndarray) -> bool:
    """The same shape and values, NaN matching NaN (the same bits is what equal kernels give)."""
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _recorded(probe: Probe, device: str):
    if probe.hardware_only and interpreted():
        pytest.skip("hardware only: the interpreter would copy the whole buffer per launch")
    recorder = variants.Recorder(probe.kernel)
    try:
        result, _ = probe.launch(device, recorder)
    except ProbeSkip as skip:
        pytest.skip(str(skip))
    return result.detach().cpu().numpy(), recorder.recording(result)


@pytest.mark.parametrize("probe", [_param(p) for p in PROBES])
def test_equivalent_variants_agree(probe: Probe, fl_device: str) -> None:
    original = variants.kernel_source(probe.kernel)
    found = variants.variants(original)
    if not found:
        pytest.skip("no rewrite applies to this kernel")
    base, recording = _recorded(probe, fl_device)
    programs = sum(int(np.prod(launch.grid)) for launch in recording.launches)
    if interpreted() and programs > MAX_INTERPRETED_PROGRAMS:
        pytest.skip(f"{programs} programs: its variants run on hardware (the interpreter runs programs one by one)")
    disagreeing = []
    for variant in found:
        result, _ = probe.launch(fl_device, variants.build(variant.source, probe.kernel))
        result = result.detach().cpu().numpy()
        if not agree(base, result):
            disagreeing.append((variant, result))
    if disagreeing:
        worst = variants.smallest([v for v, _ in disagreeing], original)
        seen = dict((v.name, r) for v, r in disagreeing)[worst.name]
        script = variants.reproduction(probe.id, original, worst, recording, probe.kernel, (base, seen), fl_device)
        names = ", ".join(v.name for v, _ in disagreeing)
        pytest.fail(
            f"compiler: {DEFECT}: {probe.id}'s kernel and its equivalent variants {names} disagree "
            f"(of {len(found)}); the smallest ({worst.name}) as a standalone reproduction:\n{script}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def interpreter_oracle(fl_device: str) -> dict:
    """Every probe's launches as this device ran them, replayed once on Triton's interpreter
    (one child process for all): ``{probe id: (recording's program count, result or error)}``.
    On a Triton the interpreter's patches do not support, every case that asks for it skips
    with the child's one line: no oracle there is no finding."""
    recordings = {}
    for probe in PROBES:
        if probe.hardware_only:
            continue
        recorder = variants.Recorder(probe.kernel)
        try:
            result, _ = probe.launch(fl_device, recorder)
        except Exception:  # noqa: S112 - the probe's own case reports it
            continue
        recording = recorder.recording(result)
        if sum(int(np.prod(launch.grid)) for launch in recording.launches) <= MAX_INTERPRETED_PROGRAMS:
            recordings[probe.id] = recording
    try:
        return variants.oracle(recordings)
    except UnsupportedTriton as refused:
        pytest.skip(str(refused))


@pytest.mark.parametrize("probe", [_param(p) for p in PROBES])
def test_compiled_agrees_with_interpreter(probe: Probe, fl_device: str, request: pytest.FixtureRequest) -> None:
    if interpreted():
        pytest.skip("the lane runs on Triton's interpreter: compiled and interpreted are the same run")
    if probe.hardware_only:
        pytest.skip("hardware only: the interpreter would copy the whole buffer per launch")
    oracle = request.getfixturevalue("interpreter_oracle")
    if probe.id not in oracle:
        pytest.skip(f"more than {MAX_INTERPRETED_PROGRAMS} programs, or no launch: not for the interpreter")
    expected = oracle[probe.id]
    assert not isinstance(expected, str), f"the interpreter could not run {probe.id}: {expected}"
    base, _ = _recorded(probe, fl_device)
    assert agree(base, expected), (
        f"compiler: {DEFECT}: {probe.id} compiled gives {base.tolist()}, Triton's interpreter on the same "
        f"launches {expected.tolist()}"
    )
