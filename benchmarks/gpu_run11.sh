#!/usr/bin/env bash
# Eleventh GPU run (2x H200, session 3): the timer no longer spends 5 extra runs and 5 flushes per
# measurement on estimates. The offline farm (matmul, 3 keys, cold Triton cache each) and in-job
# consensus (the decorator, same keys) on N=1 with all 32 cores, N=1 pinned to 16 cores (one GPU's
# share of this host), and N=2; the fixed cost of an empty torchrun job for N=1 and 2.
set -u
. benchmarks/gpu_env.sh  # PYTHONPATH, wheels, $LOG with the machine's facts, t and el
for N in 1 2; do
  s=$(t); timeout 60 torchrun --nproc-per-node=$N benchmarks/empty_job.py > /dev/null 2>&1; rc=$?; e=$(t)
  echo "empty job N=$N rc=$rc wall_s=$(el $s $e)" | tee -a $LOG
done
KEYS="--key M=4096,N=4096,K=4096 --key M=2048,N=2048,K=2048 --key M=8192,N=8192,K=8192"
for V in 1 1p16 2; do
  N=${V%%p*}; PIN=""; [ "$V" = 1p16 ] && PIN="taskset -c 0-15"
  s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 120 $PIN torchrun --nproc-per-node=$N -m tritune tune examples/matmul.py --workload matmul $KEYS --quiet --json $OUT/farm_matmul_n$V.json --store /tmp/st$V.sqlite > /tmp/farm_n$V.log 2>&1
  rc=$?; e=$(t); echo "farm N=$V rc=$rc wall_s=$(el $s $e)" | tee -a $LOG
  grep -i "error\|differ" /tmp/farm_n$V.log | head -3 | tee -a $LOG
done
for V in 1 1p16 2; do
  N=${V%%p*}; PIN=""; [ "$V" = 1p16 ] && PIN="taskset -c 0-15"
  mkdir -p /tmp/dd$V
  s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 120 $PIN torchrun --nproc-per-node=$N benchmarks/dist_decorator.py --out /tmp/dd$V 2>&1 | grep "^N=" | tee -a $LOG
  e=$(t); echo "in-job N=$V process wall_s=$(el $s $e)" | tee -a $LOG
  cp /tmp/dd$V/dist_decorator_n$N.json $OUT/dist_decorator_n$V.json
done
