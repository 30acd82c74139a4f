"""The loop counter (testing/loops.py): each ``for`` of an interpreted kernel, the most
iterations one program ran; static_range loops left alone.  In a fresh interpreter: the
emulator patches its process for good."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from .conftest import ROOT

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from pytest_fl_contract.emulation.interpreter import bring_up
    bring_up("nvidia-small")
    from pytest_fl_contract.testing import loops
    loops.install()
    import torch
    from toy_kernels import toy

    x = torch.zeros(4)
    toy[(2,)](x, 3, 2)
    print(json.dumps([[lp.kernel, lp.source, lp.most] for lp in loops.loops()]))
""")

KERNELS = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def toy(x_ptr, n, stop):
        acc = 0.0
        for i in range(0, n):
            acc += 1.0
        for j in range(0, 1):
            acc += 1.0
        for k in tl.static_range(4):
            acc += 1.0
        for m in range(0, 10):
            if m == stop:
                break
            acc += 1.0
        tl.store(x_ptr + tl.program_id(0), acc)
""")


def test_each_loop_counts_its_most_iterations(tmp_path):
    (tmp_path / "toy_kernels.py").write_text(KERNELS)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == [["toy", "range(0, n)", 3], ["toy", "range(0, 1)", 1], ["toy", "range(0, 10)", 3]]
