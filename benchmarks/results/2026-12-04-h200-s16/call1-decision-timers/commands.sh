#!/bin/bash
# session 16, call 1: timer_agreement.py (issue 16: the two timers on cuBLAS); RMSNorm x3 processes --repeat 3 with
# the variants dif (decision=difference) and ind (decision=indifference); GEMM --repeat 2 with dif
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
echo "== timer_agreement $(date +%T)" | tee -a $LOG
timeout 150 python3 benchmarks/timer_agreement.py --out $OUT/ta --rounds 8 > $OUT/ta.log 2>&1; echo "   rc=$?" | tee -a $LOG; tail -12 $OUT/ta.log | cut -c1-300 | tee -a $LOG
V="--variant dif:decision=difference --variant ind:decision=indifference"
run rms_a --kernels rmsnorm --repeat 3 $V
run rms_b --kernels rmsnorm --repeat 3 $V
run rms_c --kernels rmsnorm --repeat 3 $V
run mm1 --kernels matmul --repeat 2 --variant dif:decision=difference
cd $OUT && tar czf logs.tgz *.log *.json ta && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz -exec rm -rf {} +
ls -la $OUT
