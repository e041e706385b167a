#!/usr/bin/env bash
# One device call for the GPU traceback: GPU tests, then the pairs benchmark; results under $OUT.
#   run: bash bench/device_traceback.sh [tests|bench|all]
# Expects the wheels the device's python lacks under .whl/ and uniprot20k.fasta.gz etc.
# under .carry/ (both carried, both git-ignored), as bench/device_run.sh does.
set -uo pipefail
what=${1:-all}
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
source bench/bytecode.sh  # bytecode as an installation has it
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SWGPU_SHARED=$PWD/.carry
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  timeout 170 python3 -m pytest -q -m gpu $(ls tests/test_gpu_traceback.py tests/test_pairs.py 2>/dev/null) -p no:cacheprovider 2>&1 | tail -40 || rc=1
fi
if [[ $what == bench || $what == all ]]; then
  bench() { timeout 90 python3 bench/bench_pairs.py --data .carry --out "$OUT/results.jsonl" "$@" 2>&1 | tail -40 || rc=1; }
  bench --pairs 500000 --length 512 --check 1000 --profile
  bench --pairs 200000 --length 500
  bench --pairs 100000 --length 512 --related --check 300
fi
exit $rc
