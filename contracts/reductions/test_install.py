"""Install mechanics of the lane's workaround (or the default one where the lane runs
without): installing twice equals once, uninstall puts back the very same objects, and
a build that aliases ``sum_dim_out`` to ``sum_dim`` never gets a non-out function on its
out binding.  The lane's own state is restored afterwards."""

import sys

import pytest

from pytest_fl_contract.config.layout import resolve_module
from pytest_fl_contract.config.settings import DEFAULT_WORKAROUND
from pytest_fl_contract.registry import ROWS

NAMESPACES = ROWS.modules()
OUT_OPS = [op for op in ROWS.rows("reductions") if op.out_entry]


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


@pytest.mark.parametrize("out_op", OUT_OPS, ids=lambda op: op.name)
def test_aliased_out_binding_is_not_rewired(flag_gems, workaround, monkeypatch, out_op):
    module = sys.modules[out_op.module]
    plain, out = out_op.fn(), out_op.fn(out_op.out_entry)
    bindings = {n: f for n, f, *_ in flag_gems._FULL_CONFIG}
    out_names = [n for n, f in bindings.items() if f is out]
    plain_names = [n for n, f in bindings.items() if f is plain]
    monkeypatch.setattr(module, out_op.out_entry, plain)  # a build that aliases them
    config = tuple((n, plain if n in out_names else f, *rest) for n, f, *rest in flag_gems._FULL_CONFIG)
    monkeypatch.setattr(flag_gems, "_FULL_CONFIG", config)
    workaround.install()
    if f"{out_op.module}.{out_op.entry}" not in workaround.installed():
        pytest.skip(
            f"the workaround leaves {out_op.name} (no kernel of its module drops a row condition): "
            "nothing of it is rewired"
        )
    assert out_op.fn(out_op.out_entry) is not out_op.fn(), "the out binding got the non-out wrapper"
    entries = {n: f for n, f, *_ in flag_gems._FULL_CONFIG}
    for out_name in out_names:
        assert all(entries[out_name] is not entries[p] for p in plain_names), f"{out_name} got the non-out wrapper"
    workaround.uninstall()
