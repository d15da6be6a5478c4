#!/bin/bash
# session 26, call 4: every GPU test of the suite at HEAD (-m gpu over all of tests/: tests/gpu, tune, compat,
# incremental, bench/test_timer.py, screen/test_targets.py), not only the three folders of calls 1-3.
source benchmarks/gpu_env.sh
git log --oneline -1 2>/dev/null | tee -a $LOG
export TRITON_CACHE_DIR=/tmp/tc4_tests
echo "== gpu tests (all) $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests -rs > $OUT/gputests_all.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
tail -15 $OUT/gputests_all.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
