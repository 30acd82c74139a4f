#!/usr/bin/env bash
# Create .venv with the known-good CPU set (torch 2.13.0 CPU build, triton 3.7.1,
# numpy 1.26.4, flag-gems 5.0.2) and this package with its test tools.  Idempotent.
# Never used on vendor lanes: those bring their own torch / triton / flag_gems.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.fl-contract-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # torch first and pinned: the CPU build; an unpinned torch would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[cpu,test]'
  echo "$want" > "$stamp"
fi
# The xunit2 schema pytest validates its own JUnit against (testing/example_scripts/junit-10.xsd)
# ships in pytest's sdist only: the tests validate every XML we write against that file.
xsd=.venv/share/fl-contract/junit-10.xsd
if [ ! -s "$xsd" ]; then
  .venv/bin/python - "$xsd" <<'PY'
import importlib.metadata, pathlib, subprocess, sys, tarfile, tempfile
target = pathlib.Path(sys.argv[1])
version = importlib.metadata.version("pytest")
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", f"pytest=={version}", "-d", tmp], check=True)
    sdist = next(pathlib.Path(tmp).glob("pytest-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        member = tar.getmember(f"pytest-{version}/testing/example_scripts/junit-10.xsd")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(tar.extractfile(member).read())
print(f"setup: JUnit schema {target} (from pytest {version}'s sdist)")
PY
fi
.venv/bin/python - <<'PY'
import importlib.metadata as m
print("setup:", ", ".join(f"{d} {m.version(d)}" for d in ("torch", "triton", "numpy", "flag_gems", "pytest-fl-contract")))
PY
