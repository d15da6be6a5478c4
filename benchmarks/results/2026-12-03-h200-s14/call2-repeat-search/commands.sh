#!/bin/bash
# session 14, call 2: GPU tests; RMSNorm serving x2 processes --repeat 3; GEMM --repeat 2; search_tune (issue 16 rows)
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
echo "== gpu tests $(date +%T)" | tee -a $LOG
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store -rs > $OUT/gputests.log 2>&1
tail -5 $OUT/gputests.log | tee -a $LOG
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 300 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "total |host cost|with resolve|repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU" $OUT/$name.log | cut -c1-330 | tee -a $LOG
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
run rms_a --kernels rmsnorm --repeat 3
run rms_b --kernels rmsnorm --repeat 3
run mm --kernels matmul --repeat 2
echo "== search $(date +%T)" | tee -a $LOG
timeout 300 python3 benchmarks/search_tune.py --out /tmp/search --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | tee -a $LOG
ls -la /tmp/search | head
cp -r /tmp/search $OUT/searchdir
cd $OUT && tar czf logs.tgz *.log *.json searchdir && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
