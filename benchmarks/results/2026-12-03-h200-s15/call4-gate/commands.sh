#!/bin/bash
# session 15, call 4: GPU tests (the watched gate's test); clock_cost.py --sync-each (driver = the watched gate);
# RMSNorm x2 processes and GEMM --repeat 3 with the variant gate (IncrementalOptions(gate=True))
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
tail -15 $OUT/gputests.log | tee -a $LOG
echo "== clock_cost --sync-each $(date +%T)" | tee -a $LOG
timeout 60 python3 benchmarks/clock_cost.py --calls 2000 --rounds 5 --sync-each --out $OUT/cc1 > $OUT/cc1.log 2>&1; cut -c1-300 $OUT/cc1.log | tee -a $LOG
timeout 60 python3 benchmarks/clock_cost.py --calls 2000 --rounds 5 --out $OUT/cc3 > $OUT/cc3.log 2>&1; cut -c1-300 $OUT/cc3.log | tee -a $LOG
run rms_d --kernels rmsnorm --repeat 3 --variant gate:gate=1
run rms_e --kernels rmsnorm --repeat 3 --variant gate:gate=1
run mm3 --kernels matmul --repeat 3 --variant gate:gate=1
cd $OUT && tar czf logs.tgz *.log *.json cc1 cc3 && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
