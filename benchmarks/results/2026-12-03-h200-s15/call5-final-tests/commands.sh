#!/bin/bash
# session 15, call 5 (final code): GPU tests, tests/bench included
source benchmarks/gpu_env.sh
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench -rs > $OUT/gputests.log 2>&1
tail -15 $OUT/gputests.log | tee -a $LOG
