#!/bin/bash
# session 24, call 5: the whole search benchmark with the new default surrogate (tile_per_warp, a176d71): rows 1-2 of
# issue #16 (3 keys searched against the exhaustive race from an empty Triton cache, the winner against the
# exhaustive best and cuBLAS) and a transfer pair, as session 16 call 6 ran it.
source benchmarks/gpu_env.sh
echo "== search host $(date +%T)" | tee -a $LOG
timeout 300 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A12 "^== search vs exhaustive" $OUT/search.log | grep -vE "^   (transfer|cold):" | cut -c1-400 | tee -a $LOG
grep -E "^space|winner" $OUT/search.log | cut -c1-300 | head -12 | tee -a $LOG
(cd /tmp/search && gzip -c search_tune.json > $OUT/search_tune.json.gz) 2>/dev/null
echo "== done $(date +%T)" | tee -a $LOG
