"""The overload suite's explicit generators and device-only references (issue 57): generators
import nothing of ``samples``; every generator's samples are calls torch itself takes as the
overload's own arguments; a device-only overload with a reference is testable (torch's CPU
dispatch reaches the reference, FlagGems' registration over it replaces it only while it lasts),
and each reference agrees with torch's autograd or its CPU op of the same math."""

from __future__ import annotations

import ast
import warnings

import pytest

from .conftest import ROOT

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # OpInfo's SampleInput lives in torch's testing package

OVERLOADS = ROOT / "pytest_fl_contract" / "overloads"


def test_generators_import_no_samples() -> None:
    """Imports go one way: ``samples`` imports ``generators``."""
    tree = ast.parse((OVERLOADS / "generators.py").read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)] + [
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    ]
    assert not [m for m in imported if m.split(".")[-1] == "samples"], imported


def test_samples_reads_the_generators_table() -> None:
    from pytest_fl_contract.overloads import generators, samples

    assert samples.GENERATORS is generators.GENERATORS
    assert "gen:_fused_adam" in samples.candidates("_fused_adam")
    assert samples.supports("gen:_fused_adam", "float32") and not samples.supports("gen:_fused_adam", "float64")


def _overloads_taking(base: str, sample: object) -> list[str]:
    """The overloads of ``aten::<base>`` torch computes ``sample`` with, called as the suite calls a
    generator's sample (its own arguments)."""
    from pytest_fl_contract.overloads import samples

    packet = getattr(torch.ops.aten, base)
    took = []
    for name in packet.overloads():
        overload = base if name == "default" else f"{base}.{name}"
        sch = samples.schema(overload)
        if sch is None or any(a.is_out for a in sch.arguments):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                samples.invoke(overload, samples.Source(f"gen:{base}", "aten"), samples.fresh(sample))
        except Exception:
            continue
        took.append(overload)
    return took


def test_every_generator_sample_is_a_call_torch_takes() -> None:
    from pytest_fl_contract.overloads import references, samples
    from pytest_fl_contract.overloads.generators import GENERATORS

    references.install()
    refused = {}
    for base in GENERATORS:
        drawn = samples.drawn(f"gen:{base}", "float32")
        assert drawn, base
        for index, sample in enumerate(drawn):
            if not _overloads_taking(base, sample):
                refused[f"{base}[{index}]"] = repr(sample)[:120]
    assert not refused, refused


def test_a_generator_draws_the_same_samples_in_every_process() -> None:
    from pytest_fl_contract.overloads import samples

    a = samples._drawn.__wrapped__("gen:_fused_adam", "float32", 7)
    b = samples._drawn.__wrapped__("gen:_fused_adam", "float32", 7)
    assert torch.equal(a[0].input[0], b[0].input[0])


def test_a_device_only_overload_with_a_reference_is_testable() -> None:
    """Before: ``why_untestable`` said "no float64 reference on the CPU" for every device-only op."""
    from pytest_fl_contract.overloads import cases, references, samples
    from pytest_fl_contract.overloads.table import Overload

    entry = Overload("_masked_scale", "_masked_scale", "flag_gems.ops._masked_scale", True)
    assert cases.why_untestable(entry) == ""
    assert all(cases.host_kernel(name) for name in references.REFERENCES)
    unknown = Overload("_flash_attention_forward", "f", "flag_gems.ops.attention", True)
    assert "device-only" in cases.why_untestable(unknown)
    # FlagGems' function, registered over the reference for one case, replaces it only meanwhile
    x, mask = torch.randn(5), torch.ones(5, dtype=torch.uint8)
    lib = samples.registered("_masked_scale", lambda s, m, k: s * 0, ("CPU",))
    try:
        assert torch.equal(torch.ops.aten._masked_scale(x, mask, 2.0), x * 0)
    finally:
        lib._destroy()
    assert torch.equal(torch.ops.aten._masked_scale(x, mask, 2.0), x * 2.0)


def _grads(f, inputs, grad_out):
    leaves = [t.detach().requires_grad_(True) for t in inputs]
    out = f(*leaves)
    return torch.autograd.grad(out, leaves, grad_out)


def test_references_agree_with_torch_autograd() -> None:
    import torch.nn.functional as F

    from pytest_fl_contract.overloads.references import REFERENCES

    d = torch.float64
    x = torch.randn(2, 3, 9, 17, dtype=d)
    for k, s, p, ceil in (([3, 3], [2, 2], [1, 1], False), ([2, 2], [2, 2], [0, 0], True)):
        go = torch.randn(F.max_pool2d(x, k, s, p, 1, ceil_mode=ceil).shape, dtype=d)
        (want,) = _grads(lambda t, k=k, s=s, p=p, c=ceil: F.max_pool2d(t, k, s, p, 1, ceil_mode=c), [x], go)
        assert torch.allclose(REFERENCES["max_pool2d_backward"](go, x, k, s, p, [1, 1], ceil), want)

    xi, w, b = torch.randn(2, 9, 33, dtype=d), torch.randn(17, 33, dtype=d), torch.randn(17, dtype=d)
    go = torch.randn(2, 9, 17, dtype=d)
    want = _grads(F.linear, [xi, w, b], go)
    for got, ref in zip(REFERENCES["linear_backward"](xi, go, w, [True] * 3), want):
        assert torch.allclose(got, ref)

    h = 17
    inp, hx, cx = torch.randn(3, 5, dtype=d), torch.randn(3, h, dtype=d), torch.randn(3, h, dtype=d)
    wih, whh = torch.randn(4 * h, 5, dtype=d), torch.randn(4 * h, h, dtype=d)
    bih, bhh = torch.randn(4 * h, dtype=d), torch.randn(4 * h, dtype=d)
    hy, cy = torch.lstm_cell(inp, (hx, cx), wih, whh, bih, bhh)
    rhy, rcy, workspace = REFERENCES["_thnn_fused_lstm_cell"](inp @ wih.t(), hx @ whh.t(), cx, bih, bhh)
    assert torch.allclose(rhy, hy) and torch.allclose(rcy, cy)

    ghy, gcy = torch.randn_like(hy), torch.randn_like(cy)
    gates, c0 = (inp @ wih.t()).requires_grad_(True), cx.clone().requires_grad_(True)
    fy, fc, _ = REFERENCES["_thnn_fused_lstm_cell"](gates, hx @ whh.t(), c0, bih, bhh)
    want_gates, want_cx = torch.autograd.grad((fy, fc), (gates, c0), (ghy, gcy))
    got = REFERENCES["_thnn_fused_lstm_cell_backward_impl"](ghy, gcy, cx, rcy, workspace, True)
    assert torch.allclose(got[0], want_gates) and torch.allclose(got[1], want_cx)
    assert torch.allclose(got[2], want_gates.sum(0))

    x, w = torch.randn(2, 4, 9, 17, dtype=d), torch.randn(8, 1, 3, 3, dtype=d)
    got = REFERENCES["_conv_depthwise2d"](x, w, [3, 3], None, [1, 1], [1, 1], [1, 1])
    assert torch.allclose(
        got, torch.nn.Conv2d(4, 8, 3, padding=1, groups=4, bias=False, dtype=d)._conv_forward(x, w, None)
    )
