#!/usr/bin/env bash
# The project's own tests (plugin, emulator, workaround, runner, expected lane outcomes).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/ruff check . || exit 1
.venv/bin/python -m pytest tests -p xdist -n auto --dist loadgroup -q "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "no tests ran: treating pytest's exit 5 as a failure"
  exit 1
fi
exit "$rc"
