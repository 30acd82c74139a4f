"""The emulator refuses a kernel that reads a global the compiler would refuse (issue 59, the
interpreter as a second oracle cuts both ways: what it accepts must compile).  FlagGems 5.4's
special_chebyshev_polynomial_w (``_MAX_POLY_DEGREE: tl.constexpr = 101``, an annotation)
passed every CPU lane and failed to compile on an H100 for every call.  In a fresh interpreter:
the emulator patches a process for good."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import ROOT, fresh_result, with_jit_module

pytest.importorskip("triton")

KERNELS = """import triton, triton.language as tl
ANNOTATED: tl.constexpr = 4
PLAIN = 4
CONSTEXPR = tl.constexpr(4)
@triton.jit
def helper(x):
    return x + 1
@triton.jit
def annotated(x_ptr):
    tl.store(x_ptr + tl.arange(0, 4), tl.full((4,), ANNOTATED, tl.float32))
@triton.jit
def plain_in_a_dead_branch(x_ptr, flag: tl.constexpr):
    if flag:
        tl.store(x_ptr, PLAIN)
    tl.store(x_ptr + 1, 2.0)
@triton.jit
def allowed(x_ptr, n: tl.constexpr = PLAIN):
    v = tl.full((4,), CONSTEXPR, tl.float32) + tl.cast(n, tl.float32)
    for k in tl.static_range(0, CONSTEXPR):
        v = helper(v)
    tl.store(x_ptr + tl.arange(0, 4), v)
"""

SCRIPT = with_jit_module(
    textwrap.dedent("""
    import json
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())

    # jit module

    found = {}
    for name, launch in (("annotated", lambda x: annotated[(1,)](x)),
                         ("dead_branch", lambda x: plain_in_a_dead_branch[(1,)](x, False)),
                         ("allowed", lambda x: allowed[(1,)](x))):
        x = torch.zeros(4)
        try:
            launch(x)
            found[name] = ["ok", x.tolist()]
        except Exception as exc:
            found[name] = [type(exc).__name__, str(exc)]
    print("RESULT " + json.dumps(found))
    """),
    "fl_globals_kernels",
    KERNELS,
)


def test_a_kernel_reading_a_non_constexpr_global_does_not_compile_on_the_emulator() -> None:
    found = fresh_result(SCRIPT)
    kind, text = found["annotated"]
    assert kind == "CompilationError" and "Cannot access global variable ANNOTATED" in text
    kind, text = found["dead_branch"]  # the compiler reads it whichever branch runs
    assert kind == "CompilationError" and "PLAIN" in text
    # constexpr instances, jitted helpers, modules, a default argument's global: as compiled
    assert found["allowed"] == ["ok", [12.0, 12.0, 12.0, 12.0]]


CHEBYSHEV_W = textwrap.dedent("""
    import json
    import torch
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small", ())
    import flag_gems
    from pytest_fl_contract.overloads import defects, samples
    from pytest_fl_contract.overloads.cases import Case

    def case(name):
        return Case(name, samples.Source("gen:" + name, "op"), 0, "float32", "none")

    found = {name: defects._compiler_refuses_a_global(case(name), None)
             for name in ("special_chebyshev_polynomial_w", "special_chebyshev_polynomial_u", "abs")}
    x, n = torch.tensor([0.5]), torch.tensor([3])
    try:
        with flag_gems.use_gems():
            torch.special.chebyshev_polynomial_w(x, n)
        found["call"] = "returned"
    except Exception as exc:
        chain = []
        while exc is not None:
            chain.append(type(exc).__name__)
            exc = exc.__cause__ or exc.__context__
        found["call"] = chain
    print("RESULT " + json.dumps(found))
""")


def test_the_catalogued_kernel_fails_to_compile_on_the_emulator_54(fg54_site) -> None:
    """kernel_global_not_constexpr: 5.4's special_chebyshev_polynomial_w (an H100: CompilationError
    on every call) fails on the emulator too, and the catalogue's predicate, read from the
    registered function's module, names it and no other."""
    found = fresh_result(CHEBYSHEV_W, pythonpath=[str(fg54_site), str(ROOT)])
    assert found["special_chebyshev_polynomial_w"] is True
    assert found["special_chebyshev_polynomial_u"] is False and found["abs"] is False
    assert "CompilationError" in found["call"], found["call"]
