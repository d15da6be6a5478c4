#!/bin/bash
# session 17, call 4 (main at 7ac46c1): RMSNorm x2 processes --repeat 3 --interleave 500 (the default only, with the
# check call's and the phases' host-time split); GEMM --repeat 2 --interleave 500; search_tune --only transfer;
# the GPU tests
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 200 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU|check call|host time per call|total .* 0.2x|p50" $OUT/$name.log | cut -c1-600 | tee -a $LOG
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
run rms_m1 --kernels rmsnorm --repeat 3 --interleave 500
run rms_m2 --kernels rmsnorm --repeat 3 --interleave 500

run mm_m1 --kernels matmul --repeat 2 --interleave 500
echo "== search transfer $(date +%T)" | tee -a $LOG
timeout 150 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-300 | tee -a $LOG
cp /tmp/search/*.json $OUT/ 2>/dev/null
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log *.json && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
