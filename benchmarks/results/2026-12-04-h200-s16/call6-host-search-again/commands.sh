#!/bin/bash
# session 16, call 6: search_tune.py --descriptors host again, a second run of the same rows (3e1bc5f: the two
# workloads built by one function)
source benchmarks/gpu_env.sh
echo "== search host $(date +%T)" | tee -a $LOG
timeout 330 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-400 | tee -a $LOG
grep -E "^space|winner" $OUT/search.log | cut -c1-300 | head -12 | tee -a $LOG
cp -r /tmp/search $OUT/searchdir
cd $OUT && tar czf logs.tgz *.log searchdir && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz -exec rm -rf {} +
ls -la $OUT
