#!/bin/bash
# session 24, call 4: main with the surrogate's tile_per_warp on by default: search_tune --only transfer (its 3-key
# search and the new key's cold search use the default surrogate), 2 fresh pairs; then the GPU tests.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
echo "== search transfer $(date +%T)" | tee -a $LOG
timeout 150 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --new-key-process fresh --repeat 2 --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -E "^6144|^new key" $OUT/search.log | cut -c1-330 | tee -a $LOG
grep -E "^   [{]'M'" $OUT/search.log | head -12 | cut -c1-300 | tee -a $LOG
(cd /tmp/search && gzip -c search_tune.json > $OUT/search_tune.json.gz) 2>/dev/null
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/tune tests/compat > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
