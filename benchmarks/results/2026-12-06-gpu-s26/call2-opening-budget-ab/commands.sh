#!/bin/bash
# session 26, call 2: the working tree ("new": a transfer's opening raced on 60% of the budget per candidate, the
# switch interval at 0.5 ms while setup helpers run) against a85341d's src ("base", main), search_tune --only
# transfer, fresh and warm processes, 4 repeats each, base then new, each code with its own Triton cache directory;
# then the GPU tests with the new code.
source benchmarks/gpu_env.sh
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
NEW=$PWD/src; BASE=$PWD/.old/base/src
for who in base new; do
  src=$NEW; [ $who = base ] && src=$BASE
  export TRITON_CACHE_DIR=/tmp/tc2_$who
  echo "== search transfer $who ($src) $(date +%T)" | tee -a $LOG
  PYTHONPATH=$src:/tmp/site timeout 240 python3 benchmarks/search_tune.py --out /tmp/search2_$who --descriptors host --new-key-cache shared --new-key-process both --repeat 4 --only transfer > $OUT/search_$who.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "^6144|^new key" $OUT/search_$who.log | cut -c1-330 | tee -a $LOG
  (cd /tmp/search2_$who && gzip -c search_tune.json > $OUT/search_tune_$who.json.gz) 2>/dev/null
done
export TRITON_CACHE_DIR=/tmp/tc2_tests
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/tune tests/compat > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
