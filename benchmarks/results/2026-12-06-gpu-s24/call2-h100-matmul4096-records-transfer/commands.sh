#!/bin/bash
# session 24, call 2 (H200 wanted): matmul_h200_4096.json (run 5, 2026-11-29, an older timer: launch_pad_us 93.7, no
# measure field) re-recorded three times in three processes with today's timer (cold, the default), to see whether its
# needle (best BLOCK_K=64/3 stages 5% ahead of every one-axis move; 0.1-0.7% in the other matmul recordings) is real;
# then search_tune --only transfer, 4 fresh pairs (how often the opening confirms).
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
for i in 1 2 3; do
  echo "== record matmul 4096 #$i $(date +%T)" | tee -a $LOG
  timeout 170 python3 -m tritune tune examples/matmul.py --workload matmul --key M=4096,N=4096,K=4096 --exhaustive --no-store --record $OUT/matmul_4096_r$i.json --quiet > /tmp/record_$i.log 2>&1; rc=$?; cat /tmp/record_$i.log >> $OUT/record.log
  echo "   rc=$rc $(date +%T)" | tee -a $LOG
  tail -3 /tmp/record_$i.log | cut -c1-300 | tee -a $LOG
done
python3 - <<'PY' 2>&1 | tee -a $LOG
import json, os
out = os.environ["OUT"]
runs = [json.load(open(f"{out}/matmul_4096_r{i}.json")) for i in (1, 2, 3) if os.path.exists(f"{out}/matmul_4096_r{i}.json")]
def key(r): c = r["config"]; return (tuple(sorted(c["kwargs"].items())), c["num_warps"], c["num_stages"])
tabs = [{key(r): r.get("time_ms") for r in d["results"] if r.get("time_ms")} for d in runs]
best = min(tabs[0], key=tabs[0].get)
for k in sorted(tabs[0], key=tabs[0].get)[:12]:
    print(k, " ".join(f"{t.get(k, float('nan')) / min(t.values()):.3f}" for t in tabs))
PY
echo "== search transfer (main 5f0032a) $(date +%T)" | tee -a $LOG
timeout 200 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --new-key-process fresh --repeat 4 --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -E "^6144|^new key" $OUT/search.log | cut -c1-330 | tee -a $LOG
(cd /tmp/search && gzip -c search_tune.json > $OUT/search_tune.json.gz) 2>/dev/null
echo "== done $(date +%T)" | tee -a $LOG
