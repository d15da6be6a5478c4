#!/usr/bin/env bash
# The GPU runner: every GPU benchmark and the GPU tests, by named part, on a machine with a CUDA GPU.
#
#   bash benchmarks/gpu.sh PART [PART ...]          from the repository root
#
# Parts (benchmarks/RESULTS.md says what each measures and holds the latest figures):
#   tests       every GPU test of the suite (pytest -m gpu)
#   gelu        tuning time and winner quality against triton.autotune, GELU space   (vs_triton_autotune.py)
#   matmul      the same on the 216-config fp16 matmul space                          (vs_triton_autotune.py)
#   dispatch    microseconds per cached call against triton.autotune                  (dispatch.py)
#   short       short kernels under each measurement policy                           (short_kernels.py)
#   cublas      examples/matmul.py's kernel against cuBLAS, interleaved                (matmul_vs_cublas.py)
#   screen      the CPU-side screen against real launches                             (screen_vs_launch.py)
#   numerics    fresh tunings under numerics any and exact, distinct outputs, cost     (numerics.py)
#   search      search vs exhaustive on 1,672 configs, cuBLAS, a new key              (search_tune.py)
#   searchxfer  the new key alone, fresh and warm processes                           (search_tune.py)
#   serving     incremental mode on Zipf streams of 6,000 calls                       (serving.py)
#   servinglong the same stream 60,000 calls long                                     (serving.py)
#   libs        FlagGems, Liger-Kernel, fla and Triton's tutorial ops, both engines   (real_libraries.py)
#   widen       the same ops, tritune widening each library's own configs              (real_libraries.py --widen)
#   libtests    the libraries' own tests under both engines                           (libtests.py)
#   imports     importing FlagGems and fla under the switch against under Triton      (import_cost.py)
#   tutorials   Triton's tutorials 03 and 06, unchanged, under both engines           (tutorials_check.py)
#   dist        the multi-rank farm, 1 rank against 2 (needs 2 GPUs)                  (torchrun -m tritune tune)
#   baseline    serving and libs on an older tree in .base/ and on this one, in turn  (serving.py, real_libraries.py)
#               (.base/: git archive BASE src $(git ls-tree --name-only BASE benchmarks/ | grep '\.py$') |
#               tar x -C .base, then carry .base: every benchmark script of the older tree comes along, since its
#               scripts import each other)
#
# Each part writes under $RES/PART/ (default: a fresh temporary folder) and appends to $RES/run.log, which starts
# with the machine's facts (date, commit, cores, GPU, driver, power limit, torch, triton) and then each command with
# its exit status and wall time. Everything is packed into $OUT/results.tgz (default /tmp/out) after every part, so
# a run cut short still leaves what it finished. COMMIT=<sha> names the commit in run.log.
#
# What the parts need besides the repository, in ignored folders copied with the checkout (`bash benchmarks/fetch.sh`
# gathers them on a machine with a network): libs, widen and libtests need FlagGems 5.0.2, Liger-Kernel 0.8.5 and
# fla-core 0.6.0 wheels (and SQLAlchemy's, which FlagGems imports) in .whl/ (installed into /tmp/site); libtests needs
# the libraries' test files in .ref/libtests and their helpers' wheels in .whl/libtests; tutorials, and the tut_ ops
# of libs and widen, read Triton's tutorials 03-matrix-multiplication.py, 05-layer-norm.py and 06-fused-attention.py
# (3.6 release) from .ref/tutorials (without them those ops are reported as not run). Env: LIBS_BUDGET_S, LIBS_OPS (ops by name, or part of a name, in order), LIBS_COMPILE=1
# (also the ops inside torch.compile), LIBS_FRESH=1 (libs: also a fresh tritune process on the caches and store the
# tuning one wrote, its first calls and its cached calls beside the tuning process's), WIDEN_BUDGET_S, WIDEN_OPS,
# WIDEN_STEPS (widen: how many steps from each written config, 1 by default, or derived: the list and the space derived from each kernel), LIBS_RESUME / WIDEN_RESUME (an
# earlier call's results.json, e.g. unpacked from its raw data into .ref/ and carried: its finished ops are not run
# again and count in this call's summary, so a run longer than one call's limit adds up over calls), NUMERICS_OPS,
# NUMERICS_RUNS, NUMERICS_SHARED_CACHE=1, NUMERICS_RESUME (a folder of an earlier numerics call's any_N/exact_N.json,
# e.g. unpacked from its raw data into .ref/ and carried: its runs count with this call's), OP_SHARE (libs, widen: the
# most of the budget one op's cold run may take; 0.4 by
# default, more for fla's chunked GLA, which tunes for minutes under Triton), BASELINE_SERVING=0 (baseline: libs
# only), BASELINE_SERVING_ORDER (the trees' order for serving: "this base" by default, "base this" to swap), LIBTESTS_BUDGET_S, LIBTESTS_SUITES,
# IMPORTS_LIBS, IMPORTS_ROUNDS, SEARCHXFER_CACHE (both|shared|empty), SEARCHXFER_PROCESS (both|fresh|warm), SEARCHXFER_REPEAT, SERVINGLONG_CALLS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TRITUNE_GPU_TESTS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>/dev/null \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
RES=${RES:-$(mktemp -d /tmp/res.XXXXXX)}; OUT=${OUT:-/tmp/out}; mkdir -p "$RES" "$OUT"
LOG=$RES/run.log
# the tree that ran, checkable where git's HEAD is not the checkout's (a copied working tree): the same command on
# a checkout of the named commit prints the same digest
src_digest() { find src benchmarks -name '*.py' -type f | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-12; }
{ date -u; echo "commit ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)} (src and benchmarks sha1 $(src_digest))"; nproc
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } >> "$LOG" 2>&1
step() {  # step PART LIMIT_S CMD...: run one command of a part with its own empty Triton cache and store, log it
  local part=$1 limit=$2; shift 2
  mkdir -p "$RES/$part"
  echo "== $part: $* (limit ${limit}s) $(date -u +%T)" | tee -a "$LOG"
  local s; s=$(date +%s.%N)
  TRITON_CACHE_DIR=$(mktemp -d) TRITUNE_STORE=$(mktemp -d)/store.db timeout "$limit" "$@" \
    > "$RES/$part/$(basename "$1")_$(date +%s%N).log" 2>&1
  local rc=$?
  echo "   rc=$rc wall_s=$(python3 -c "import time; print(round(time.time() - $s, 1))")" | tee -a "$LOG"
}
pack() {  # everything under 4 MB (saved tensors stay behind)
  (cd "$RES" && find . -type f -size -4M ! -name '*.pt' -print0 | tar czf "$OUT/results.tgz.part" --null -T -) \
    && mv "$OUT/results.tgz.part" "$OUT/results.tgz" && cp "$LOG" "$OUT/run.log"
}
show() {  # show PART PATTERN: the matching lines of the part's logs, into run.log
  grep -h -A6 "$2" "$RES/$1"/*.log | tee -a "$LOG"
}
for part in "$@"; do
  pack
  case $part in
    tests) step tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests -rs
           tail -3 "$RES"/tests/*.log | tee -a "$LOG" ;;
    gelu) step gelu 300 python3 benchmarks/vs_triton_autotune.py --out "$RES/gelu" --part gelu --repeats 1 ;;
    matmul) step matmul 400 python3 benchmarks/vs_triton_autotune.py --out "$RES/matmul" --part matmul --repeats 3 ;;
    dispatch) step dispatch 120 python3 benchmarks/dispatch.py --out "$RES/dispatch"
              cat "$RES"/dispatch/*.log | tee -a "$LOG" ;;
    short) step short 330 python3 benchmarks/short_kernels.py --out "$RES/short" ;;
    cublas) step cublas 120 python3 benchmarks/matmul_vs_cublas.py --json "$RES/cublas/matmul_vs_cublas.json" ;;
    screen) step screen 400 python3 benchmarks/screen_vs_launch.py --out "$RES/screen/screen_vs_launch.json" ;;
    numerics) step numerics 560 python3 benchmarks/numerics.py --out "$RES/numerics" --budget-s 545 \
                --runs "${NUMERICS_RUNS:-5}" \
                ${NUMERICS_OPS:+--ops "$NUMERICS_OPS"} ${NUMERICS_SHARED_CACHE:+--shared-triton-cache} \
                ${NUMERICS_RESUME:+--resume "$NUMERICS_RESUME"}
              show numerics "^op \|exact/any" ;;
    search) step search 540 python3 benchmarks/search_tune.py --out "$RES/search" --new-key-cache shared
            show search "^== search vs exhaustive" ;;
    searchxfer) step searchxfer 240 python3 benchmarks/search_tune.py --out "$RES/searchxfer" --only transfer \
                  --new-key-cache "${SEARCHXFER_CACHE:-both}" --new-key-process "${SEARCHXFER_PROCESS:-both}" \
                  --repeat "${SEARCHXFER_REPEAT:-1}"
                show searchxfer "^== search vs exhaustive" ;;
    serving) step serving 300 python3 benchmarks/serving.py --out "$RES/serving"
             show serving "worst single call\|^host cost\|^comparison\|incremental minus" ;;
    servinglong) step servinglong 420 python3 benchmarks/serving.py --out "$RES/servinglong" \
                   --calls "${SERVINGLONG_CALLS:-60000}" --retime-rounds 9
                 show servinglong "worst single call\|^host cost\|incremental minus\|not promoted" ;;
    imports) step imports 300 python3 benchmarks/import_cost.py --out "$RES/imports" --libs "${IMPORTS_LIBS:-flag_gems,fla}" \
               --rounds "${IMPORTS_ROUNDS:-3}"
             show imports "^  \|^worst" ;;
    libs) b=${LIBS_BUDGET_S:-440}
          step libs $((b + 20)) python3 benchmarks/real_libraries.py --out "$RES/libs" --budget-s "$b" \
            ${LIBS_OPS:+--ops "$LIBS_OPS"} ${LIBS_COMPILE:+--compile} ${OP_SHARE:+--op-share "$OP_SHARE"} \
            ${LIBS_FRESH:+--fresh-dispatch} ${LIBS_RESUME:+--resume "$LIBS_RESUME"} ;;
    widen) b=${WIDEN_BUDGET_S:-480}
           # default: a trap (a kernel whose widened neighbour leaves a tail unwritten), the FlagGems, Liger, fla norm
           # and tutorial ops that reach an autotuner, then their other shapes (@odd, @small); fla's chunked attention ops
           # are slow to tune under Triton: WIDEN_OPS=fla_ for all of fla.
           # More than one call's worth: the 70% rule leaves the last ones out; split with WIDEN_OPS across calls.
           o=${WIDEN_OPS:-trap_whole_blocks,mm,addmm,bmm,baddbmm,mv,addmv,layer_norm,amax,max_dim,var_mean,vector_norm,std}
           o=${WIDEN_OPS:-$o,prod_dim,count_nonzero,triu,upsample,kron,liger_dyt,liger_dyt_bwd,liger_swiglu}
           o=${WIDEN_OPS:-$o,fla_rms_norm,fla_layer_norm,tut_matmul,tut_layer_norm,tut_attention,tut_attention_bwd,@odd,@small}
           # each key's tuning is printed as it ends (TRITON_PRINT_AUTOTUNING), into the engines' logs: a cold run
           # that runs long shows which key it was on
           step widen $((b + 40)) env TRITON_PRINT_AUTOTUNING=1 python3 benchmarks/real_libraries.py --out "$RES/widen" \
             --budget-s "$b" --widen "${WIDEN_STEPS:-1}" --ops "$o" ${LIBS_COMPILE:+--compile} \
             ${OP_SHARE:+--op-share "$OP_SHARE"} ${WIDEN_RESUME:+--resume "$WIDEN_RESUME"}
           show widen "^widened\|^cold total" ;;
    libtests) if ls .whl/libtests/*.whl >/dev/null 2>&1; then  # Liger's test helpers import transformers
                python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site-tests \
                  .whl/libtests/*.whl 2>/dev/null || echo "libtests: installing .whl/libtests failed" | tee -a "$LOG"
              fi
              b=${LIBTESTS_BUDGET_S:-225}
              PYTHONPATH=$PYTHONPATH:/tmp/site-tests step libtests $((b + 25)) python3 benchmarks/libtests.py \
                --ref .ref/libtests --out "$RES/libtests" --budget-s "$b" --suites "${LIBTESTS_SUITES:-}"
              grep -h "^total\|differs\|NOT RUN" "$RES"/libtests/*.log | tee -a "$LOG" ;;
    tutorials) step tutorials 240 python3 benchmarks/tutorials_check.py .ref/tutorials --out "$RES/tutorials" ;;
    baseline) if [ ! -d .base/src ]; then
                echo "baseline: no .base/src; see this file's header" | tee -a "$LOG"; continue
              fi
              # the same commands on both trees, each with an empty Triton cache and store; --ops must select the
              # same ops in both (older trees match --ops by substring)
              b=${LIBS_BUDGET_S:-160}
              o=${LIBS_OPS:-mm,addmm,bmm,baddbmm,mv,addmv,layer_norm,amax,var_mean,vector_norm,std,upsample_nearest2d}
              o=${LIBS_OPS:-$o,kron,liger_dyt,liger_dyt_bwd}
              base_path=${PYTHONPATH/#$PWD\/src/$PWD/.base/src}
              for t in ${BASELINE_SERVING_ORDER:-this base}; do
                [ "${BASELINE_SERVING:-1}" = 0 ] && break
                [ $t = base ] && d=.base pp=$base_path || d=. pp=$PYTHONPATH
                step baseline 130 env PYTHONPATH="$pp" python3 $d/benchmarks/serving.py --out "$RES/baseline/$t-serving"
              done
              for t in base this; do
                [ $t = base ] && d=.base pp=$base_path || d=. pp=$PYTHONPATH
                step baseline $((b + 25)) env PYTHONPATH="$pp" python3 $d/benchmarks/real_libraries.py \
                  --out "$RES/baseline/$t-libs" --budget-s "$b" --ops "$o"
              done
              show baseline "worst single call\|^host cost" ;;
    dist) keys="--key M=4096,N=4096,K=4096 --key M=2048,N=2048,K=2048 --key M=8192,N=8192,K=8192"
          for n in 1 2; do  # each from an empty Triton cache; compare the walls in run.log and the winners
            GLOO_SOCKET_IFNAME=lo step dist 300 torchrun --nproc-per-node=$n -m tritune tune examples/matmul.py \
              --workload matmul $keys --quiet --json "$RES/dist/farm_n$n.json" --store "$RES/dist/store_n$n.sqlite"
          done ;;
    *) echo "unknown part $part" | tee -a "$LOG" ;;
  esac
done
pack
