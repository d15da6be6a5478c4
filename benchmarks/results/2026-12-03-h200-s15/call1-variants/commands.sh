#!/bin/bash
# session 15, call 1: RMSNorm serving x2 processes --repeat 3 with variants r1 (round_samples=1, the old
# decision rhythm) and drv (DriverClock without the gate); GEMM --repeat 2 with drv
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
V="--variant r1:round_samples=1 --variant drv:clock=driver"
run rms_a --kernels rmsnorm --repeat 3 $V
run rms_b --kernels rmsnorm --repeat 3 $V
run mm --kernels matmul --repeat 2 --variant drv:clock=driver
cd $OUT && tar czf logs.tgz *.log *.json && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz -exec rm -rf {} +
ls -la $OUT
