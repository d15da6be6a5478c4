#!/bin/bash
# session 17, call 1: the oracle's cost; RMSNorm under cProfile; RMSNorm interleaved (--interleave 500) x2
# processes --repeat 3; the GPU tests
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
git log --oneline -1 2>/dev/null | tee -a $LOG
echo "== oracle $(date +%T)" | tee -a $LOG
timeout 120 python3 .old/oracle_cost.py 2>&1 | tee $OUT/oracle.log | tail -4 | tee -a $LOG
run() {  # name, args...
  local name=$1; shift
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout 300 python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU|variant|decisions without|interleaved" $OUT/$name.log | cut -c1-400 | tee -a $LOG
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
run rms_prof --kernels rmsnorm --profile --retime-rounds 2
run rms_i1 --kernels rmsnorm --repeat 3 --interleave 500
run rms_i2 --kernels rmsnorm --repeat 3 --interleave 500
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log *.json *.txt && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
