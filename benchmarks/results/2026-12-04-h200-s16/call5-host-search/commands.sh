#!/bin/bash
# session 16, call 5: GPU tests (with the host-descriptor workload's); search_tune.py --descriptors host (issue 16's
# rows on the kernel with host TensorDescriptors shaped per config by the workload's pre_hook)
source benchmarks/gpu_env.sh
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/compat tests/screen/test_targets.py tests/tune tests/incremental tests/store tests/bench -rs > $OUT/gputests.log 2>&1
tail -8 $OUT/gputests.log | tee -a $LOG
echo "== search host $(date +%T)" | tee -a $LOG
timeout 330 python3 benchmarks/search_tune.py --out /tmp/search --descriptors host --new-key-cache shared > $OUT/search.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -A8 "^== search vs exhaustive" $OUT/search.log | cut -c1-400 | tee -a $LOG
grep -E "^space|winner" $OUT/search.log | cut -c1-300 | head -12 | tee -a $LOG
cp -r /tmp/search $OUT/searchdir
cd $OUT && tar czf logs.tgz *.log searchdir && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz ! -name gputests.log -exec rm -rf {} +
ls -la $OUT
