#!/usr/bin/env bash
# One device call (H100): the GPU side of --mode fast validated, timed, then checked by sanitizers.
#   run: bash bench/device_seed_kernel.sh [tests|bench|sanitize|all] [extra seed_kernel_bench.py args]
#   carry: .whl (wheels the device's python lacks) and .carry (uniprot20k.fasta.gz,
#   uniprot_queries500.fasta.gz, cudasw_queries.fasta, make_bench_db.py), as bench/device_run.sh.
# tests: the gpu tests of the seeded mode (candidates = CPU seeder = brute-force reference,
#   task-list scores = pyopal, fast search = CPU fast search) and of the exact engine, SWGPU_REQUIRE_GPU=1.
# bench: bench/seed_kernel_bench.py on bench200M x 500 queries (seed kernel per SPAN:XDROP:TRIGGER
#   point, candidate scoring, fast and exact search, recall), one JSON line in $OUT/seed_kernel.jsonl, printed.
# sanitize: compute-sanitizer memcheck and racecheck on the small reference test (60 s each at most).
# Expected: tests ~3 min, bench ~2 min (building bench200M ~40 s of it), sanitize <= 2 min.
set -uo pipefail
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  source bench/bytecode.sh  # bytecode as an installation has it
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SWGPU_SHARED=$PWD/.carry SWGPU_CACHE=$OUT/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  SWGPU_REQUIRE_GPU=1 python3 -m pytest -q -m gpu tests/test_gpu_seed.py tests/test_gpu_engine.py -p no:cacheprovider --durations=8 2>&1 | tail -40 || rc=1
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/seed_kernel_bench.py --data .carry --work /tmp/bench --out "$OUT/seed_kernel.jsonl" "$@" || rc=1
fi
if [[ $what == sanitize || $what == all ]]; then
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      SWGPU_REQUIRE_GPU=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
        python3 -m pytest -q -m gpu tests/test_gpu_seed.py -k "reference and default" -p no:cacheprovider > "$OUT/sanitizer_$tool.txt" 2>&1
      echo "compute-sanitizer $tool: rc $? (124: timed out; $(grep -cE '^=+ (Error|Race|Warning)' "$OUT/sanitizer_$tool.txt") reports, $OUT/sanitizer_$tool.txt)"
    done
  else
    echo "compute-sanitizer not found: memcheck/racecheck skipped"
  fi
fi
exit $rc
