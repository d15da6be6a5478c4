#!/usr/bin/env bash
# Thirteenth GPU run (2x H200, session 3). (1) The TMA matmul tuned 3 times on GPU 0 alone (first from an
# empty Triton cache), each time its top 5 against cuBLAS over 24 interleaved rounds: is the tuned
# winner >= 0.98 of cuBLAS, and stable? (2) The offline farm in exhaustive mode (every legal config timed
# to completion, 3 keys), N=1 and N=2, cold cache each: the farm where timing, not compiling, dominates.
set -u
. benchmarks/gpu_env.sh  # PYTHONPATH, wheels, $LOG with the machine's facts, t and el
export TC=$(mktemp -d)
for R in 1 2 3; do
  CUDA_VISIBLE_DEVICES=0 TRITON_CACHE_DIR=$TC timeout 90 python3 benchmarks/matmul_tma_tune.py --out $OUT/matmul_tma_r$R.json --rounds 24 2>&1 | grep -v "^round\|^#[0-9] .*tune" | tail -9 | tee -a $LOG
done
rm -f $OUT/*.tune.json
KEYS="--key M=4096,N=4096,K=4096 --key M=2048,N=2048,K=2048 --key M=8192,N=8192,K=8192"
for N in 1 2; do
  s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 150 torchrun --nproc-per-node=$N -m tritune tune examples/matmul.py --workload matmul $KEYS --exhaustive --quiet --json $OUT/farm_exhaustive_n$N.json --store /tmp/sx$N.sqlite > /tmp/fx$N.log 2>&1
  rc=$?; e=$(t); echo "farm exhaustive N=$N rc=$rc wall_s=$(el $s $e)" | tee -a $LOG
  grep -i "error\|differ" /tmp/fx$N.log | head -3 | tee -a $LOG
done
