#!/bin/bash
# session 22, call A (main at 0feaf2c): the stream judge with HeldSpans (cf8691b, never run on a GPU): first a
# 20-second HeldSpans check on a plain torch op, then RMSNorm --repeat 2 --interleave 500 in one process.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
echo "== HeldSpans check $(date +%T)" | tee -a $LOG
timeout 30 python3 - <<'PY' 2>&1 | tee -a $LOG
import sys, time; sys.path.insert(0, "benchmarks")
import torch
from serving import HeldSpans
x = torch.randn(1 << 16, device="cuda"); y = torch.empty_like(x)
for n in (1 << 10, 1 << 16, 1 << 22):
    xs = torch.randn(n, device="cuda"); ys = torch.empty_like(xs)
    h = HeldSpans(); t = time.perf_counter()
    ms = h.run([lambda: torch.mul(xs, 2.0, out=ys)] * 512)
    ms.sort()
    print(f"n={n}: spans p10/p50/p90 {ms[51]*1e3:.1f}/{ms[256]*1e3:.1f}/{ms[460]*1e3:.1f} us, {h.stats()}, cycles/ms {h._cycles_per_ms:.0f}, wall {time.perf_counter()-t:.3f} s")
PY
run() {  # name, timeout, args...
  local name=$1 lim=$2; shift 2
  echo "== $name: $* $(date +%T)" | tee -a $LOG
  TRITUNE_STORE=$(mktemp -d)/s.db timeout $lim python3 benchmarks/serving.py --out /tmp/srv_$name --engines tritune,untuned,incremental,pretuned --calls 60000 --retime-rounds 5 "$@" > $OUT/$name.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "host cost|repetition|median over|worst single|converged to <= 1.02x the pretuned|primary judge|stream judge:|held|extra GPU|^untuned|^incremental|^pretuned" $OUT/$name.log | cut -c1-700 | tee -a $LOG
  cp /tmp/srv_$name/serving.json /tmp/$name.json 2>/dev/null && gzip -f /tmp/$name.json && cp /tmp/$name.json.gz $OUT/
}
run rms_a 150 --kernels rmsnorm --repeat 2 --interleave 500 --stream-judge-s 45
echo "== done $(date +%T)" | tee -a $LOG
