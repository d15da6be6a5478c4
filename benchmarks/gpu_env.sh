# Sourced by benchmarks/gpu_run*.sh on the device machine: tritune from the source tree, the carried
# wheels, the run log with the machine's facts, and two timing helpers (t: now; el A B: B - A in s).
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=$PYTHONPATH:/tmp/site
LOG=$OUT/run.log
t() { date +%s.%N; }
el() { python3 -c "print(round($2 - $1, 2))"; }
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader; } 2>&1 | tee $LOG
