#!/usr/bin/env bash
# The project's own tests (plugin, emulator, workaround, runner, expected lane outcomes):
# lint, the type checker on the package, the plugin on the oldest supported pytest, then
# the suite on the newest (this environment's).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/ruff check . || exit 1
.venv/bin/ruff format --check . > /dev/null || { .venv/bin/ruff format --check . | tail -5; echo "ruff format: run .venv/bin/ruff format ."; exit 1; }
.venv/bin/mypy pytest_fl_contract || exit 1
bash scripts/pytest-range.sh || exit 1
# --durations: the slowest tests in every CI log, what its 20 minutes are spent on
# one torch thread a process: two xdist workers, the zoo's forked mutants and the pytest runs
# the tests start share the cores, and OpenMP pools that each take all of them spin
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/python -m pytest tests -p xdist -n auto --dist loadgroup -q --durations=25 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "no tests ran: treating pytest's exit 5 as a failure"
  exit 1
fi
exit "$rc"
