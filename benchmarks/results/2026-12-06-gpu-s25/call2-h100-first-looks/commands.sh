#!/bin/bash
# Do a race's first looks read slow after an idle gap? benchmarks/first_looks.py, twice (two processes).
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
for r in 1 2; do
  echo "== first_looks run $r $(date +%T)" | tee -a $LOG
  timeout 200 python3 benchmarks/first_looks.py --gaps 0,0.3,1.5 --rounds 6 --out $OUT/first_looks_$r.json 2>&1 | tee -a $LOG
done
echo "== done $(date +%T)" | tee -a $LOG
