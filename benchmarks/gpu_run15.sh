#!/usr/bin/env bash
# Fifteenth GPU run (2x H200, session 3): a check of main after the review fixes (compile pools rebuilt
# after a worker crash, one config per worker, finalists carrying rank 0's times): the GPU tests from an
# empty Triton cache, `tritune tune` on the GELU example, and the 2-GPU farm on the GELU example.
set -u
. benchmarks/gpu_env.sh  # PYTHONPATH, wheels, $LOG with the machine's facts, t and el
TRITON_CACHE_DIR=$(mktemp -d) TRITUNE_GPU_TESTS=1 timeout 60 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -3 | tee -a $LOG
s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 40 python3 -m tritune tune examples/gelu.py --json $OUT/tune_gelu.json --no-store 2>&1 | tail -4 | tee -a $LOG; e=$(t)
echo "tritune tune examples/gelu.py wall_s=$(el $s $e)" | tee -a $LOG
s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 40 torchrun --nproc-per-node=2 -m tritune tune examples/gelu.py --quiet --json $OUT/farm_gelu_n2.json --no-store > /tmp/fg.log 2>&1; rc=$?; e=$(t)
echo "farm gelu N=2 rc=$rc wall_s=$(el $s $e)" | tee -a $LOG; grep -i "error\|differ" /tmp/fg.log | head -3 | tee -a $LOG
