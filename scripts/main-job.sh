#!/usr/bin/env bash
# The main job: the three CPU lanes through `fl-contract run` -
#   cpu                              every contract holds on FlagGems' real kernels
#   iluvatar-emulated                the Iluvatar defect injected, the workaround holds
#   iluvatar-emulated-noworkaround   the same without the workaround: the contracts catch it
# on PyPI's FlagGems 5.0.2 (issue 62's budget for it: 10 minutes on two cores).  `--all` adds
#   nvidia-hopper-emulated           FlagGems' Hopper overrides registered as on an H100: every op
#                                    enabled and the override differential hold their known defect
#   cpu-tuning-miscompiled           one config of each autotuned kernel miscompiled: the
#                                    every-config contract catches it
# (two more minutes; the workflow's fan-out runs them as jobs of their own, with every other lane
# of ci/manifest.yaml: .github/workflows/cpu-lanes.yml).  `--line fg54` runs the three on the 5.4 line instead, and
# FlagGems' own tests (shipped in the 5.4 wheel) under the three, on 5.0.2 and on 5.4
# (flaggems-suite-502-fg54, flaggems-suite-fg54; FL_FLAGGEMS_54: the wheel's pip spec; CI
# sets it).  Reports land in reports/, summaries here.
set -uo pipefail
cd "$(dirname "$0")/.."
suffix=""
all=0
while [ $# -gt 0 ]; do
  case "$1" in
    --line) suffix="-${2:?--line needs a name, e.g. fg54}"; shift 2 ;;
    --all) all=1; shift ;;
    *) echo "main-job.sh: unknown argument '$1' (--line NAME, --all)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh || exit 1
status=0
for lane in cpu iluvatar-emulated iluvatar-emulated-noworkaround; do
  .venv/bin/fl-contract run "$lane$suffix" --reports reports || status=1
done
if [ -z "$suffix" ] && [ "$all" = 1 ]; then  # the Hopper copies are 5.0.2's (5.4 dropped mul's)
  .venv/bin/fl-contract run nvidia-hopper-emulated --reports reports || status=1
  .venv/bin/fl-contract run cpu-tuning-miscompiled --reports reports || status=1
fi
if [ "$suffix" = "-fg54" ]; then  # FlagGems' own tests ship in the 5.4 wheel: their lanes too
  .venv/bin/fl-contract run flaggems-suite-502-fg54 --reports reports || status=1
  .venv/bin/fl-contract run flaggems-suite-fg54 --reports reports || status=1
fi
if [ "$status" -eq 0 ]; then
  echo "main job${suffix:+ ($suffix)}: all CPU lanes got their verdicts (defect caught without the workaround, held with it)"
else
  echo "main job${suffix:+ ($suffix)}: FAILED (see the lane summaries above and reports/)"
fi
exit "$status"
