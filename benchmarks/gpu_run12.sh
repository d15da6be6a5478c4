#!/usr/bin/env bash
# Twelfth GPU run (2x H200, session 3), two jobs side by side, each on its own GPU and half the cores:
# GPU 0, cores 0-15: tritune (decorator and session) against triton.autotune on the GELU space, with the
#   reference re-measurement now shuffled over 20 rounds;
# GPU 1, cores 16-31: the TMA matmul example (examples/matmul_tma.py) tuned at 4096^3 from an empty
#   Triton cache, its top 5 against cuBLAS, interleaved.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader; } 2>&1 | tee $LOG
mkdir -p $OUT/gelu $OUT/tma
(CUDA_VISIBLE_DEVICES=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 300 taskset -c 16-31 python3 benchmarks/matmul_tma_tune.py --out $OUT/tma/matmul_tma.json --jobs 16 > $OUT/tma/log.txt 2>&1; echo "tma rc=$?" >> $OUT/tma/log.txt) &
CUDA_VISIBLE_DEVICES=0 timeout 540 taskset -c 0-15 python3 benchmarks/vs_triton_autotune.py --out $OUT/gelu --part gelu --repeats 3 --jobs 16 2>&1 | grep -v Warn > $OUT/gelu/log.txt
wait
tail -20 $OUT/tma/log.txt | tee -a $LOG
tail -16 $OUT/gelu/log.txt | tee -a $LOG
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader | tee -a $LOG
