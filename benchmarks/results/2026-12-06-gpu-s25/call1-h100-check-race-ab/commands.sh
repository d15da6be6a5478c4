#!/bin/bash
# working tree (the check race after an unconfirmed transfer opening; no final race after a one-batch search)
# vs 4e8ac7f's src (.old/base/src): search_tune --only transfer, fresh processes, 4 repeats each, new then base;
# then the GPU tests.
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
python3 -c "import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())" 2>&1 | tee -a $LOG
NEW=$PWD/src; BASE=$PWD/.old/base/src
for who in new base; do
  src=$NEW; [ $who = base ] && src=$BASE
  echo "== search transfer $who ($src) $(date +%T)" | tee -a $LOG
  PYTHONPATH=$src:/tmp/site timeout 200 python3 benchmarks/search_tune.py --out /tmp/search_$who --descriptors host --new-key-cache shared --new-key-process fresh --repeat 4 --only transfer > $OUT/search_$who.log 2>&1
  echo "   rc=$? $(date +%T)" | tee -a $LOG
  grep -E "^6144|^new key" $OUT/search_$who.log | cut -c1-330 | tee -a $LOG
  (cd /tmp/search_$who && gzip -c search_tune.json > $OUT/search_tune_$who.json.gz) 2>/dev/null
done
echo "== gpu tests $(date +%T)" | tee -a $LOG
TRITUNE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/tune tests/compat > $OUT/gputests.log 2>&1
tail -3 $OUT/gputests.log | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
