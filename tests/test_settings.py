from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fl_contract.config.platforms import load_registry
from pytest_fl_contract.config.settings import DEFAULT_WORKAROUND, Options, choose_platform_name, resolve
from pytest_fl_contract.util import FlContractError

REGISTRY = load_registry(entry_points=False)


def settle(**kw):
    kw.setdefault("source_root", Path("/nonexistent"))
    return resolve(Options(**kw), REGISTRY, environ={})


@pytest.mark.parametrize(
    "cli, env, ini, expected",
    [
        ("iluvatar", "nvidia", "amd", ("iluvatar", "--platform")),
        (None, "nvidia", "amd", ("nvidia", "FL_PLATFORM")),
        (None, None, "amd", ("amd", "ini fl_platform")),
        (None, None, None, ("auto", "default")),
    ],
)
def test_command_line_wins(cli, env, ini, expected):
    environ = {"FL_PLATFORM": env} if env else {}
    assert choose_platform_name(Options(platform=cli, ini_platform=ini), environ) == expected


def test_alias_resolves_to_canonical_platform():
    settings = settle(platform="corex")
    assert settings.platform.name == "iluvatar" and settings.detection.how == "--platform"


def test_unknown_platform_is_an_error():
    with pytest.raises(FlContractError, match="unknown platform 'nosuch'"):
        settle(platform="nosuch")


def test_defective_platform_gets_the_workaround_by_default():
    settings = settle(platform="iluvatar")
    assert settings.workaround == DEFAULT_WORKAROUND and "masked_2d_row_load" in settings.workaround_why
    assert settings.emulation is None and settings.sweep == "full"


def test_workaround_off_forced_and_custom():
    assert settle(platform="iluvatar", no_workaround=True).workaround is None
    assert settle(platform="nvidia").workaround is None
    assert settle(platform="nvidia", force_workaround=True).workaround == DEFAULT_WORKAROUND
    assert settle(platform="iluvatar", workaround="torch_fl.x").workaround == "torch_fl.x"
    with pytest.raises(FlContractError, match="contradicts"):
        settle(platform="iluvatar", no_workaround=True, force_workaround=True)


def test_emulated_iluvatar_injects_only_what_the_emulator_models():
    settings = settle(platform="iluvatar", emulate=True)
    assert settings.emulation.profile == "iluvatar-small"
    assert settings.emulation.defects == ("masked_2d_row_load",)
    assert settings.sweep == "quick"


def test_cpu_is_always_emulated_without_defects():
    settings = settle(platform="cpu")
    assert settings.emulation.defects == () and settings.emulation.profile == "nvidia-small"


def test_cpu_with_injected_defect_and_profile():
    settings = settle(platform="cpu", inject=("masked_2d_row_load",), profile="nvidia-h200")
    assert settings.emulation.defects == ("masked_2d_row_load",) and settings.emulation.profile == "nvidia-h200"


@pytest.mark.parametrize(
    "kw, message",
    [
        (
            {"platform": "cpu", "inject": ("nosuch",)},
            "unknown defect 'nosuch' for --fl-inject; known: masked_2d_row_load",
        ),
        ({"platform": "cpu", "profile": "nosuch"}, "unknown device profile 'nosuch'; known: iluvatar-bi-v150"),
        ({"platform": "ascend", "emulate": True}, "platform ascend has no emulation profile"),
        ({"platform": "iluvatar", "inject": ("masked_2d_row_load",)}, "need --fl-emulate"),
        ({"platform": "cpu", "sweep": "huge"}, "unknown sweep 'huge'"),
        ({"platform": "cpu", "layout": "tarball"}, "unknown layout 'tarball'"),
        ({"platform": "nvidia", "autotune": "fastest"}, "unknown --fl-autotune 'fastest'; known: rotate, tuned"),
        ({"platform": "cpu", "autotune": "tuned"}, "--fl-autotune is for hardware lanes"),
        (
            {"platform": "cpu", "wrapped_only": True},
            r"--fl-wrapped-only needs a workaround, and this lane has none "
            r"\(not needed on cpu\)",
        ),
        (
            {"platform": "iluvatar", "emulate": True, "no_workaround": True, "wrapped_only": True},
            r"needs a workaround, and this lane has none \(--fl-no-workaround\)",
        ),
        ({"platform": "iluvatar", "wrapped_only": True}, "--fl-wrapped-only is for emulated lanes"),
    ],
)
def test_bad_input_is_one_line(kw, message):
    with pytest.raises(FlContractError, match=message):
        settle(**kw)


def test_layout_follows_csrc(tmp_path):
    assert settle(platform="cpu", source_root=tmp_path).layout.kind == "wheel"
    (tmp_path / "csrc").mkdir()
    assert settle(platform="cpu", source_root=tmp_path).layout.kind == "checkout"
    assert settle(platform="cpu", source_root=tmp_path, layout="wheel").layout.kind == "wheel"


@pytest.mark.parametrize(
    "opts",
    [
        {"platform": "cpu", "unreached_sweeps_only": True},
        {"platform": "iluvatar", "unreached_sweeps_only": True},
        {"platform": "cpu", "emulate": True, "inject": ("cold_first_launch",), "unreached_sweeps_only": True},
    ],
)
def test_unreached_sweeps_only_needs_the_masked_row_defect_injected(opts):
    with pytest.raises(
        FlContractError, match="--fl-unreached-sweeps-only is for emulated lanes with masked_2d_row_load"
    ):
        settle(**opts)
    assert settle(
        platform="iluvatar", emulate=True, no_workaround=True, unreached_sweeps_only=True
    ).unreached_sweeps_only


def test_wrapped_only_on_an_emulated_lane_with_its_workaround():
    settings = settle(platform="iluvatar", emulate=True, wrapped_only=True)
    assert settings.wrapped_only and settings.workaround == DEFAULT_WORKAROUND
    assert not settle(platform="iluvatar", emulate=True).wrapped_only
