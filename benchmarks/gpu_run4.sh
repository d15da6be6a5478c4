#!/usr/bin/env bash
# Fourth GPU run: GPU tests (fast dispatch, graph capture, both-ways vs triton.autotune), dispatch benchmark,
# the screen's proof against real launches.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/env.txt
TRITUNE_GPU_TESTS=1 timeout 150 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/gpu_tests.txt
timeout 60 python3 benchmarks/dispatch.py --out $OUT 2>&1 | tail -6
timeout 330 python3 benchmarks/screen_vs_launch.py --out $OUT/screen_vs_launch_h200.json 2>&1 | tail -25
