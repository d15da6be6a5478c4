#!/bin/bash
# session 23, call 1 (main at 833e6f2): search_tune --only transfer (fresh and warm processes, 2 repeats; the tie fix
# ca7149f never ran on a GPU) with the transfer once more under cProfile; the GPU tests.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
echo "== search transfer $(date +%T)" | tee -a $LOG
SEARCH_PROFILE=1 timeout 170 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared --new-key-process both --repeat 2 --only transfer > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A40 "^== search vs exhaustive" $OUT/search.log | grep -E "^6144|^new key|^total" | cut -c1-500 | tee -a $LOG
cp /tmp/search/transfer_prof-profile.txt $OUT/ 2>/dev/null
(cd /tmp/search && gzip -c search_tune.json > $OUT/search_tune.json.gz) 2>/dev/null
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
