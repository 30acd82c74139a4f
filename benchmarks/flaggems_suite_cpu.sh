#!/usr/bin/env bash
# FlagGems' own reduction tests (shipped in its 5.4 wheel as flaggems_tests) under the three CPU
# lanes, with the selection of the FlagGems-suite issue; prints failed / passed and the wall time
# per lane, and the failing tests by test function.
#   bash benchmarks/flaggems_suite_cpu.sh SITE   # SITE: a directory holding flag_gems and flaggems_tests
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SITE=${1:?a directory with flag_gems and flaggems_tests (pip install --no-deps --target SITE WHEEL)}
OUT=${OUT:-$(mktemp -d)}
T=""
for t in sum mean prod std var var_mean logsumexp special_logsumexp softmax log_softmax special_log_softmax \
         argmax argmin amax amin max min; do T="$T $SITE/flaggems_tests/test_$t.py"; done
K="shape0 and not large_k and not large_innerdim and not big_shape"
for lane in "cpu:--platform cpu" "workaround:--platform iluvatar --fl-emulate" \
            "no-workaround:--platform iluvatar --fl-emulate --fl-no-workaround"; do
  name=${lane%%:*}; args=${lane#*:}; start=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$OUT" && PYTHONPATH="$SITE:$ROOT" "$ROOT/.venv/bin/python" -m pytest $T -p fl_contract $args --ref cpu -k "$K" \
    -p xdist -n 2 -q -p no:cacheprovider --junitxml="$OUT/$name.xml" > "$OUT/$name.txt" 2>&1)
  echo "$name: $(grep -E '[0-9]+ (passed|failed)' "$OUT/$name.txt" | tail -1 | sed 's/ in .*//'), $(( $(date +%s) - start )) s"
  grep -E "^FAILED" "$OUT/$name.txt" | sed 's/ - .*//; s/.*flaggems_tests\///; s/\[.*//' | sort | uniq -c
done
