#!/bin/bash
# How long does the H100 take to settle under the matmul's load, and does a warm-up with the kernel itself help?
# benchmarks/first_looks.py: flush warm-up 50 ms (the tuner's) vs the first config's own launches for 0.3 s, 10 rounds.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
for w in "flush 0.05" "kernel 0.3" "flush 0.05" "kernel 0.3"; do
  set -- $w
  echo "== first_looks warm $1 $2 $(date +%T)" | tee -a $LOG
  timeout 150 python3 benchmarks/first_looks.py --gaps 0,0.3 --rounds 10 --warm $1 --warm-s $2 --out $OUT/first_looks_$1_$(date +%s).json 2>&1 | tee -a $LOG
done
echo "== done $(date +%T)" | tee -a $LOG
