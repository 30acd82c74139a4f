"""Install mechanics of the lane's workaround (or the default one where the lane runs
without): installing twice equals once, uninstall puts back the very same objects, and
a build that aliases ``sum_dim_out`` to ``sum_dim`` never gets a non-out function on its
out binding.  The lane's own state is restored afterwards."""

import sys

import pytest

from pytest_fl_contract.layout import resolve_module
from pytest_fl_contract.settings import DEFAULT_WORKAROUND

NAMESPACES = ("flag_gems", "flag_gems.ops", "flag_gems.ops.sum", "flag_gems.ops.mean",
              "flag_gems.ops.softmax", "flag_gems.ops.argmax", "flag_gems.ops.log_softmax",
              "flag_gems.ops.prod", "flag_gems.ops.std")  # fmt: skip


def snapshot(flag_gems):
    """Identity of every public callable the workaround may touch, and of each config entry."""
    state = {}
    for name in NAMESPACES:
        module = sys.modules.get(name)
        if module is not None:
            for attr, value in vars(module).items():
                if callable(value) and not attr.startswith("__"):
                    state[f"{name}.{attr}"] = id(value)
    state["_FULL_CONFIG"] = tuple((n, id(f)) for n, f, *_ in flag_gems._FULL_CONFIG)
    return state


@pytest.fixture
def workaround(flag_gems, fl_settings, fl_workaround):
    module = resolve_module(fl_settings.workaround or DEFAULT_WORKAROUND, fl_settings.layout.source_root).module
    was_installed = fl_workaround is not None
    if was_installed:
        module.uninstall()
    yield module
    module.uninstall()
    if was_installed:
        module.install()


def test_install_is_idempotent_and_uninstall_exact(flag_gems, workaround):
    before = snapshot(flag_gems)
    workaround.install()
    once = snapshot(flag_gems)
    assert once != before, "install() changed nothing"
    workaround.install()
    assert snapshot(flag_gems) == once, "installing twice differs from installing once"
    workaround.uninstall()
    assert snapshot(flag_gems) == before, "uninstall() did not restore the original objects"
    workaround.uninstall()
    assert snapshot(flag_gems) == before


def test_wrappers_keep_names(flag_gems, workaround):
    before = {name: fn.__name__ for name, fn, *_ in flag_gems._FULL_CONFIG}
    workaround.install()
    after = {name: fn.__name__ for name, fn, *_ in flag_gems._FULL_CONFIG}
    assert after == before, "flag_gems excludes ops by function __name__: wrappers must keep it"


def test_aliased_out_binding_is_not_rewired(flag_gems, workaround, monkeypatch):
    ops_sum = sys.modules["flag_gems.ops.sum"]
    monkeypatch.setattr(ops_sum, "sum_dim_out", ops_sum.sum_dim)  # a build that aliases them
    config = tuple(
        (n, ops_sum.sum_dim, *rest) if n == "sum.IntList_out" else (n, f, *rest)
        for n, f, *rest in flag_gems._FULL_CONFIG
    )
    monkeypatch.setattr(flag_gems, "_FULL_CONFIG", config)
    workaround.install()
    assert ops_sum.sum_dim_out is not ops_sum.sum_dim, "the out binding got the non-out wrapper"
    entries = {n: f for n, f, *_ in flag_gems._FULL_CONFIG}
    assert entries["sum.IntList_out"] is not entries["sum.dim_IntList"]
    workaround.uninstall()
