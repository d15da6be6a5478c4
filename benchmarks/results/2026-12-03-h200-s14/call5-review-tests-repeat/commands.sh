#!/bin/bash
# session 14, call 4 (final code): GPU tests; RMSNorm --repeat 3 once more
source benchmarks/gpu_env.sh
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store -rs > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
export TRITON_CACHE_DIR=/tmp/tc
echo "== rms_d $(date +%T)" | tee -a $LOG
TRITUNE_STORE=$(mktemp -d)/s.db timeout 200 python3 benchmarks/serving.py --out /tmp/srv_d --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 --kernels rmsnorm --repeat 3 > $OUT/rms_d.log 2>&1
grep -E "repetition|median over|worst single|converged to <= 1.02x the pretuned|extra GPU" $OUT/rms_d.log | cut -c1-330 | tee -a $LOG
python3 - /tmp/srv_d/serving.json $OUT/rms_d.summary.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for k in d["kernels"].values():
    k.pop("stream",None)
    for e in k["engines"].values():
        for f in ("latencies_ms","host_ms","gc_ms","phases","trace"): e.pop(f,None)
json.dump(d,open(sys.argv[2],"w"))
PY
plus, on the warm machine: TRITUNE_STORE=$(mktemp -d)/s.db python3 benchmarks/serving.py --out /tmp/srv_f --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 --kernels rmsnorm --repeat 3 > $OUT/rms_f.log
