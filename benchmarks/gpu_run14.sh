#!/usr/bin/env bash
# Fourteenth GPU run (2x H200, session 3): the matmul space (216 configs) against triton.autotune with the
# final code (the session now on the decorator's path), 3 repeats of each tritune engine; then the farm on
# 2 GPUs with rank 0 re-timing the finalists (compare with run 11's N=1 winners).
set -u
. benchmarks/gpu_env.sh  # PYTHONPATH, wheels, $LOG with the machine's facts, t and el
CUDA_VISIBLE_DEVICES=0 timeout 370 python3 benchmarks/vs_triton_autotune.py --out $OUT --part matmul --repeats 3 2>&1 | grep -v Warn | tail -12 | tee -a $LOG
KEYS="--key M=4096,N=4096,K=4096 --key M=2048,N=2048,K=2048 --key M=8192,N=8192,K=8192"
s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 60 torchrun --nproc-per-node=2 -m tritune tune examples/matmul.py --workload matmul $KEYS --quiet --json $OUT/farm_matmul_n2_retime.json --store /tmp/sr.sqlite > /tmp/fr.log 2>&1
rc=$?; e=$(t); echo "farm N=2 (retime) rc=$rc wall_s=$(el $s $e)" | tee -a $LOG
grep -i "error\|differ" /tmp/fr.log | head -3 | tee -a $LOG
