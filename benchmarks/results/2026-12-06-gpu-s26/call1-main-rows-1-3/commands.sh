#!/bin/bash
# session 26, call 1: main (a85341d, the race's drift correction on by default) on the GPU for the first time:
# the whole search benchmark (rows 1-3 of issue #16: the exhaustive race and the default search of 4096^3 from an
# empty Triton cache, 3 keys, cuBLAS, a transfer pair), then the transfer 4+4 times (fresh and warm processes),
# then the GPU tests.
source benchmarks/gpu_env.sh
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
git log --oneline -1 2>/dev/null | tee -a $LOG
export TRITON_CACHE_DIR=/tmp/tc_full
echo "== search host (rows 1-3) $(date +%T)" | tee -a $LOG
timeout 300 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A12 "^== search vs exhaustive" $OUT/search.log | grep -vE "^   (transfer|cold):" | cut -c1-400 | tee -a $LOG
grep -E "^space|winner|^6144" $OUT/search.log | cut -c1-330 | head -16 | tee -a $LOG
(cd /tmp/search && gzip -c search_tune.json > $OUT/search_tune_full.json.gz) 2>/dev/null
export TRITON_CACHE_DIR=/tmp/tc_xfer
echo "== search transfer x4 fresh+warm $(date +%T)" | tee -a $LOG
timeout 250 python3 benchmarks/search_tune.py --out /tmp/search_x --descriptors host --new-key-cache shared --new-key-process both --repeat 4 --only transfer > $OUT/search_transfer.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -E "^6144|^new key" $OUT/search_transfer.log | cut -c1-330 | tee -a $LOG
(cd /tmp/search_x && gzip -c search_tune.json > $OUT/search_tune_transfer.json.gz) 2>/dev/null
export TRITON_CACHE_DIR=/tmp/tc_tests
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/tune tests/compat > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
