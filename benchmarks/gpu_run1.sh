#!/usr/bin/env bash
# First GPU session run: environment facts, GPU tests, timer check, a tune of the bundled GELU example.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITUNE_STORE=$OUT/store.db
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $OUT/env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)" | tee -a $OUT/env.txt
TRITUNE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -s 2>&1 | tail -25 | tee $OUT/gpu_tests.txt
timeout 120 python3 benchmarks/timer_check.py --out $OUT/timer_check.json 2>&1 | tail -30
export TRITON_CACHE_DIR=/tmp/tcache1
timeout 200 python3 -m tritune tune examples/gelu.py --json $OUT/tune_gelu.json --quiet 2>&1 | tail -30
