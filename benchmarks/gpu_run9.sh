#!/usr/bin/env bash
# Ninth GPU run (1x H200, session 2): the decorator now races what compiled first while the slowest compiles
# finish; the session's compile workers are stopped at once. GPU tests, matmul vs cuBLAS on a cool GPU,
# tritune vs triton.autotune on the GELU space again (3 repeats), matmul vs cuBLAS on the hot GPU.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader; } 2>&1 | tee $LOG
timeout 40 python3 benchmarks/matmul_vs_cublas.py --rounds 5 --json $OUT/matmul_vs_cublas_cool.json 2>&1 | tail -3 | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 60 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -3 | tee -a $LOG
timeout 390 python3 benchmarks/vs_triton_autotune.py --out $OUT --part gelu --repeats 3 2>&1 | grep -v Warn | tee -a $LOG
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader | tee -a $LOG
timeout 40 python3 benchmarks/matmul_vs_cublas.py --rounds 5 --json $OUT/matmul_vs_cublas_hot.json 2>&1 | tail -3 | tee -a $LOG
