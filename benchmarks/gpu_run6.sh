#!/usr/bin/env bash
# Sixth GPU run (1x H200, session 2): where tuning time goes (profile), dispatch after the one-pass hot path,
# GPU tests, and two new >=150-config landscapes (layer norm, attention) recorded exhaustively.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"; nproc; } 2>&1 | tee $LOG
mkdir -p /tmp/prof /tmp/tunes
timeout 150 python3 benchmarks/profile_tune.py --out /tmp/prof 2>&1 | grep -v Warning | tee -a $LOG
timeout 45 python3 benchmarks/dispatch.py --out $OUT 2>&1 | tail -6 | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -4 | tee -a $LOG
for W in layernorm attention; do
  s=$(date +%s.%N)
  TRITON_CACHE_DIR=/tmp/tc_$W timeout 170 python3 -m tritune tune examples/$W.py --workload $W --exhaustive --quiet --compile-timeout 40 \
    --no-store --json /tmp/tunes/tune_$W.json --record $OUT/landscape_$W.json > /tmp/tunes/tune_$W.log 2>&1
  echo "tune $W rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $s, 1))")" | tee -a $LOG
  tail -4 /tmp/tunes/tune_$W.log | tee -a $LOG
done
tar czf $OUT/profile.tgz -C /tmp prof tunes
