#!/bin/bash
# session 14, call 1: RMSNorm serving stream, resolve=thread vs inline vs inline+cache-stream, alternated; GEMM inline once
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
run() {  # name, args...
  local name=$1; shift
  local d=$OUT/$name; mkdir -p $d
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 300 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $d.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "total |host cost|with resolve|resolver .* us per event pair|converged to <= 1.02x the pretuned|extra GPU|by phase:|minus" $d.log | cut -c1-400 | tee -a $LOG
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
for rep in 1 2; do
  run rms_thread_$rep --kernels rmsnorm --resolve thread
  run rms_inline_$rep --kernels rmsnorm --resolve inline
  run rms_inlinecs_$rep --kernels rmsnorm --resolve inline --cache-stream
done
run mm_inline --kernels matmul --resolve inline
cd $OUT && tar czf logs.tgz *.log *.summary.json && rm -rf rms_* mm_* *.summary.json
ls -la $OUT
