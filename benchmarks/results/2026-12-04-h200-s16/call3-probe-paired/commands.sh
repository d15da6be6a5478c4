#!/bin/bash
# session 16, call 3: matmul_probe.py --paired (issue 16: tutorial 09's host-descriptor kernel and the repo's, each
# against cuBLAS in adjacent pairs); timer_agreement.py on the exhaustive winner (EPILOGUE_SUBTILE=1, no maxnreg)
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=/tmp/tc
echo "== probe $(date +%T)" | tee -a $LOG
timeout 300 python3 benchmarks/matmul_probe.py --out $OUT/probe --only host_kn:128x256x64,G16,w8,s3 --only repo:128x256x64,G16,w8,s3 --rounds 3 --min-rounds 2 --paired 400 > $OUT/probe.log 2>&1
echo "   rc=$? $(date +%T)" | tee -a $LOG
grep -E "^paired|^host|^repo|^cublas" $OUT/probe.log | cut -c1-200 | tee -a $LOG
echo "== timer_agreement exhaustive winner $(date +%T)" | tee -a $LOG
timeout 150 python3 benchmarks/timer_agreement.py --out $OUT/ta --rounds 3 --pairs 600 --config BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,EPILOGUE_SUBTILE=1,GROUP_M=16,WARP_SPECIALIZE=0,num_warps=8,num_stages=3 > $OUT/ta.log 2>&1; echo "   rc=$?" | tee -a $LOG; tail -3 $OUT/ta.log | cut -c1-300 | tee -a $LOG
cd $OUT && tar czf logs.tgz *.log probe ta && find . -mindepth 1 -maxdepth 1 ! -name run.log ! -name logs.tgz -exec rm -rf {} +
ls -la $OUT
