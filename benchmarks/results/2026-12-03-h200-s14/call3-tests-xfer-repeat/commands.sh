#!/bin/bash
# session 14, call 3: GPU tests (TRITUNE_GPU_TESTS=1, which call 2 lacked); searchxfer x2; RMSNorm --repeat 3 once more
source benchmarks/gpu_env.sh
export TRITUNE_GPU_TESTS=1
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store -rs > $OUT/gputests.log 2>&1
tail -4 $OUT/gputests.log | tee -a $LOG
unset TRITUNE_GPU_TESTS
RES=/tmp/res3 SEARCHXFER_CACHE=shared SEARCHXFER_PROCESS=fresh SEARCHXFER_REPEAT=2 OUT=/tmp/o3 bash benchmarks/gpu.sh searchxfer > /dev/null 2>&1
grep -E "transfer wall|repeats" /tmp/res3/run.log | cut -c1-300 | tee -a $LOG
export TRITON_CACHE_DIR=/tmp/tc
echo "== rms_c $(date +%T)" | tee -a $LOG
TRITUNE_STORE=$(mktemp -d)/s.db timeout 200 python3 benchmarks/serving.py --out /tmp/srv_c --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 --kernels rmsnorm --repeat 3 > $OUT/rms_c.log 2>&1
grep -E "repetition|median over|worst single|converged to <= 1.02x the pretuned" $OUT/rms_c.log | cut -c1-330 | tee -a $LOG
python3 - /tmp/srv_c/serving.json $OUT/rms_c.summary.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for k in d["kernels"].values():
    k.pop("stream",None)
    for e in k["engines"].values():
        for f in ("latencies_ms","host_ms","gc_ms","phases","trace"): e.pop(f,None)
json.dump(d,open(sys.argv[2],"w"))
PY
cp /tmp/o3/results.tgz $OUT/searchxfer.tgz
ls -la $OUT
