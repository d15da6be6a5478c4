#!/usr/bin/env bash
# Tenth GPU run (2x H200, session 3). The session (`tritune tune`) and the decorator now share one path:
# forked compile workers, racing what compiled first while the last ones compile; farmed, each rank
# compiles and races only its share. GPU tests from a cold Triton cache; the offline farm on N=1 and 2
# GPUs (matmul, 3 keys, cold cache each); in-job consensus with the decorator on N=1 and 2; the session
# against triton.autotune on the GELU space.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
t() { date +%s.%N; }
{ date -u; git log -1 --format='commit %H' 2>/dev/null; nproc; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader; } 2>&1 | tee $LOG
TRITON_CACHE_DIR=$(mktemp -d) TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -m gpu tests/gpu tests/screen/test_targets.py -p no:cacheprovider 2>&1 | tail -4 | tee -a $LOG
KEYS="--key M=4096,N=4096,K=4096 --key M=2048,N=2048,K=2048 --key M=8192,N=8192,K=8192"
for N in 1 2; do
  s=$(t); TRITON_CACHE_DIR=$(mktemp -d) timeout 150 torchrun --nproc-per-node=$N -m tritune tune examples/matmul.py --workload matmul $KEYS --quiet --json $OUT/farm_matmul_n$N.json --store /tmp/st$N.sqlite > /tmp/farm_n$N.log 2>&1
  rc=$?; e=$(t); echo "farm N=$N rc=$rc wall_s=$(python3 -c "print(round($e - $s, 2))")" | tee -a $LOG
  grep -v "^ " /tmp/farm_n$N.log | tail -3 | tee -a $LOG
done
for N in 1 2; do
  s=$(t); TRITON_CACHE_DIR=$(mktemp -d) GLOO_SOCKET_IFNAME=lo timeout 150 torchrun --nproc-per-node=$N benchmarks/dist_decorator.py --out $OUT 2>&1 | grep -v Warn | tail -5 | tee -a $LOG
  e=$(t); echo "in-job N=$N process wall_s=$(python3 -c "print(round($e - $s, 2))")" | tee -a $LOG
done
timeout 330 python3 benchmarks/vs_triton_autotune.py --out $OUT --part gelu --repeats 3 --engines triton.autotune "tritune session" 2>&1 | grep -v Warn | tail -14 | tee -a $LOG
