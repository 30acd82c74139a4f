"""The masked-reduction workaround against a synthetic FlagGems (no kernels needed):
routing, keepdim, dim form, out= semantics, install / uninstall / aliased builds."""

from __future__ import annotations

import contextlib
import inspect
import sys
import types
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fl_contract.workarounds import fastpath
from pytest_fl_contract.workarounds import masked_reductions as mr


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), dim=st.integers(-5, 5))
def test_route_only_single_non_inner_int_dims(shape, dim):
    ndim = len(shape)
    d = dim % ndim if -ndim <= dim < ndim else None
    rest = 1
    for s in shape[d + 1 :] if d is not None else []:
        rest *= s
    total = 1
    for s in shape:
        total *= s
    expected = d if d is not None and rest > 1 and total > 0 else None
    assert mr.route(shape, dim) == expected
    assert mr.route(shape, [dim]) == expected
    assert mr.route(shape, (dim,)) == expected


@pytest.mark.parametrize("dim", [None, [0, 1], [], True, 1.0, "1", torch.tensor(1)])
def test_route_forwards_everything_else(dim):
    assert mr.route((3, 5, 7), dim) is None


class FakeGems:
    """Entry points with FlagGems' signatures and quirks, recording what they were called with."""

    def __init__(self, alias_out: bool = False):
        self.calls: list[tuple] = []
        calls = self.calls

        def sum_dim(inp, dim=None, keepdim=False, *, dtype=None):
            calls.append(("sum_dim", tuple(inp.shape), dim, keepdim))
            if dim is None:
                return inp.sum(dtype=dtype)
            dims = [d % inp.ndim for d in dim]  # an int dim raises TypeError, as in 5.0.2
            if dtype is None and inp.dtype == torch.bool:
                dtype = torch.int64
            return inp.sum(dims, keepdim=keepdim, dtype=dtype)

        def sum_dim_out(inp, dim=None, keepdim=False, *, dtype=None, out):
            calls.append(("sum_dim_out", tuple(inp.shape), dim, keepdim))
            if dtype is None and inp.dtype == torch.bool:
                dtype = torch.int64
            result = inp.sum([d % inp.ndim for d in dim], keepdim=keepdim, dtype=dtype)
            out.resize_(result.shape)
            out.copy_(result)
            return out

        def softmax(self, dim, half_to_float=False):
            calls.append(("softmax", tuple(self.shape), dim, self.is_contiguous()))
            return self.softmax(dim, dtype=torch.float32 if half_to_float else None)

        def prod_dim(inp, dim=None, keepdim=False, *, dtype=None):
            return inp.prod(dim, keepdim=keepdim)

        if alias_out:
            sum_dim_out = sum_dim  # noqa: F811 - a build that aliases the out entry point
        self.modules = {
            "flag_gems": types.ModuleType("flag_gems"),
            "flag_gems.ops": types.ModuleType("flag_gems.ops"),
            "flag_gems.ops.sum": types.ModuleType("flag_gems.ops.sum"),
            "flag_gems.ops.softmax": types.ModuleType("flag_gems.ops.softmax"),
            "flag_gems.ops.prod": types.ModuleType("flag_gems.ops.prod"),
        }
        m = self.modules
        for name, fn in (("sum_dim", sum_dim), ("sum_dim_out", sum_dim_out), ("sum_dim_kernel_non_inner", object())):
            setattr(m["flag_gems.ops.sum"], name, fn)
        m["flag_gems.ops.softmax"].softmax = softmax
        m["flag_gems.ops.softmax"].softmax_kernel_non_inner = object()
        m["flag_gems.ops.prod"].prod_dim = prod_dim  # no non-inner kernel: left alone
        for ns in (m["flag_gems"], m["flag_gems.ops"]):
            ns.sum_dim, ns.sum_dim_out, ns.softmax, ns.prod_dim = sum_dim, sum_dim_out, softmax, prod_dim
        m["flag_gems"].current_work_registrar = None
        m["flag_gems"]._FULL_CONFIG = (
            ("_softmax", softmax),
            ("prod.dim_int", prod_dim),
            ("sum.IntList_out", sum_dim_out),
            ("sum.dim_IntList", sum_dim),
        )
        m["flag_gems"].FULL_CONFIG_BY_FUNC = {}
        for target in mr.targets():  # modules this build lacks: hide any real flag_gems already imported
            self.modules.setdefault(target.module, None)

    def entry(self, module, name):
        return getattr(self.modules[f"flag_gems.ops.{module}"], name)


@contextlib.contextmanager
def installed_fake() -> Iterator[FakeGems]:
    """A synthetic build with the workaround installed, fast path on: for tests that
    hypothesis calls many times (a function-scoped fixture would be shared by them)."""
    gems = FakeGems()
    saved = {name: sys.modules.get(name) for name in gems.modules}
    sys.modules.update(gems.modules)
    try:
        mr.install()
        yield gems
    finally:
        mr.uninstall()
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@pytest.fixture
def fake(monkeypatch):
    """A synthetic build; the fast path is off so the moved-axis path itself is tested."""

    def make(alias_out=False):
        gems = FakeGems(alias_out)
        for name, module in gems.modules.items():
            monkeypatch.setitem(sys.modules, name, module)
        return gems

    with fastpath.disabled():
        yield make
    mr.uninstall()


def test_applicable_targets_follow_the_installed_build(fake):
    fake()
    assert [t.qualname for t in mr.applicable_targets()] == [
        "flag_gems.ops.sum.sum_dim",
        "flag_gems.ops.sum.sum_dim_out",
        "flag_gems.ops.softmax.softmax",
    ]


def test_non_inner_dim_is_moved_back_and_keepdim_reapplied(fake):
    gems = fake()
    mr.install()
    x = torch.arange(3 * 5 * 7, dtype=torch.float32).reshape(3, 5, 7)
    for keepdim in (False, True):
        gems.calls.clear()
        got = gems.entry("sum", "sum_dim")(x, [1], keepdim)
        assert gems.calls == [("sum_dim", (3, 7, 5), [2], False)]  # list form kept, keepdim off
        assert torch.equal(got, x.sum(1, keepdim=keepdim))


def test_dim_form_is_preserved(fake):
    gems = fake()
    mr.install()
    x = torch.ones(3, 5, 7)
    with pytest.raises(TypeError):  # an int dim stays an int: the entry point rejects it as before
        gems.entry("sum", "sum_dim")(x, 1)
    gems.entry("sum", "sum_dim")(x, (1,))
    assert gems.calls[-1][2] == (2,)


@pytest.mark.parametrize("dim", [[2], [0, 1], None])
def test_other_dims_are_forwarded_unchanged(fake, dim):
    gems = fake()
    mr.install()
    x = torch.ones(3, 5, 1)
    gems.entry("sum", "sum_dim")(x, dim, True)
    assert gems.calls == [("sum_dim", (3, 5, 1), dim, True)]


def test_softmax_is_moved_back_contiguous(fake):
    gems = fake()
    mr.install()
    x = torch.randn(3, 5, 7)
    got = gems.entry("softmax", "softmax")(x, 1)
    assert gems.calls == [("softmax", (3, 7, 5), 2, True)]
    assert got.is_contiguous() and torch.allclose(got, x.softmax(1))


@pytest.mark.parametrize("keepdim", [False, True])
def test_out_keeps_callers_buffer_dtype_and_keepdim(fake, keepdim):
    gems = fake()
    mr.install()
    x = torch.rand(3, 5, 7) > 0.5
    buf = torch.empty(0, dtype=torch.int64)
    ret = gems.entry("sum", "sum_dim_out")(x, [1], keepdim, out=buf)
    assert ret is buf and buf.dtype == torch.int64
    assert torch.equal(buf, x.sum(1, keepdim=keepdim))
    assert gems.calls[-1] == ("sum_dim_out", (3, 7, 5), [2], False)


def test_install_idempotent_uninstall_exact_names_kept(fake):
    gems = fake()
    flag = gems.modules["flag_gems"]
    before = {k: v for k, v in vars(gems.modules["flag_gems.ops.sum"]).items()}, flag._FULL_CONFIG
    entries = mr.install()
    assert set(entries) == {
        "flag_gems.ops.sum.sum_dim",
        "flag_gems.ops.sum.sum_dim_out",
        "flag_gems.ops.softmax.softmax",
    }
    once = flag._FULL_CONFIG
    assert mr.install() == entries and flag._FULL_CONFIG is once
    assert [fn.__name__ for _, fn in once] == [fn.__name__ for _, fn in before[1]]
    assert flag.prod_dim is gems.modules["flag_gems.ops.prod"].prod_dim  # not applicable: untouched
    assert flag.sum_dim is gems.entry("sum", "sum_dim") and flag.sum_dim.__wrapped__ is not None
    mr.uninstall()
    assert flag._FULL_CONFIG is before[1]
    assert vars(gems.modules["flag_gems.ops.sum"]) == before[0]


def test_aliased_build_never_gets_non_out_wrapper_on_out_binding(fake):
    gems = fake(alias_out=True)
    mr.install()
    ops_sum = gems.modules["flag_gems.ops.sum"]
    assert ops_sum.sum_dim_out is not ops_sum.sum_dim
    assert ops_sum.sum_dim_out.__fl_target__.out and not ops_sum.sum_dim.__fl_target__.out
    entries = dict(gems.modules["flag_gems"]._FULL_CONFIG)
    assert entries["sum.IntList_out"] is ops_sum.sum_dim_out and entries["sum.dim_IntList"] is ops_sum.sum_dim


def test_refuses_after_ops_were_registered(fake):
    gems = fake()
    gems.modules["flag_gems"].current_work_registrar = object()
    with pytest.raises(RuntimeError, match="before the first dispatch"):
        mr.install()


def test_fast_path_takes_float_calls_in_the_accepted_form(monkeypatch):
    gems = FakeGems()
    for name, module in gems.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    try:
        mr.install()
        x = torch.randn(3, 5, 7)
        got = gems.entry("sum", "sum_dim")(x, [1], True)
        assert gems.calls == []  # the fast path (interpreted Triton here) answered, not the original
        torch.testing.assert_close(got, x.sum(1, keepdim=True))
        soft = gems.entry("softmax", "softmax")(x, 0)
        torch.testing.assert_close(soft, x.softmax(0))
        with pytest.raises(TypeError):  # the form sum_dim rejects still goes to it and fails there
            gems.entry("sum", "sum_dim")(x, 1)
        gems.entry("sum", "sum_dim")(x.to(torch.int32), [1])  # not a float: the moved-axis path
        assert gems.calls[-1] == ("sum_dim", (3, 7, 5), [2], False)
    finally:
        mr.uninstall()


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), dim=st.integers(-4, 3), keepdim=st.booleans())
def test_wrapped_sum_equals_torch(shape, dim, keepdim):
    with installed_fake() as gems:  # the fast path may answer: it must equal torch too
        x = torch.randint(-9, 9, shape).float()
        if -len(shape) <= dim < len(shape):
            assert torch.equal(gems.entry("sum", "sum_dim")(x, [dim], keepdim), x.sum(dim, keepdim=keepdim))


# (op, keepdim or half_to_float, dim form), each variant once and three of them twice
_VARIANTS = [
    ("sum", False, "list"),
    ("sum", True, "list"),
    ("softmax", False, "int"),
    ("softmax", True, "int"),
    ("sum", False, "int"),
    ("sum", False, "list"),
    ("softmax", False, "int"),
    ("softmax", True, "int"),
]


@settings(max_examples=25, deadline=None)
@given(
    shape=st.sampled_from([(2, 3, 4), (6, 3, 4), (3, 2, 4), (2, 12), (4, 3, 2, 2)]),
    dim=st.integers(-2, 1),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    order=st.permutations(range(8)),
)
def test_memoised_plans_answer_each_call_as_its_own(shape, dim, dtype, order):
    """Calls that share a shape and a dim, differing in op, keepdim, half_to_float or dim form,
    in any order: every result is its own call's (a plan remembered under too small a key
    answers for another; an int dim to sum is refused by the entry point, as unwrapped)."""
    x = torch.randn(shape).to(dtype)
    with installed_fake() as gems:
        for i in order:
            op, flag, form = _VARIANTS[i]
            arg = [dim] if form == "list" else dim
            if op == "sum" and form == "int":
                with pytest.raises(TypeError):
                    gems.entry("sum", "sum_dim")(x, arg, flag)
                continue
            if op == "sum":
                got, want = gems.entry("sum", "sum_dim")(x, arg, flag), x.float().sum(dim, keepdim=flag).to(dtype)
            else:
                got = gems.entry("softmax", "softmax")(x, arg, flag)
                want = x.float().softmax(dim).to(torch.float32 if flag else dtype)
            assert (got.dtype, got.shape) == (want.dtype, want.shape), (op, flag)
            torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("dim", [None, [0, 1], [], True, 1.0, torch.tensor(1), [torch.tensor(1)], [True]])
def test_a_plan_is_remembered_only_for_one_int_dim(dim):
    """Other dims never take the fast path, and a tensor kept in a key would never be freed."""
    from pytest_fl_contract.registry import ROWS

    assert fastpath._key(ROWS.get("sum"), torch.zeros(2, 3, 4), {"dim": dim}) is None
    assert fastpath._key(ROWS.get("sum"), torch.zeros(2, 3, 4), {"dim": [1]}) is not None


@pytest.mark.parametrize("kernel", ["reduce", "softmax_stats"])
def test_fast_path_offsets_are_int64_past_2g(kernel):
    """Row n of a slice starts at n * K: past 2**31 elements that product must be int64.
    Under the interpreter the kernel runs on a tiny buffer with K = 2**30 + 64 (the memory
    guard serves the rows past it from the emulated heap); the addresses it computed for
    its last, per-row-tail row must lie 2 * K elements past the start, not wrapped below it."""
    from pytest_fl_contract.emulation import device

    buf, out = torch.zeros(64), torch.zeros(64)
    K = 2**30 + 64
    device.DEVICE.watch = []
    try:
        if kernel == "reduce":
            fastpath.fl_reduce_rows_kernel[(1,)](out, buf, K, 3, K, 1.0, BLOCK_R=2, BLOCK_K=64, LOG_R=1, FLAT=False)
        else:
            fastpath.fl_softmax_stats_split_kernel[(1, 1, 1)](
                out, out.clone(), buf, K, 3, K, 3, BLOCK_R=2, BLOCK_K=64, LOG_R=1, FLAT=False
            )
        highest = max(high for _, high in device.DEVICE.watch)
        lowest = min(low for low, _ in device.DEVICE.watch)
    finally:
        device.DEVICE.watch = None
    assert lowest >= buf.data_ptr(), "an offset wrapped below the tensor's start (int32 arithmetic)"
    assert highest >= buf.data_ptr() + 2 * K * 4, "row 2 was not addressed at 2 * K elements"


def _f1(inp, dim=None, keepdim=False, *, dtype=None):
    pass


def _f2(inp, dim, /, keepdim=False, *, out):
    pass


def _f3(self, dim, keepdim=False, *args, **kw):
    pass


@pytest.mark.parametrize("fn", [_f1, _f2, _f3])
@given(
    args=st.lists(st.integers(0, 3), max_size=5),
    kwargs=st.dictionaries(st.sampled_from(["inp", "dim", "keepdim", "dtype", "out", "self", "x"]), st.integers(0, 3)),
)
def test_fast_binding_is_signature_bind(fn, args, kwargs):
    """The wrapper's binder agrees with inspect's for every call: same arguments, or both refuse."""
    signature = inspect.signature(fn)
    fast = mr._binder(signature)
    try:
        want = signature.bind(*args, **kwargs)
    except TypeError:
        with pytest.raises(TypeError):
            fast(*args, **kwargs)
        return
    got = fast(*args, **kwargs)
    assert (got.args, got.kwargs) == (want.args, want.kwargs)
    assert dict(got.arguments) == dict(want.arguments)


@pytest.mark.parametrize(
    "call", [lambda f: f(np.ones((2, 3, 4)), [0]), lambda f: f(torch.ones(2, 3, 4), [1], dtype=[1])]
)
def test_arguments_the_fast_path_cannot_read_reach_the_entry_point(call):
    """Not a tensor, an unhashable dtype=: the original's own error, not one of the wrapper's."""
    with installed_fake() as gems:
        with pytest.raises(Exception) as wrapped:
            call(gems.entry("sum", "sum_dim"))
        mr.uninstall()
        with pytest.raises(Exception) as unwrapped:
            call(gems.entry("sum", "sum_dim"))
    assert (type(wrapped.value), str(wrapped.value)) == (type(unwrapped.value), str(unwrapped.value))


def test_a_planned_call_launches_on_its_inputs_device(monkeypatch):
    """The fast path switches to the input's device around its launches when another is current."""
    log = []

    class Switch:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            log.append(("enter", self.index))

        def __exit__(self, *exc):
            log.append(("exit", self.index))

    monkeypatch.setattr(torch, "fakedev", types.SimpleNamespace(current_device=lambda: 0, device=Switch), raising=False)

    class Probe(fastpath._Planned):
        def run(self, x):
            log.append(("run", x))
            return x

    assert Probe(types.SimpleNamespace(type="fakedev", index=1))("x") == "x"
    assert log == [("enter", 1), ("run", "x"), ("exit", 1)]
    log.clear()
    Probe(types.SimpleNamespace(type="fakedev", index=0))("x")
    Probe(types.SimpleNamespace(type="cpu", index=None))("x")
    assert log == [("run", "x"), ("run", "x")]


@settings(max_examples=60, deadline=None)
@given(
    M=st.integers(1, 9),
    steps=st.integers(0, 12),
    rest=st.integers(0, 255),
    K=st.integers(1, 9),
    kind=st.sampled_from(["sum", "mean", "softmax"]),
    log_r=st.integers(0, 6),
    log_k=st.integers(0, 6),
    log_s=st.integers(0, 4),
    flat=st.booleans(),
)
def test_every_plan_answers_as_torch(M, steps, rest, K, kind, log_r, log_k, log_s, flat):
    """Whatever plan the model picks - column blocks per m or of the flattened output (which
    span several m or end mid-m), row blocks with a binary tail, splits whose last one is
    short - the kernels give torch's answer: the model decides speed, never the result.
    N is drawn as whole row blocks and a tail: the interpreter's cost is the kernels' steps,
    and a tail, not a count of steps, is what a plan can get wrong."""
    from pytest_fl_contract.workarounds import tilemodel as tm

    N = max(1, steps * (1 << log_r) + rest % (1 << log_r))
    block_r = 1 << min(log_r, N.bit_length() - 1)
    splits = max(1, min(1 << log_s, N // block_r))
    plan = tm.Plan(block_r, 1 << log_k, 4, splits, flat)
    x = torch.randn(M, N, K)
    if kind == "softmax":
        got, want = fastpath.Softmax(x.shape, 1, None, plan, x.device).run(x), x.softmax(1)
    else:
        device = tm.Device(4, 1e12, "test")
        got = fastpath.Reduce(x.shape, 1, False, kind == "mean", plan, device, x.device).run(x)
        want = x.mean(1) if kind == "mean" else x.sum(1)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
