#!/usr/bin/env bash
# The GPU figures in benchmarks/results/, as they were taken: on a machine with an NVIDIA GPU
# and its own torch / triton (never replaced), with flag-gems and the few packages it lacks
# as wheels in .whl/ (see benchmarks/results/README.md).  Writes under $OUT (default ./out).
#
#   bash benchmarks/run_on_gpu.sh setup probes large lane sweep startup
#   DEVICES="1 all" bash benchmarks/run_on_gpu.sh setup devices   # cold and warm lane per device count
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH

for what in "$@"; do
  case "$what" in
  setup)
    python3 -m pip install -q --upgrade --no-index --no-deps --no-cache-dir --target /tmp/site "$ROOT"/.whl/*.whl || exit 1
    python3 -m pip install -q --upgrade --no-index --no-deps --no-build-isolation --target /tmp/site "$ROOT" || exit 1
    nvidia-smi -L
    python3 -c "import torch, triton, flag_gems; from pytest_fl_contract.workarounds import fastpath; \
print('torch', torch.__version__, 'triton', triton.__version__, 'flag_gems', flag_gems.__version__); \
print(fastpath.device_info('cuda').source)" ;;
  line54)
    # the 5.4 line for the steps after it: its wheel (.whl54/) in a directory of its own, first
    # on the path (the 5.0.2 install in /tmp/site stays, as a lane's own install would)
    python3 -m pip install -q --upgrade --no-index --no-deps --no-cache-dir --target /tmp/site54 "$ROOT"/.whl54/*.whl || exit 1
    export PYTHONPATH=/tmp/site54:/tmp/site FL_LINE=-fg54
    python3 -c "import flag_gems; print('flag_gems', flag_gems.__version__)" ;;
  fgsuite)
    # FlagGems' own reduction tests (they ship in the 5.4 wheel as flaggems_tests), unchanged,
    # with the plugin, quick mode: on the line installed now (under 5.0.2 the 5.4 suite, beside it)
    # (the tests alone, in a directory of their own: pytest puts a test package's directory first
    # on sys.path, and the wheel's directory holds its flag_gems too)
    [ -d /tmp/fgtests/flaggems_tests ] || { python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/fgwheel "$ROOT"/.whl54/*.whl \
      && mkdir -p /tmp/fgtests && cp -r /tmp/fgwheel/flaggems_tests /tmp/fgtests/; }
    tests=$(for t in sum mean prod std var var_mean logsumexp special_logsumexp softmax log_softmax special_log_softmax \
                     argmax argmin amax amin max min; do printf '/tmp/fgtests/flaggems_tests/test_%s.py ' "$t"; done)
    for extra in "" "--fl-force-workaround"; do
      tag="fgsuite$FL_LINE${extra:+-forced}"
      (cd /tmp && timeout 280 python3 -m pytest $tests -p fl_contract --platform nvidia \
        --quick -n 8 -q -p no:cacheprovider $extra --junitxml="$OUT/$tag.xml" > "$OUT/$tag.txt" 2>&1)
      echo "== $tag: exit $?"; grep -E "^(FAILED|ERROR)" "$OUT/$tag.txt" | sed 's/ - .*//' | cut -c1-200 | head -30
      grep -E "fl-contract|passed|failed" "$OUT/$tag.txt" | tail -4 | cut -c1-300
    done ;;
  probes)
    (cd /tmp && timeout 180 python3 -m pytest_fl_contract.cli probe --platform nvidia | tee "$OUT/probes.txt" | tail -4)
    (cd /tmp && timeout 180 python3 -m pytest_fl_contract.cli probe --platform nvidia --mutants | tail -2) ;;
  grid)
    for extra in "" "--fl-force-workaround"; do
      echo "== grid limits ${extra:-without the workaround}"
      (cd /tmp && timeout 300 python3 -m pytest_fl_contract.cli contracts reductions -- --platform nvidia --fl-sweep full -k grid_limits -q -rA $extra \
        | grep -E "PASSED|FAILED|XFAIL|XPASS|SKIPPED|passed|failed|error" | cut -c1-300 | tee -a "$OUT/grid.txt")
    done ;;
  large)
    for extra in "" "--fl-force-workaround"; do
      echo "== large index ${extra:-without the workaround}"
      (cd /tmp && timeout 300 python3 -m pytest_fl_contract.cli contracts reductions -- --platform nvidia -k large_index -q -rA $extra \
        | grep -E "PASSED|FAILED|XFAIL|XPASS|passed|failed|error" | cut -c1-400 | tee -a "$OUT/large.txt")
    done ;;
  limits)
    # the layer and tensor-op rows' launch limits and large indices (each large call in a child
    # process), without the workaround and with it forced on (LIMITS_FORCED=0: without only)
    for extra in "" $([ "${LIMITS_FORCED:-1}" = 1 ] && echo --fl-force-workaround); do
      tag="limits$FL_LINE${extra:+-forced}"
      (cd /tmp && timeout -s INT -k 20 "${LIMITS_TIMEOUT:-280}" python3 -m pytest_fl_contract.cli contracts ${LIMITS_SUITES:-tensorops layers} -- --platform nvidia -n 4 \
        -k "grid_limits or large_index" -q -rA $extra --junitxml="$OUT/$tag.xml" > "$OUT/$tag.txt" 2>&1)
      echo "== $tag: exit $?"
      grep -E "^(PASSED|FAILED|ERROR|XFAIL|XPASS)|passed|failed" "$OUT/$tag.txt" | cut -c1-400 | head -40
    done ;;
  lane)
    # the GPU lane, cold Triton cache then warm (TRITON_CACHE_DIR is shared by the xdist workers);
    # past LANE_TIMEOUT pytest gets SIGINT, so its JUnit report and summary of what ran are still written
    export TRITON_CACHE_DIR=/tmp/triton-cache
    # LANE_RUNS="cold" runs once; LANE_K="expr" selects cases (a re-check of some contracts);
    # LANE_ARGS adds pytest arguments (--fl-force-workaround, --fl-autotune tuned);
    # LANE_KEEP_CACHE=1 keeps the cache of an earlier call (a warm run on a held machine)
    [ -n "$LANE_KEEP_CACHE" ] || rm -rf "$TRITON_CACHE_DIR" "$HOME/.flaggems"
    # LANE_FRESH=1: also no record of an earlier run's durations (a fresh runner: collection order)
    [ -z "$LANE_FRESH" ] || rm -rf "${FL_CONTRACT_CACHE:-$HOME/.cache/fl-contract}"
    for run in ${LANE_RUNS:-cold warm}; do
      start=$(date +%s.%N)
      # lane_timeline.py: when each worker started, was ready and ran each case (what sets the wall time)
      (cd /tmp && FL_TIMELINE="$OUT/timeline-$run$LANE_TAG$FL_LINE" PYTHONPATH="$PYTHONPATH:$ROOT/benchmarks" \
        timeout -s INT -k 30 "${LANE_TIMEOUT:-540}" python3 -m pytest_fl_contract.cli contracts ${LANE_SUITES:-reductions layers tensorops} -- --platform nvidia --fl-sweep full -n auto -q \
        -p lane_timeline ${LANE_K:+-k "$LANE_K"} ${LANE_ARGS} -rfE --junitxml="$OUT/lane-$run$LANE_TAG$FL_LINE.xml" --durations=15 > "$OUT/lane-$run$LANE_TAG$FL_LINE.txt" 2>&1)
      echo "lane $run$LANE_TAG$FL_LINE: exit $?, $(python3 -c "import time; print(round(time.time() - $start, 1))") s wall"
      grep -E "^(FAILED|ERROR)" "$OUT/lane-$run$LANE_TAG$FL_LINE.txt" | cut -c1-400 | head -40
      grep -E "passed|failed" "$OUT/lane-$run$LANE_TAG$FL_LINE.txt" | tail -1
      python3 "$ROOT/benchmarks/lane_times.py" "$OUT/lane-$run$LANE_TAG$FL_LINE.xml" --top 12 | cut -c1-300
      python3 "$ROOT/benchmarks/lane_timeline.py" "$OUT/timeline-$run$LANE_TAG$FL_LINE" --top 8 | tee "$OUT/timeline-$run$LANE_TAG$FL_LINE.txt" | cut -c1-200
      # one file per process is more than the device tool brings back: one archive instead
      python3 "$ROOT/benchmarks/triton_cache_census.py" "$TRITON_CACHE_DIR" --top 30 > "$OUT/census-$run$LANE_TAG$FL_LINE.txt" 2>&1
      head -1 "$OUT/census-$run$LANE_TAG$FL_LINE.txt"
      tar -C "$OUT" -czf "$OUT/timeline-$run$LANE_TAG$FL_LINE.tgz" "timeline-$run$LANE_TAG$FL_LINE" && rm -rf "$OUT/timeline-$run$LANE_TAG$FL_LINE"
    done ;;
  overloads)
    # the overload suite (issue 57): every overload the line's FlagGems registers, on this device,
    # OVERLOADS_SWEEP (default quick), its scoreboard beside it; the overrides' differential included;
    # OVERLOADS_WORKERS is -n (default auto: two lines at once get half the cores each), and
    # lane_timeline.py says when each worker was ready (collection probes every overload)
    tag="overloads$FL_LINE"
    start=$(date +%s.%N)
    (cd /tmp && FL_TIMELINE="$OUT/timeline-$tag" PYTHONPATH="$PYTHONPATH:$ROOT/benchmarks" timeout -s INT -k 20 "${OVERLOADS_TIMEOUT:-280}" \
      python3 -m pytest_fl_contract.cli contracts overloads -- --platform nvidia -p lane_timeline \
      --fl-sweep "${OVERLOADS_SWEEP:-quick}" -n "${OVERLOADS_WORKERS:-auto}" -q --tb=line -rfE --junitxml="$OUT/$tag.xml" > "$OUT/$tag.txt" 2>&1)
    echo "== $tag: exit $?, $(python3 -c "import time; print(round(time.time() - $start, 1))") s wall"
    grep -E "^(FAILED|ERROR)" "$OUT/$tag.txt" | cut -c1-300 | head -60
    grep -E "passed|failed" "$OUT/$tag.txt" | tail -1
    python3 "$ROOT/benchmarks/lane_timeline.py" "$OUT/timeline-$tag" --top 8 > "$OUT/timeline-$tag.txt" 2>&1; head -4 "$OUT/timeline-$tag.txt"
    rm -rf "$OUT/timeline-$tag"
    (cd /tmp && python3 -m pytest_fl_contract.cli scoreboard "$OUT/$tag.xml" --out "$OUT" 2>&1 | tail -6) ;;
  equivalent)
    # the compiler probes and their equivalent-kernel variants (issue 59, class 4), compiled
    # against each other and against Triton's interpreter replaying the same launches; no
    # flag_gems is imported, so one run serves both lines
    (cd /tmp && timeout -s INT -k 20 "${EQUIVALENT_TIMEOUT:-240}" python3 -m pytest_fl_contract.cli contracts probes -- --platform nvidia \
      -n 4 -q -rA --junitxml="$OUT/equivalent.xml" > "$OUT/equivalent.txt" 2>&1)
    echo "== equivalent: exit $?"; grep -E "^(FAILED|ERROR|XPASS|XFAIL)" "$OUT/equivalent.txt" | cut -c1-300 | head -30
    grep -cE "^PASSED.*test_equivalent" "$OUT/equivalent.txt"; grep -E "passed|failed" "$OUT/equivalent.txt" | tail -1 ;;
  forced|layersforced)
    # the suites whose routes replace whole entry points (layers, the matmuls' K tails) with the
    # workaround forced on: its routes on a correct device
    (cd /tmp && timeout 300 python3 -m pytest_fl_contract.cli contracts ${FORCED_SUITES:-layers tensorops} -- --platform nvidia --fl-sweep full -n 8 -q \
      --fl-force-workaround -rfE --junitxml="$OUT/forced$FL_LINE.xml" > "$OUT/forced$FL_LINE.txt" 2>&1)
    echo "forced$FL_LINE: exit $?"; grep -E "^(FAILED|ERROR)" "$OUT/forced$FL_LINE.txt" | cut -c1-300 | head -20
    grep -E "passed|failed" "$OUT/forced$FL_LINE.txt" | tail -1 ;;
  realmodels)
    # issue 32's table: what public model code reduces (benchmarks/real_models.py), three dtypes;
    # LAUNCH_CACHE=1 (here and in sweep) also times the fast path through FlagGems' launch cache
    timeout "${SWEEP_TIMEOUT:-560}" python3 "$ROOT/benchmarks/bench_reductions.py" --real-models --rep "${REP:-25}" \
      --moved-every 1 --rounds "${ROUNDS:-3}" ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} ${LAUNCH_CACHE:+--launch-cache} --json "$OUT/realmodels.json" > "$OUT/realmodels.txt" 2>&1
    echo "realmodels: exit $?"; tail -12 "$OUT/realmodels.txt" ;;
  plangrid)
    # the tile model's pick against every candidate plan, timed (benchmarks/plan_grid.py):
    # GRID_SHAPES (op:MxNxK:dim:dtype ...) first, then GRID_CASES drawn (GRID_OPS only);
    # GRID_TILES widens the tile sizes weighed; GRID_SLABS=1 also times the tiny-K slab plans,
    # GRID_SLAB_K_MAX past SLAB_K_MAX (plan_grid.py --slab-k-max)
    timeout "${GRID_TIMEOUT:-420}" python3 "$ROOT/benchmarks/plan_grid.py" --cases "${GRID_CASES:-8}" --seed "${SEED:-11}" \
      --min-mb "${GRID_MIN_MB:-4}" ${GRID_OPS:+--ops $GRID_OPS} ${GRID_TILES:+--tiles "$GRID_TILES"} ${GRID_SLABS:+--slabs} ${GRID_SLAB_K_MAX:+--slab-k-max "$GRID_SLAB_K_MAX"} \
      ${GRID_SHAPES:+--shapes $GRID_SHAPES} --json "$OUT/plangrid$GRID_TAG.json" > "$OUT/plangrid$GRID_TAG.txt" 2>&1
    echo "plangrid$GRID_TAG: exit $?"; cut -c1-400 "$OUT/plangrid$GRID_TAG.txt" ;;
  sweep)
    timeout "${SWEEP_TIMEOUT:-560}" python3 "$ROOT/benchmarks/bench_reductions.py" --sweep "${SWEEP:-200}" --seed "${SEED:-7}" --rep "${REP:-25}" --moved-every "${MOVED_EVERY:-8}" ${ROUNDS:+--rounds "$ROUNDS"} \
      ${GRAPH:+--graph} ${CASES:+--cases "$CASES"} ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} ${LAUNCH_CACHE:+--launch-cache} \
      --json "$OUT/sweep$SWEEP_TAG.json" > "$OUT/sweep$SWEEP_TAG.txt" 2>&1
    echo "sweep$SWEEP_TAG: exit $?"; tail -12 "$OUT/sweep$SWEEP_TAG.txt" ;;
  shapes)
    # chosen cases re-timed (op:MxNxK:dim:dtype, one a line, in SHAPES_FILE), e.g. the rows a
    # sweep ran on another rule than the shipped one; WIDE=1 times them with tilemodel.NARROW
    # off (the A/B's other arm); merge with merge_sweeps.py --current-picks
    [ -r "${SHAPES_FILE:-}" ] || { echo "shapes: SHAPES_FILE (op:MxNxK:dim:dtype a line) is not a readable file"; exit 2; }
    timeout "${SWEEP_TIMEOUT:-560}" python3 "$ROOT/benchmarks/bench_reductions.py" --shapes $(grep -v '^#' "$SHAPES_FILE") --rep "${REP:-25}" \
      --moved-every "${MOVED_EVERY:-0}" --rounds "${ROUNDS:-3}" ${CASES:+--cases "$CASES"} ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} ${WIDE:+--wide-blocks} \
      --json "$OUT/shapes$SWEEP_TAG.json" > "$OUT/shapes$SWEEP_TAG.txt" 2>&1
    echo "shapes$SWEEP_TAG: exit $?"; tail -12 "$OUT/shapes$SWEEP_TAG.txt" ;;
  startup)
    # a lane's fixed cost: collection and a first case's phases, one process and 16 at once
    (cd /tmp && timeout 240 python3 "$ROOT/benchmarks/startup_profile.py" --workers "${STARTUP_WORKERS:-16}" 2>&1 | tee "$OUT/startup.txt") ;;
  workerprofile)
    # one worker's collection and first case under cProfile, beside 15 more of the same (the
    # contention of a 16-worker lane's start)
    suite=$(cd /tmp && python3 -c "import os, pytest_fl_contract.contracts as c; print(os.path.dirname(c.__file__))")/reductions  # the installed suite, not the checkout
    [ -d "$suite" ] || { echo "workerprofile: no installed suite ($suite)"; exit 1; }
    args=(-p fl_contract --platform nvidia --fl-sweep full "$suite" -q -p no:cacheprovider -k "test_accuracy and sum-1x2x64-d1-float32")
    for _ in $(seq 15); do (cd /tmp && python3 -m pytest "${args[@]}" > /dev/null 2>&1) & done
    (cd /tmp && python3 -m cProfile -o "$OUT/worker.prof" -m pytest "${args[@]}" 2>&1 | tail -2)
    wait
    python3 -c "import pstats; s = pstats.Stats('$OUT/worker.prof'); s.sort_stats('cumulative').print_stats(60); s.print_stats('pytest_fl_contract', 40); s.sort_stats('tottime').print_stats(25)" \
      > "$OUT/worker-profile.txt" 2>&1
    grep -E "function calls|^ +[0-9]" "$OUT/worker-profile.txt" | cut -c1-170 | head -140 ;;
  profile)
    # where the fast path's time goes on the sweep's worst cases (host vs GPU), PLANS=1 adds plans around the model's
    timeout "${PROFILE_TIMEOUT:-300}" python3 "$ROOT/benchmarks/profile_fastpath.py" ${PLANS:+--plans} ${PROFILE_CASES:-\
      sum:8x1523x65:1:float16 mean:8x6480x9:1:float16 sum:2x10066x16:1:float32 mean:30x624x33:1:bfloat16 \
      softmax:2x1266x34:1:bfloat16 mean:1x15x2229:1:float16 sum:81x2x141:1:float32 softmax:2x5x6240:1:bfloat16 \
      sum:4054x255x54:1:bfloat16 sum:220x14x83424:1:bfloat16 sum:20884x1773x6:1:float16 sum:5027x53x1277:1:bfloat16 \
      mean:224421x24x16:1:float32 sum:5x71786x2:1:bfloat16} 2>&1 | tee "$OUT/profile.txt" ;;
  loopab)
    # the row walks' options on chosen cases (loop_ab.py: STAGES:UNROLL, :1 without the plan's
    # K_DIV), one op:MxNxK:dim:dtype a line in SHAPES_FILE
    [ -r "${SHAPES_FILE:-}" ] || { echo "loopab: SHAPES_FILE (op:MxNxK:dim:dtype a line) is not a readable file"; exit 2; }
    timeout "${SWEEP_TIMEOUT:-560}" python3 "$ROOT/benchmarks/loop_ab.py" --variants "${LOOP_VARIANTS:-none:none,none:none:1}" \
      $(grep -v '^#' "$SHAPES_FILE") --json "$OUT/loopab$SWEEP_TAG.json" > "$OUT/loopab$SWEEP_TAG.txt" 2>&1
    echo "loopab$SWEEP_TAG: exit $?"; tail -8 "$OUT/loopab$SWEEP_TAG.txt" ;;
  ncu)
    # Nsight Compute's sections for the fast path's and native's launches of NCU_CASES (machines
    # on Firecracker read the counters, gVisor ones do not: the device README's KINDS.md)
    timeout "${PROFILE_TIMEOUT:-420}" ncu --clock-control none --kernel-name "regex:${NCU_KERNELS:-fl_|non_inner}" \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section MemoryWorkloadAnalysis --csv --page details python3 "$ROOT/benchmarks/profile_fastpath.py" --ncu \
      ${NCU_CASES:-sum:537x110x1555:1:bfloat16 sum:537x110x1555:1:float32 softmax:4x150x65536:1:bfloat16 \
      softmax:4x150x65536:1:float32 mean:5x10850x2184:1:float16 mean:5x10850x2184:1:float32} > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
    echo "ncu: exit $?"; tail -3 "$OUT/ncu.err"; python3 "$ROOT/benchmarks/ncu_summary.py" "$OUT/ncu.csv" | tee "$OUT/ncu.txt" ;;
  devices)
    # the lane's cold and warm wall time per device count (--fl-devices; DEVICES="1 2 4 all",
    # default "1 all"; on a host with one GPU both are the one-device lane): cold starts from an
    # empty Triton and FlagGems cache, warm from the cache cold filled. WORKERS is -n (default
    # auto); LANE_SUITES, LANE_ARGS and LANE_TIMEOUT as for lane. One line per run, also in
    # $OUT/lane-devices$FL_LINE.txt, with the devices the workers were pinned to (from the
    # JUnit property fl_worker_devices)
    export TRITON_CACHE_DIR=/tmp/triton-cache
    summary="$OUT/lane-devices$FL_LINE.txt"
    : > "$summary"
    for d in ${DEVICES:-1 all}; do
      rm -rf "$TRITON_CACHE_DIR" "$HOME/.flaggems"
      for run in cold warm; do
        tag="devices-$d-$run$FL_LINE"
        start=$(date +%s.%N)
        (cd /tmp && timeout -s INT -k 30 "${LANE_TIMEOUT:-540}" python3 -m pytest_fl_contract.cli contracts ${LANE_SUITES:-reductions layers tensorops} -- \
          --platform nvidia --fl-sweep full -n "${WORKERS:-auto}" --fl-devices "$d" -q ${LANE_ARGS} -rfE \
          --junitxml="$OUT/lane-$tag.xml" > "$OUT/lane-$tag.txt" 2>&1)
        rc=$?
        wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")
        counts=$(grep -E "passed|failed" "$OUT/lane-$tag.txt" | tail -1)
        spread=$(python3 -c "
import json, sys, xml.etree.ElementTree as ET
try:
    found = [p.get('value') for p in ET.parse(sys.argv[1]).iter('property') if p.get('name') == 'fl_worker_devices']
except Exception:
    found = []
workers = json.loads(found[0]) if found else {}
devices = sorted({v.split(' ')[0] for v in workers.values()})
print(f'{len(workers)} workers on {len(devices)} devices ({\", \".join(devices)})' if workers else 'one device, workers not pinned')
" "$OUT/lane-$tag.xml")
        echo "devices=$d $run: exit $rc, $wall s wall; $counts; $spread" | tee -a "$summary"
        grep -E "^(FAILED|ERROR)" "$OUT/lane-$tag.txt" | cut -c1-300 | head -10
      done
    done ;;
  *) echo "unknown step $what (setup, line54, fgsuite, probes, grid, large, limits, realmodels, lane, devices, forced, sweep, shapes, startup, workerprofile, profile, loopab, ncu)"; exit 2 ;;
  esac
done
