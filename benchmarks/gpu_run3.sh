#!/usr/bin/env bash
# Third GPU run: tritune vs triton.autotune (GELU space, two sizes, one repeat: the device budget allowed no more).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
timeout 500 python3 benchmarks/vs_triton_autotune.py --out $OUT --repeats 1 --sizes 20 24 2>&1 | tail -14
