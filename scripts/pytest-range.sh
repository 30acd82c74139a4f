#!/usr/bin/env bash
# The plugin on the oldest pytest it supports (pyproject: pytest>=7.4): a second environment
# with that pytest and the plugin's own dependencies only - no torch, triton or flag_gems,
# as on a lane that has not installed them yet - runs tests/test_pytest_range.py.  The
# newest pytest is the project's own environment (scripts/test.sh runs the same module).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OLDEST=7.4.4
env=.venv-pytest-oldest
if [ ! -x "$env/bin/python" ]; then
  "$PY" -m venv "$env"
fi
stamp="$env/.fl-contract-setup"
want="$(cat pyproject.toml scripts/pytest-range.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$env/bin/python" -m pip install -q --disable-pip-version-check "pytest==$OLDEST" "junitparser>=3.1" "pyyaml>=6"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
fi
"$env/bin/python" -c "import pytest; print(f\"pytest {pytest.__version__} (the oldest supported)\")"
# -o fl_platform=: the project's own ini asks for the CPU lane, which needs the [cpu] extra
"$env/bin/python" -m pytest tests/test_pytest_range.py -q -p no:cacheprovider -o fl_platform= "$@"
