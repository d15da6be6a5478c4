#!/usr/bin/env bash
# Second GPU run: GPU tests, timer check after the launch-pad fix, a GELU landscape, tritune vs triton.autotune.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 TRITUNE_STORE=$OUT/store.db
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/env.txt
TRITUNE_GPU_TESTS=1 timeout 120 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -4 | tee $OUT/gpu_tests.txt
timeout 90 python3 benchmarks/timer_check.py --no-isolate --out $OUT/timer_check.json 2>&1 | grep -v "^ " | tail -12
TRITON_CACHE_DIR=/tmp/tc2 timeout 120 python3 -m tritune tune examples/gelu_space.py --key n=16777216 --exhaustive --no-store --quiet --json $OUT/tune_gelu_space.json --record $OUT/landscape_gelu_n2e24.json 2>&1 | tail -8
timeout 330 python3 benchmarks/vs_triton_autotune.py --out $OUT --repeats 2 --sizes 20 24 28 2>&1 | tail -14
