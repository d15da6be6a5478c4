#!/usr/bin/env bash
# One runner for the GPU checks, by named part (replaces one numbered script per run):
#
#   bash benchmarks/gpu.sh PART [PART ...]      on the device machine, from the repository root
#
# Parts: tests dispatch hostcost tkeymemo gelu short libs libtests tutorials serving servinglong servinglongnl servinglongflat servinglate servingnospin servingtiny servingwd search searchxfer looks distsearch (2 GPUs). COMMIT=<sha> names the commit in run.log (the
# device machine's copy of the tree carries no up-to-date git HEAD). Each part writes under $RES/PART/ and appends
# to $RES/run.log, which starts with the machine's facts and each part's command line. Before every part and
# at the end everything is packed into $OUT/results.tgz (the device tool returns at most 8 files), and run.log
# is copied beside it. Env: LIBS_BUDGET_S, LIBS_OPS, LIBTESTS_BUDGET_S, LIBTESTS_SUITES (e.g. liger), SEARCHXFER_CACHE (both|shared|empty), SEARCHXFER_PROCESS (both|fresh|warm), SEARCHXFER_REPEAT (each new-key pair N times), SEARCH_PROFILE=1 (searchxfer: the transfer once more under cProfile), SERVINGLONG_CALLS.
# The tracked tree plus what a call carries must stay under the device's 64 MiB: carry .whl only for libs and
# libtests (.whl/libtests alone is 22 MB). Wheels carried in .whl/ (FlagGems, Liger-Kernel, SQLAlchemy) are installed into
# /tmp/site; Triton's tutorials, which are not committed, are read from .ref/tutorials. libtests runs FlagGems' and
# Liger's own tests from .ref/libtests with wheels from .whl/libtests (benchmarks/libtests_fetch.sh gathers both).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TRITUNE_GPU_TESTS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>/dev/null \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
# a fresh results folder per call: a warm (or reused) device machine keeps /tmp between calls and sessions
RES=${RES:-$(mktemp -d /tmp/res.XXXXXX)}; OUT=${OUT:-/tmp/out}; mkdir -p "$RES" "$OUT"
LOG=$RES/run.log
{ date -u; echo "commit ${COMMIT:-unknown (pass COMMIT=...)}"; nproc; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } >> "$LOG" 2>&1
step() {  # step PART LIMIT_S CMD...: run one command of a part with its own empty Triton cache, log it
  local part=$1 limit=$2; shift 2
  mkdir -p "$RES/$part"
  echo "== $part: $* (limit ${limit}s) $(date -u +%T)" | tee -a "$LOG"
  local s; s=$(date +%s.%N)
  TRITON_CACHE_DIR=$(mktemp -d) TRITUNE_STORE=$(mktemp -d)/store.db timeout "$limit" "$@" > "$RES/$part/$(basename "$1")_$(date +%s%N).log" 2>&1
  local rc=$?
  echo "   rc=$rc wall_s=$(python3 -c "import time; print(round(time.time() - $s, 1))")" | tee -a "$LOG"
}
pack() {  # everything under 4 MB comes back (tensors saved for the output comparisons stay: hundreds of MB)
  (cd "$RES" && find . -type f -size -4M ! -name '*.pt' -print0 | tar czf "$OUT/results.tgz.part" --null -T -) \
    && mv "$OUT/results.tgz.part" "$OUT/results.tgz" && cp "$LOG" "$OUT/run.log"
}
long_stream() {  # long_stream PART [serving.py flags...]: the 60,000-call stream (SERVINGLONG_CALLS), 9 judge rounds
  local part=$1; shift
  step "$part" 420 python3 benchmarks/serving.py --out "$RES/$part" --calls "${SERVINGLONG_CALLS:-60000}" \
    --retime-rounds 9 "$@"
  grep -h -A6 "worst single call\|^host cost\|incremental by phase\|incremental minus\|a check.s event time\|not promoted" "$RES/$part"/python3_*.log | tee -a "$LOG"
}
for part in "$@"; do
  pack  # after every part too: a call cut short by the device's time limit still returns what it finished
  case $part in
    tests) step tests 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests -rs  # every GPU test (26 on an H100, 41 s, session 26)
           tail -3 "$RES"/tests/*.log | tee -a "$LOG" ;;
    dispatch) step dispatch 90 python3 benchmarks/dispatch.py --out "$RES/dispatch"
              step dispatch 90 python3 benchmarks/compat_dispatch.py --out "$RES/dispatch" ;;
    hostcost) step hostcost 60 python3 benchmarks/host_costs.py --out "$RES/hostcost"
              # The incremental racing path's Python on this host's CPU (FAKE device; see its docstring).
              step hostcost 90 python3 benchmarks/racing_host.py --out "$RES/hostcost"
              cat "$RES"/hostcost/python3_*.log | tee -a "$LOG" ;;
    # Triton's triton_key() in fresh processes, its own hash against tritune's memo (screen/triton_key.py).
    tkeymemo) step tkeymemo 120 python3 benchmarks/triton_key_memo.py --repeats 7 --out "$RES/tkeymemo"
              cat "$RES"/tkeymemo/python3_*.log | tee -a "$LOG" ;;
    gelu) step gelu 270 python3 benchmarks/vs_triton_autotune.py --out "$RES/gelu" --part gelu --repeats 1 ;;
    short) step short 330 python3 benchmarks/short_kernels.py --out "$RES/short" ;;
    libs) b=${LIBS_BUDGET_S:-440}  # LIBS_OPS=kron,std,... runs a subset (substring match), e.g. for the per-op profiles; LIBS_PROFILE_COLD=1 profiles each cold call
          step libs $((b + 20)) python3 benchmarks/real_libraries.py --out "$RES/libs" --budget-s "$b" \
            ${LIBS_OPS:+--ops "$LIBS_OPS"} ;;
    libtests) if ls .whl/libtests/*.whl >/dev/null 2>&1; then  # Liger's test helpers import transformers
                python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site-tests \
                  .whl/libtests/*.whl 2>/dev/null || echo "libtests: installing .whl/libtests failed" | tee -a "$LOG"
              fi
              b=${LIBTESTS_BUDGET_S:-225}  # a call that ran other parts first passes what it has left
              PYTHONPATH=$PYTHONPATH:/tmp/site-tests step libtests $((b + 25)) python3 benchmarks/libtests.py \
                --ref .ref/libtests --out "$RES/libtests" --budget-s "$b" --suites "${LIBTESTS_SUITES:-}"
              grep -h "^total\|differs\|NOT RUN" "$RES"/libtests/python3_*.log | tee -a "$LOG" ;;
    tutorials) step tutorials 240 python3 benchmarks/tutorials_check.py .ref/tutorials --out "$RES/tutorials" ;;
    serving) step serving 300 python3 benchmarks/serving.py --out "$RES/serving"
             step serving 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/incremental -rs
             grep -h -A6 "worst single call\|^host cost\|^comparison\|incremental by phase\|incremental minus" "$RES"/serving/python3_*.log | tee -a "$LOG"
             grep -h "cold judge\|judges agree\|spans stretched\|not promoted" "$RES"/serving/python3_*.log | tee -a "$LOG" ;;
    # The serving stream again with the opt-out IncrementalOptions(spin_idle=False) (the default spins before an
    # idle device's span): its judges and convergence beside the default run's show what the spin buys.
    servingnospin) step servingnospin 300 python3 benchmarks/serving.py --out "$RES/servingnospin" --no-spin-idle \
                     --engines untuned,incremental,tritune,pretuned
                   grep -h -A3 "worst single call\|^host cost" "$RES"/servingnospin/python3_*.log | tee -a "$LOG"
                   grep -h "cold judge\|not promoted" "$RES"/servingnospin/python3_*.log | tee -a "$LOG" ;;
    # The same stream ten times longer (60,000 calls; SERVINGLONG_CALLS): the incremental mode's tuning is a cost per
    # key, the tuned configs' gain a gain per call, so the total against the untuned first config depends on the
    # stream's length; this shows it at a length a server reaches in seconds. Both lengths are reported.
    servinglong) long_stream servinglong ;;
    # The long stream with IncrementalOptions(wait_leader=False) (waiting keys race timed round-robin, as before
    # session 9), without triton.autotune's engine: run after servinglong in one call, the A/B of the leader.
    servinglongnl) long_stream servinglongnl --no-wait-leader --engines tritune,untuned,incremental,pretuned ;;
    # The long stream with the flat prune ratio of sessions 6-8 (serving.py --flat-prune), the A/B of the scaled one.
    servinglongflat) long_stream servinglongflat --flat-prune --engines tritune,untuned,incremental,pretuned ;;
    # The serving stream with IncrementalOptions(drop_late=True) (off by default; session 8): its convergence
    # beside the default run's (run both parts in one call) says whether to turn it on.
    servinglate) step servinglate 300 python3 benchmarks/serving.py --out "$RES/servinglate" --drop-late \
                   --engines untuned,incremental,pretuned
                 grep -h -A3 "worst single call\|^host cost\|late spans" "$RES"/servinglate/python3_*.log | tee -a "$LOG"
                 grep -h "cold judge\|not promoted" "$RES"/servinglate/python3_*.log | tee -a "$LOG" ;;
    # The earlier stream of short, host-bound calls (GEMM M = 1..4096, RMSNorm keyed on hidden size).
    servingtiny) step servingtiny 240 python3 benchmarks/serving.py --out "$RES/servingtiny" --tiny
                 grep -h -A3 "worst single call\|^host cost" "$RES"/servingtiny/python3_*.log | tee -a "$LOG" ;;
    # Attribution of slow calls: a traceback of every thread whenever an incremental call passes 20 ms.
    servingwd) step servingwd 150 python3 benchmarks/serving.py --out "$RES/servingwd" --quick \
                 --engines tritune,incremental --watchdog-ms 20
               grep -c "^Timeout" "$RES"/servingwd/watchdog-*-incremental.txt | tee -a "$LOG" ;;
    search) step search 540 python3 benchmarks/search_tune.py --out "$RES/search" --new-key-cache shared
            grep -A6 "^== search vs exhaustive" "$RES"/search/python3_*.log | tee -a "$LOG" ;;
    # Issue 16's new-key row alone (3-key search; transfer and cold new key each from a copy of one cache snapshot,
    # then each from an empty cache; interleaved quality): ~2 minutes.
    searchxfer) step searchxfer 240 python3 benchmarks/search_tune.py --out "$RES/searchxfer" --only transfer --new-key-cache "${SEARCHXFER_CACHE:-both}" \
                  --new-key-process "${SEARCHXFER_PROCESS:-both}" --repeat "${SEARCHXFER_REPEAT:-1}"
                grep -A40 "^== search vs exhaustive" "$RES"/searchxfer/python3_*.log | tee -a "$LOG" ;;
    # Do a heavy kernel's looks drift together (session 25)? 8 configs of the matmul at 6144^3 in rounds, after the
    # tuner's warm-up and an idle gap; then the estimators replayed on those looks (benchmarks/look_drift.py).
    looks) step looks 120 python3 benchmarks/first_looks.py --gaps 0,1.0 --rounds 40 --out "$RES/looks/first_looks.json"
           python3 benchmarks/look_drift.py "$RES/looks/first_looks.json" --rounds 2,3,5,8 | tee -a "$LOG" ;;
    # The new key's host-side fixed costs (screen, search start, store write) on this host's CPU, nothing launched.
    xfersetup) step xfersetup 120 python3 benchmarks/transfer_setup.py --out "$RES/xfersetup"
               cat "$RES"/xfersetup/python3_*.log | tee -a "$LOG" ;;
    # Needs 2 GPUs (nvidia-h200-x2): one search shared by 2 ranks vs the same search in one process, 16 jobs each.
    distsearch) step distsearch 280 python3 -m tritune tune examples/matmul_tma_wide.py --workload matmul_tma_wide \
                  --jobs 16 --quiet --json "$RES/distsearch/one.json" --store /tmp/ds1.sqlite
                GLOO_SOCKET_IFNAME=lo step distsearch 280 torchrun --nproc-per-node=2 -m tritune tune \
                  examples/matmul_tma_wide.py --workload matmul_tma_wide --jobs 16 --quiet \
                  --json "$RES/distsearch/farmed.json" --store /tmp/ds2.sqlite
                python3 benchmarks/dist_search_compare.py "$RES/distsearch/one.json" "$RES/distsearch/farmed.json" \
                  --out "$RES/distsearch" | tee -a "$LOG" ;;
    *) echo "unknown part $part" | tee -a "$LOG" ;;
  esac
done
pack
