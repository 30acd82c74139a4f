"""contracts/copy against small fixture trees: a checkout with the cast branch, one
without it, and a wheel-only workspace with no csrc/ at all."""

from __future__ import annotations

import pytest

from .conftest import ROOT

CONTRACT = str(ROOT / "contracts" / "copy")


def tree(base, name, source):
    root = base / name
    if source is not None:
        (root / "csrc" / "aten").mkdir(parents=True)
        (root / "csrc" / "aten" / "copy_ops.cc").write_text(source)
    else:
        root.mkdir()
    return root


WITH_BRANCH = "#ifdef USE_CUDA\n  return DtypeCast(self, dst);\n#endif\n"
WITHOUT = "#if defined(USE_ILUVATAR)\n  // Fallback: CPU round-trip when no on-device cast is available\n#endif\n"


@pytest.mark.parametrize(
    "name, source, outcome",
    [
        ("with-branch", WITH_BRANCH, {"passed": 1}),
        ("without", WITHOUT, {"failed": 1}),
        ("wheel-only", None, {"skipped": 1}),
    ],
)
def test_source_contract_on_fixture_trees(pytester, run_subprocess, name, source, outcome):
    root = tree(pytester.path, name, source)
    result = run_subprocess(
        CONTRACT,
        "-p",
        "fl_contract",
        "--platform",
        "nvidia",
        "--fl-source-root",
        str(root),
        "-k",
        "copy_implementation",
        "-rs",
    )
    result.assert_outcomes(**outcome)
    if source is None:
        result.stdout.fnmatch_lines([f"*wheel-only layout: {root / 'csrc'} does not exist*"])
    if outcome.get("failed"):
        result.stdout.fnmatch_lines(["*has no on-device cast branch for nvidia*"])


def test_source_contract_skips_where_no_device_cast(pytester, run_subprocess):
    root = tree(pytester.path, "ilu", WITHOUT)
    result = run_subprocess(
        CONTRACT, "-p", "fl_contract", "--platform", "iluvatar", "--fl-source-root", str(root), "-rs"
    )
    result.assert_outcomes(skipped=5)
    result.stdout.fnmatch_lines(["*iluvatar has no on-device dtype cast (registry: device_cast = false)*"])


def test_transfer_contract_says_why_it_does_not_apply_on_cpu(pytester, run_subprocess):
    result = run_subprocess(CONTRACT, "-p", "fl_contract", "--platform", "cpu", "-k", "transfer_free", "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*cpu runs on the CPU here: a host cast has no device transfer to count*"])
