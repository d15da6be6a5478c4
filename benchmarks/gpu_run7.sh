#!/usr/bin/env bash
# Seventh GPU run (1x H200, session 2): GPU tests and dispatch after the generated hot path, then tritune vs
# triton.autotune on the GELU space (3 repeats of each tritune engine, sizes 2^20, 2^24, 2^28).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } 2>&1 | tee $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -15 | tee -a $LOG
timeout 45 python3 benchmarks/dispatch.py --out $OUT 2>&1 | tail -6 | tee -a $LOG
timeout 440 python3 benchmarks/vs_triton_autotune.py --out $OUT --part gelu --repeats 3 2>&1 | grep -v Warn | tee -a $LOG
