"""The contracts ship in the wheel: from a directory that holds nothing of this repository,
an installed wheel runs them (the README's vendor-lane commands, exactly) and a lane end to
end, with the same verdicts as from the checkout; a vendor's conftest and pytest.ini stay
theirs.  And the checkout itself, as a source layout."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from .conftest import ROOT

# The CPU machine has no Iluvatar card: the README's commands run emulated, on a selection,
# in one process (-n 0 after the README's -n auto: these runs are mostly start-up).
EMULATE = ["--fl-emulate", "-k", "sum and (accuracy or determinism) and float32", "-n", "0"]

# Every test here shares one wheel and one checkout run: xdist keeps them on one worker.
pytestmark = pytest.mark.xdist_group("wheel")
BIN = Path(sys.executable).parent


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- vendor-lane-commands[^>]*-->\s*```\n(.*?)```", text, re.S)
    assert block, "README lost its vendor-lane-commands block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory):
    """The project built as a wheel (from a copy of the tree: setuptools builds in place, and
    xdist workers build at once) and installed into a directory of its own."""
    dist = tmp_path_factory.mktemp("dist")
    tree = tmp_path_factory.mktemp("tree") / "src"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "reports", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".*_cache", ".whl"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(tree)],
        check=True,
        capture_output=True,
    )
    site = tmp_path_factory.mktemp("site")
    wheel = next(dist.glob("pytest_fl_contract-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    return site


def run(argv: list[str], cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess:
    """A command as a lane would type it; with ``site``, the wheel's copy shadows the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("FL_PLATFORM", "PYTEST_ADDOPTS")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if site is not None:
        env["PYTHONPATH"] = str(site)
    if argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", *argv[1:]]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def verdicts(xml: Path) -> dict[str, str]:
    out = {}
    for suite in JUnitXml.fromfile(str(xml)):
        for case in suite:
            out[case.name] = type(case.result[0]).__name__ if case.result else "passed"
    return out


@pytest.fixture(scope="module")
def checkout_verdicts(tmp_path_factory):
    """The same selection from the checkout, with and without the workaround."""
    out = {}
    for label, extra in (("with", []), ("without", ["--fl-no-workaround"])):
        xml = tmp_path_factory.mktemp("checkout") / "out.xml"
        done = run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(ROOT / "contracts" / "reductions"),
                "-p",
                "fl_contract",
                "--platform",
                "iluvatar",
                *EMULATE,
                *extra,
                f"--junitxml={xml}",
            ],
            ROOT,
        )
        assert done.returncode == (0 if label == "with" else 1), done.stdout[-3000:]
        out[label] = verdicts(xml)
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "which, workaround",
    [(0, "with"), (1, "without")],
    ids=["pytest-pyargs-with-workaround", "fl-contract-contracts-without"],
)
def test_readme_commands_from_an_empty_directory(tmp_path, wheel_site, checkout_verdicts, which, workaround):
    command = readme_commands()[which]
    extra = EMULATE + (["--fl-no-workaround"] if workaround == "without" else [])
    done = run(command + extra, tmp_path, wheel_site)
    assert done.returncode == (0 if workaround == "with" else 1), done.stdout[-3000:] + done.stderr[-2000:]
    assert "fl-contract layout: wheel (no " in done.stdout
    if workaround == "with":
        assert (
            f"workaround: pytest_fl_contract.workarounds.masked_reductions from the wheel ({wheel_site}" in done.stdout
        )
    where = run(
        [sys.executable, "-c", "import pytest_fl_contract.contracts as c; print(c.__file__)"], tmp_path, wheel_site
    )
    assert where.stdout.strip() == str(wheel_site / "pytest_fl_contract" / "contracts" / "__init__.py")
    assert verdicts(tmp_path / "out.xml") == checkout_verdicts[workaround]
    written = sorted(p.name for p in tmp_path.iterdir())
    # plain pytest keeps its cache in the rootdir (the lane's); the packaged run writes only its report
    assert written == (["out.xml"] if which else [".pytest_cache", "out.xml"]), written


@pytest.mark.slow
def test_packaged_lanes_and_a_lane_end_to_end(tmp_path, wheel_site):
    done = run(["fl-contract", "lanes"], tmp_path, wheel_site)
    assert done.returncode == 0, done.stderr
    assert f"manifest: {wheel_site / 'pytest_fl_contract' / 'ci' / 'manifest.yaml'} (packaged with" in done.stderr
    assert re.search(r"^iluvatar-emulated-noworkaround\s+iluvatar\s+op_contracts \(expect fail\)", done.stdout, re.M)
    done = run(["fl-contract", "run", "cpu", "--step", "compiler_probes"], tmp_path, wheel_site)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert (tmp_path / "reports" / "cpu.xml").is_file()


VENDOR_CONFTEST = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--ref", default="cuda")

@pytest.fixture(autouse=True)
def _vendor_only():
    raise RuntimeError("the vendor's autouse fixture reached a contract")

def pytest_collection_modifyitems(items):
    for item in items:
        if "reductions" in str(item.path):
            raise RuntimeError("the vendor's hook saw a contract")
"""


@pytest.mark.slow
def test_vendor_checkout_keeps_its_conftest_and_ini(tmp_path, wheel_site):
    """From inside a FlagGems-style checkout (a conftest with its own option, an autouse
    fixture and a hook that would break our cases; a pytest.ini whose addopts need that
    option and whose testpaths name its own tests): the one-line command runs only ours."""
    (tmp_path / "conftest.py").write_text(VENDOR_CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --ref cpu -p no:randomly\ntestpaths = tests\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_vendor.py").write_text("def test_theirs():\n    assert False\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    command = readme_commands()[1]
    done = run(command + EMULATE, tmp_path, wheel_site)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "test_theirs" not in done.stdout
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert sorted(set(after) - set(before)) == [Path("out.xml")]


@pytest.mark.slow
def test_source_checkout():
    env = {k: v for k, v in os.environ.items() if k != "FL_PLATFORM"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "contracts" / "reductions"),
            "-p",
            "fl_contract",
            "--platform",
            "iluvatar",
            "--fl-emulate",
            "--fl-source-root",
            str(ROOT),
            "--fl-layout",
            "checkout",
            *EMULATE,
            "-k",
            "sum and (accuracy or routing or install)",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "fl-contract layout: checkout (--fl-layout)" in done.stdout
    assert "workaround: pytest_fl_contract.workarounds.masked_reductions from the checkout" in done.stdout


def test_contract_modules_import_their_helpers_as_a_package():
    """No `from optable import ...` that only pytest's prepend mode can resolve."""
    for path in (ROOT / "contracts").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        bare = re.findall(r"^(?:from|import) (sweeps|optable|conftest)\b", text, re.M)
        assert not bare, f"{path} imports {bare} by bare module name"


@pytest.mark.slow
def test_contracts_pass_under_importlib_import_mode():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "contracts" / "reductions"),
            "-p",
            "fl_contract",
            "--platform",
            "cpu",
            "--import-mode=importlib",
            "-k",
            "sum and accuracy and float32 and 5x64",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if k != "FL_PLATFORM"},
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_lanes_flag_gems_wins_over_one_installed_beside_the_suite(tmp_path, fg54_site):
    """A lane puts its FlagGems first on PYTHONPATH; the packaged suite installed in another
    directory that holds another FlagGems must not put that directory first (pytest's prepend
    import mode did: an H200 '5.4 lane' ran 5.0.2)."""
    suite_dir, lane_dir = tmp_path / "suite", tmp_path / "lane"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(suite_dir), str(ROOT)],
        check=True,
        capture_output=True,
    )
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and (Path(p) / "flag_gems").is_dir()))
    for name in ("flag_gems", next(p.name for p in site.glob("flag_gems-*.dist-info"))):
        shutil.copytree(site / name, suite_dir / name)
    lane_dir.symlink_to(fg54_site)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_fl_contract.cli",
            "contracts",
            "reductions",
            "--",
            "--platform",
            "cpu",
            "-k",
            "test_install",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(lane_dir), str(suite_dir)])},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "flag_gems 5.4" in done.stdout and "flag_gems 5.0" not in done.stdout
