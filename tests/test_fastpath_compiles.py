"""The fast path's kernels compile for a real GPU (sm_90, through Triton's NVIDIA backend and
its bundled ptxas), here on a CPU: the interpreter runs Python, so a kernel the compiler
rejects (a reassigned constexpr, seen once) would otherwise only show on hardware."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from .conftest import ROOT

SCRIPT = textwrap.dedent('''
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
                  "STAGES": None, "UNROLL": fp.SOFTMAX_UNROLL if fn is fp.fl_softmax_rows_kernel else None}
        source = ASTSource(fn=fn, signature={**signature, **{k: "constexpr" for k in consts}}, constexprs=consts)
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        print(fn.__name__, len(kernel.asm["cubin"]))
''')


@pytest.mark.slow
def test_fast_path_kernels_compile_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert len(done.stdout.splitlines()) == 10
