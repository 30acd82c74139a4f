#!/usr/bin/env bash
# The main job: the three CPU lanes through `fl-contract run` -
#   cpu                              every contract holds on FlagGems' real kernels
#   iluvatar-emulated                the Iluvatar defect injected, the workaround holds
#   iluvatar-emulated-noworkaround   the same without the workaround: the contracts catch it
# Reports land in reports/ (per step, merged per lane); summaries print here.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
status=0
for lane in cpu iluvatar-emulated iluvatar-emulated-noworkaround; do
  .venv/bin/fl-contract run "$lane" --reports reports || status=1
done
if [ "$status" -eq 0 ]; then
  echo "main job: all CPU lanes got their verdicts (defect caught without the workaround, held with it)"
else
  echo "main job: FAILED (see the lane summaries above and reports/)"
fi
exit "$status"
