#!/bin/bash
# session 17, call 2: a new shape's allocation costs; RMSNorm under cProfile (callees); RMSNorm interleaved with
# variants rs8 (round_samples=8), cached (clock=cached), dif (decision=difference) x2 processes --repeat 3;
# search_tune --only transfer (the out_dtype oracle); the fixed gated-span GPU test
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
echo "== alloc $(date +%T)" | tee -a $LOG
timeout 60 python3 .old/alloc_cost.py 2>&1 | tee $OUT/alloc.log | tee -a $LOG
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 300 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|converged to <= 1.02x the pretuned|extra GPU|variant|interleaved" $OUT/$name.log | cut -c1-300 | tee -a $LOG
  cp /tmp/srv_$name/profile-*.txt $OUT/ 2>/dev/null
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
run rms_prof2 --kernels rmsnorm --profile --retime-rounds 2
V="--variant rs8:round_samples=8 --variant cached:clock=cached --variant dif:decision=difference"
run rms_v1 --kernels rmsnorm --repeat 3 --interleave 500 $V
run rms_v2 --kernels rmsnorm --repeat 3 --interleave 500 $V
echo "== search transfer $(date +%T)" | tee -a $LOG
timeout 200 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-700 | tee -a $LOG
cp /tmp/search/*.json $OUT/ 2>/dev/null
echo "== gpu test $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/incremental/test_gpu_incremental.py > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log *.json *.txt && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
