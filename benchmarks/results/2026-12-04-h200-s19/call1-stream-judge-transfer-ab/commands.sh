#!/bin/bash
# session 19, call 1 (main at b484b03 + search_tune --transfer-variant): RMSNorm x2 processes --repeat 3
# --interleave 500 with the stream judge (session 18) primary; GEMM --repeat 2 --interleave 500; search_tune
# --only transfer with the A/B variant surrogate:cached_next=true (fresh and warm processes, 2 repeats); GPU tests
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 220 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|primary judge|STREAM JUDGE|extra GPU|total .* 0.2x|p50" $OUT/$name.log | cut -c1-900 | tee -a $LOG
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
echo "== search transfer A/B $(date +%T)" | tee -a $LOG
timeout 200 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --new-key-process both --repeat 2 --only transfer --transfer-variant surrogate:cached_next=true > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A40 "^== search vs exhaustive" $OUT/search.log | grep -E "^6144|variant|^new key|^total" | cut -c1-500 | tee -a $LOG
cp /tmp/search/*.json $OUT/ 2>/dev/null
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log *.json && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
