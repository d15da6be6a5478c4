#!/bin/bash
# session 16, call 4: RMSNorm x2 processes --repeat 3 with the variants nospin (IncrementalOptions(spin_idle=False),
# the clock too), nsd (spin_idle=False, decision=difference) and le8 (lone_every=8)
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
V="--variant nospin:spin_idle=0 --variant nsd:spin_idle=0,decision=difference --variant le8:lone_every=8"
run rms_f --kernels rmsnorm --repeat 3 $V
run rms_g --kernels rmsnorm --repeat 3 $V
cd $OUT && tar czf logs.tgz *.log *.json && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz -exec rm -rf {} +
ls -la $OUT
