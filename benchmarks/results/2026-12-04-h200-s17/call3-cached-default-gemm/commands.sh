#!/bin/bash
# session 17, call 3 (main at 7519bd4 + working tree): the new default clock (cache_stream) against the old
# (uncached) and with decision=difference (dif), RMSNorm interleaved x2 processes --repeat 3; GEMM --repeat 2
# interleaved with uncached; search_tune --only transfer (warm_compare once per process); the GPU tests
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 240 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU|variant|interleaved|total .* 0.2x" $OUT/$name.log | cut -c1-300 | tee -a $LOG
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
V="--variant old:clock=uncached --variant dif:decision=difference"
run rms_n1 --kernels rmsnorm --repeat 3 --interleave 500 $V
run rms_n2 --kernels rmsnorm --repeat 3 --interleave 500 $V
run mm_n1 --kernels matmul --repeat 2 --interleave 500 --variant old:clock=uncached
echo "== search transfer $(date +%T)" | tee -a $LOG
timeout 200 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-600 | tee -a $LOG
cp /tmp/search/*.json $OUT/ 2>/dev/null
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log *.json && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
