#!/bin/bash
# Long runs of looks for offline estimator studies: benchmarks/first_looks.py, 40 rounds, gaps 0 and 1 s, 3 processes.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
for r in 1 2 3; do
  echo "== first_looks 40 rounds, process $r $(date +%T)" | tee -a $LOG
  timeout 100 python3 benchmarks/first_looks.py --gaps 0,1.0 --rounds 40 --out $OUT/first_looks40_$r.json > $OUT/first_looks40_$r.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep "^gap" $OUT/first_looks40_$r.log | tee -a $LOG
done
echo "== done $(date +%T)" | tee -a $LOG
