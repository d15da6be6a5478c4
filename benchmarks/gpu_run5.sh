#!/usr/bin/env bash
# Fifth GPU run (2x H200): GPU tests, dispatch, screen proof after its fixes, the matmul farm on 1 and 2 GPUs
# (cold Triton cache each, exhaustive so the N=1 run is also a landscape), in-job consensus on 2 ranks.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
t() { date +%s.%N; }
TRITUNE_GPU_TESTS=1 timeout 90 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -6 | tee $OUT/gpu_tests.txt
timeout 40 python3 benchmarks/dispatch.py --out $OUT 2>&1 | tail -5
timeout 120 python3 benchmarks/screen_vs_launch.py --out $OUT/screen_vs_launch_h200.json 2>&1 | grep -v "^   " | tail -4
for N in 1 2; do
  rec=""; [ $N = 1 ] && rec="--record $OUT/landscape_matmul.json"
  s=$(t); TRITON_CACHE_DIR=/tmp/tcf$N timeout 120 torchrun --nproc-per-node=$N -m tritune tune examples/matmul.py --workload matmul --key M=4096,N=4096,K=4096 --exhaustive --quiet --json $OUT/farm_matmul_n$N.json $rec --store /tmp/st$N.sqlite > /tmp/farm_n$N.log 2>&1
  rc=$?; e=$(t); echo "farm N=$N rc=$rc wall_s=$(python3 -c "print(round($e - $s, 2))")" | tee -a $OUT/farm.txt
  tail -5 /tmp/farm_n$N.log | tee -a $OUT/farm.txt
done
GLOO_SOCKET_IFNAME=lo timeout 70 torchrun --nproc-per-node=2 benchmarks/dist_tune.py --max-configs 24 --out $OUT/dist2 2>&1 | tail -6
