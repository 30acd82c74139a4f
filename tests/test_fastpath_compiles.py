"""The fast path's kernels compile for a real GPU (sm_90, through Triton's NVIDIA backend and
its bundled ptxas), here on a CPU: the interpreter runs Python, so a kernel the compiler
rejects (a reassigned constexpr, seen once) would otherwise only show on hardware."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from .conftest import ROOT

SCRIPT = textwrap.dedent("""
    import itertools
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from pytest_fl_contract.workarounds import fastpath as fp

    F32, HALF = "*fp32", "*bf16"
    CASES = [
        (fp.fl_reduce_rows_kernel, dict(out_ptr=F32, in_ptr=F32, MK="i32", N="i32", K="i32", scale="fp32"), (64, 64)),
        (fp.fl_reduce_rows_split_kernel, dict(part_ptr=F32, in_ptr=HALF, MK="i32", N="i32", K="i32",
                                              rows_per_split="i32"), (32, 128)),
        (fp.fl_softmax_rows_kernel, dict(out_ptr=HALF, in_ptr=HALF, MK="i32", N="i32", K="i32"), (16, 512)),
        (fp.fl_softmax_stats_split_kernel, dict(m_ptr=F32, s_ptr=F32, in_ptr=F32, MK="i32", N="i32", K="i32",
                                                rows_per_split="i32"), (8, 256)),
        (fp.fl_softmax_norm_split_kernel, dict(out_ptr=F32, in_ptr=F32, m_ptr=F32, s_ptr=F32, MK="i32", N="i32",
                                               K="i32", rows_per_split="i32", splits="i32"), (8, 256)),
    ]
    for (fn, signature, (block_r, block_k)), flat in itertools.product(CASES, (False, True)):
        consts = {"BLOCK_R": block_r, "BLOCK_K": block_k, "LOG_R": block_r.bit_length() - 1, "FLAT": flat,
                  "STAGES": None, "UNROLL": fp.SOFTMAX_UNROLL if fn is fp.fl_softmax_rows_kernel else None,
                  "K_DIV": 1 if flat else fp.VECTOR}
        source = ASTSource(fn=fn, signature={**signature, **{k: "constexpr" for k in consts}}, constexprs=consts)
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        print(fn.__name__, len(kernel.asm["cubin"]))
""")


@pytest.mark.slow
def test_fast_path_kernels_compile_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert len(done.stdout.splitlines()) == 10


VECTORS = textwrap.dedent("""
    import json, sys
    import kernel_resources as kr
    for spec in sys.argv[1:]:
        for k_div in (True, False):
            row = kr.case(spec, k_div)
            print(json.dumps([spec, k_div, [(s["kernel"], s["k_div"], s["loads"]) for s in row["sites"]]]))
""")


@pytest.mark.slow
def test_k_div_loads_rows_as_vectors_where_triton_alone_cannot():
    """Triton proves a row's start aligned only where 16 | K; the plan's K_DIV carries K's
    divisor to the kernel.  On sm_90 (benchmarks/kernel_resources.py compiles each launch as
    Triton would): with K = 2184 (8 | K) the half-precision walk loads 16 bytes a thread where
    it loaded 2; with K = 1555 there is nothing to prove, and it loads as before."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")])
    specs = ["mean:5x10850x2184:1:float16", "softmax:64x150x1000:1:bfloat16", "sum:537x110x1555:1:float16"]
    done = subprocess.run([sys.executable, "-c", VECTORS, *specs], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    seen = {(spec, k_div): sites for spec, k_div, sites in map(json.loads, done.stdout.splitlines())}
    for spec in specs[:2]:
        kernel, k_div, loads = seen[(spec, True)][0]  # the launch that reads the input
        assert k_div == 8 and "16" in loads, (spec, seen[(spec, True)])
        kernel, k_div, loads = seen[(spec, False)][0]
        assert k_div == 1 and "16" not in loads and "2" in loads, (spec, seen[(spec, False)])
    for k_div in (True, False):
        kernel, k_div_seen, loads = seen[(specs[2], k_div)][0]
        assert k_div_seen == 1 and set(loads) == {"2"}, seen[(specs[2], k_div)]
