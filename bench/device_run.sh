#!/usr/bin/env bash
# One device call: GPU tests, SASS check and the benchmark, results under $OUT.
#   run: bash bench/device_run.sh [tests|bench|all] [extra bench.py args]
# Expects wheels for the packages the device's python lacks under .whl/ and the shared
# data (uniprot20k.fasta.gz, cudasw_queries.fasta, uniprot_queries500.fasta.gz,
# make_bench_db.py) under .carry/ (both carried, both git-ignored).
set -uo pipefail
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
source bench/bytecode.sh  # bytecode as an installation has it
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SWGPU_SHARED=$PWD/.carry SWGPU_CACHE=$OUT/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  python3 -m pytest -q -m gpu tests/test_gpu_scores.py -p no:cacheprovider 2>&1 | tail -25 || rc=1
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/bench.py --data .carry --work /tmp/bench --out "$OUT/results.jsonl" "$@" || rc=1
fi
# SASS of the compiled scan kernels: DPX instructions present, spills absent. CuPy's cache
# file is a 40-byte hash followed by the cubin; the first cached file that holds sw_inter
# code is taken (other entries mention the name without holding it, e.g. PTX).
if command -v cuobjdump >/dev/null; then
  for cached in $(grep -l sw_inter ~/.cupy/kernel_cache/*.cubin 2>/dev/null); do
    cubin=/tmp/sw_scan.cubin; tail -c +41 "$cached" > $cubin
    cuobjdump -sass "$cubin" > "$OUT/sass.txt" 2>&1
    grep -q "Function : .*sw_inter" "$OUT/sass.txt" || continue
    echo "SASS: $(grep -c VIMNMX "$OUT/sass.txt") VIMNMX, $(grep -c VIADDMNMX "$OUT/sass.txt") VIADDMNMX, $(grep -cE 'STL|LDL' "$OUT/sass.txt") local-memory ops"
    cuobjdump -res-usage "$cubin" > "$OUT/resources.txt" 2>&1
    break
  done
fi
exit $rc
