"""Marker decisions as pure functions, on every kind of platform (like pytest's skipping tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.markers import Context, MarkerError, Skip, Spec, Xfail, evaluate_skip, evaluate_xfail, validate

REGISTRY = load_registry(entry_points=False)
M = pytest.mark


def specs(*marks):
    """What the session evaluates: the item's marks, validated and normalised."""
    return validate([m.mark for m in marks], REGISTRY)


def ctx(name: str, layout: str = "checkout", covered: frozenset[str] = frozenset()) -> Context:
    return Context(REGISTRY.get(name), layout, Path("/src"), covered)


@pytest.mark.parametrize("name", REGISTRY.names)
def test_requires_device_cast_on_every_platform(name):
    decision = evaluate_skip(specs(M.requires_device_cast), ctx(name))
    if name in ("bpu", "iluvatar", "mps", "tsingmicro"):
        assert decision == Skip(f"{name} has no on-device dtype cast (registry: device_cast = false)")
    else:
        assert decision is None


@pytest.mark.parametrize("layout", ["wheel", "checkout"])
def test_requires_csrc_names_the_missing_path(layout):
    decision = evaluate_skip(specs(M.requires_csrc), ctx("nvidia", layout))
    assert decision == (Skip(f"wheel-only layout: {Path('/src/csrc')} does not exist") if layout == "wheel" else None)


@pytest.mark.parametrize("name", REGISTRY.names)
def test_platforms_marker_runs_only_on_listed(name):
    decision = evaluate_skip(specs(M.platforms("nvidia", "corex")), ctx(name))
    assert (decision is None) == (name in ("nvidia", "iluvatar"))


def test_skip_platforms_gives_the_reason():
    mark = M.skip_platforms("iluvatar", reason="no fp64 accumulate").mark
    assert evaluate_skip(validate([mark], REGISTRY), ctx("iluvatar")) == Skip("skipped on iluvatar: no fp64 accumulate")
    assert evaluate_skip(validate([mark], REGISTRY), ctx("nvidia")) is None


@pytest.mark.parametrize("name", REGISTRY.names)
def test_requires_capability(name):
    decision = evaluate_skip(specs(M.requires_capability("bf16", "int64")), ctx(name))
    platform = REGISTRY.get(name)
    assert (decision is None) == (platform.has("bf16") and platform.has("int64"))


def test_known_defect_is_strict_xfail_only_where_listed_and_uncovered():
    mark = M.known_defect("masked_2d_row_load").mark
    decision = evaluate_xfail(validate([mark], REGISTRY), ctx("iluvatar"))
    assert isinstance(decision, Xfail) and decision.strict and decision.defect == "masked_2d_row_load"
    assert "known defect masked_2d_row_load on iluvatar" in decision.reason
    assert (
        evaluate_xfail(validate([mark], REGISTRY), ctx("iluvatar", covered=frozenset({"masked_2d_row_load"}))) is None
    )
    assert evaluate_xfail(validate([mark], REGISTRY), ctx("nvidia")) is None


def test_a_call_that_runs_into_two_defects_takes_either_failure():
    """mm with K = 0 on an H200: its K-tail defect fails the assertion, its shared-memory one
    raises first; both are the registry's, so either holds the strict xfail."""
    from pytest_fl_contract.markers import xfail_mismatch

    marks = [M.known_defect("matmul_empty_k_reads_before").mark, M.known_defect("mm_fp32_small_k_shared_memory").mark]
    decision = evaluate_xfail(validate(marks, REGISTRY), ctx("nvidia"))
    assert decision is not None and decision.defect == "matmul_empty_k_reads_before"
    assert "OutOfResources" in decision.fails_with

    class OutOfResources(Exception):
        pass

    assert xfail_mismatch(decision, "call", OutOfResources("shared memory")) is None
    assert xfail_mismatch(decision, "call", AssertionError("x")) is None
    assert xfail_mismatch(decision, "call", KeyError("x")) is not None


@pytest.mark.parametrize(
    "mark, message",
    [
        (M.platforms.mark, "needs at least one platform"),
        (M.platforms("nosuch").mark, "unknown platform 'nosuch'"),
        (M.skip_platforms("nvidia").mark, "needs reason="),
        (M.skip_platforms("nvidia", reason=" ").mark, "needs reason="),
        (M.skip_platforms("nvidia", reason="x", why="y").mark, "unexpected keyword 'why'"),
        (M.known_defect.mark, "exactly one defect id"),
        (M.known_defect("nosuch").mark, "unknown defect 'nosuch'"),
        (M.requires_capability("fp128").mark, "capability names"),
        (M.requires_csrc("x").mark, "takes no arguments"),
    ],
)
def test_wrong_arguments_are_errors(mark, message):
    with pytest.raises(MarkerError, match=message):
        validate([mark], REGISTRY)


def test_valid_marks_pass_validation():
    validate([M.platforms("cuda").mark, M.known_defect("masked_2d_row_load").mark, M.requires_csrc.mark], REGISTRY)


def test_unrelated_marks_are_ignored():
    assert specs(M.parametrize("x", [1]), M.slow) == ()
    assert evaluate_skip(specs(M.parametrize("x", [1]), M.slow), ctx("iluvatar")) is None


@pytest.mark.parametrize("written", ["Nvidia", "NVIDIA", " nvidia ", "CUDA", "Cuda"])
def test_platform_names_are_normalised_before_evaluation(written):
    """Validation accepts any case and aliases; evaluation must apply what it accepted."""
    assert specs(M.platforms(written)) == (Spec("platforms", ("nvidia",)),)
    assert evaluate_skip(specs(M.platforms(written)), ctx("nvidia")) is None
    assert evaluate_skip(specs(M.platforms(written)), ctx("iluvatar")) == Skip("runs only on nvidia; this is iluvatar")
    skip = specs(M.skip_platforms(written, reason="no fp64"))
    assert evaluate_skip(skip, ctx("nvidia")) == Skip("skipped on nvidia: no fp64")
    assert evaluate_skip(skip, ctx("iluvatar")) is None


def test_aliases_of_one_platform_collapse():
    assert specs(M.platforms("cuda", "nvidia", "Nvidia")) == (Spec("platforms", ("nvidia",)),)


@pytest.mark.parametrize(
    "mark",
    [
        M.known_defect(["masked_2d_row_load"]),
        M.known_defect(5),
        M.skip_platforms("nvidia", reason=None),
        M.skip_platforms("nvidia", reason=3),
        M.platforms(["nvidia"]),
        M.requires_capability(["fp64"]),
    ],
)
def test_unhashable_or_mistyped_arguments_are_marker_errors(mark):
    with pytest.raises(MarkerError):
        validate([mark.mark], REGISTRY)


def test_a_defect_with_a_launch_trigger_is_a_conditional_xfail_that_takes_only_its_error():
    from pytest_fl_contract.markers import xfail_mismatch

    decision = evaluate_xfail(validate([M.known_defect("mm_fp32_small_k_shared_memory").mark], REGISTRY), ctx("nvidia"))
    assert decision is not None and decision.conditional and not decision.strict

    class OutOfResources(Exception):
        pass

    assert xfail_mismatch(decision, "call", OutOfResources("shared memory")) is None
    assert xfail_mismatch(decision, "call", AssertionError("values")) is not None
