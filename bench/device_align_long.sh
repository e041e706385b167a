#!/usr/bin/env bash
# One device call for align-long: GPU tests, then the GCUPS benchmark; results under $OUT.
#   run: bash bench/device_align_long.sh [tests|bench|all] [extra bench_align_long.py args]
# Carry .whl (wheels the device python lacks).
set -uo pipefail
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
source bench/bytecode.sh  # bytecode as an installation has it
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  timeout 150 python3 -m pytest -q -m gpu tests/test_gpu_align_long.py -p no:cacheprovider -x 2>&1 | tail -25 || rc=1
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/bench_align_long.py --out "$OUT/results.jsonl" "$@" || rc=1
fi
exit $rc
