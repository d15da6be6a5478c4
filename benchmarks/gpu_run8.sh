#!/usr/bin/env bash
# Eighth GPU run (1x H200, session 2): tritune vs triton.autotune on the 216-config fp16 matmul space at
# 4096^3 (3 repeats of each tritune engine), with cuBLAS as the ceiling.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } 2>&1 | tee $LOG
timeout 580 python3 benchmarks/vs_triton_autotune.py --out $OUT --part matmul --repeats 3 2>&1 | grep -v Warn | tee -a $LOG
