#!/bin/bash
# session 16, call 2: GPU tests; timer_agreement.py with the paired ratio; search_tune.py (issue 16 rows, with the
# paired cuBLAS ratio); RMSNorm x2 processes --repeat 3, default only
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
git log --oneline -1 2>/dev/null | tee -a $LOG
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 330 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU|variant|racing calls' excess|decisions without" $OUT/$name.log | cut -c1-400 | tee -a $LOG
  python3 - /tmp/srv_$name/serving.json $OUT/$name.summary.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for k in d["kernels"].values():
    k.pop("stream",None)
    for e in k["engines"].values():
        for f in ("latencies_ms","host_ms","gc_ms","phases","trace"): e.pop(f,None)
json.dump(d,open(sys.argv[2],"w"))
PY
}
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 220 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench -rs > $OUT/gputests.log 2>&1
tail -5 $OUT/gputests.log | tee -a $LOG
echo "== timer_agreement $(date +%T)" | tee -a $LOG
timeout 150 python3 benchmarks/timer_agreement.py --out $OUT/ta --rounds 6 --pairs 600 > $OUT/ta.log 2>&1; echo "   rc=$?" | tee -a $LOG; tail -11 $OUT/ta.log | cut -c1-300 | tee -a $LOG
echo "== search $(date +%T)" | tee -a $LOG
timeout 300 python3 benchmarks/search_tune.py --out /tmp/search --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-400 | tee -a $LOG
cp -r /tmp/search $OUT/searchdir
run rms_d --kernels rmsnorm --repeat 3
run rms_e --kernels rmsnorm --repeat 3
cd $OUT && tar czf logs.tgz *.log *.json ta searchdir && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
