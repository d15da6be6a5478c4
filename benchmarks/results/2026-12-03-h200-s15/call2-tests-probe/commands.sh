#!/bin/bash
# session 15, call 2: GPU tests on this tree; the matmul probe of issue 16 (benchmarks/matmul_probe.py)
source benchmarks/gpu_env.sh
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 220 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store -rs > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== matmul probe $(date +%T)" | tee -a $LOG
TRITON_CACHE_DIR=/tmp/tcp timeout 330 python3 benchmarks/matmul_probe.py --out $OUT/probe > $OUT/probe.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
head -70 $OUT/probe.log | cut -c1-260 | tee -a $LOG
ls -la $OUT $OUT/probe
