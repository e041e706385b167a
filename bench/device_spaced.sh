#!/usr/bin/env bash
# Issue 15 probe on one GPU: bench/spaced_seed_probe.py on 20 M residues x 20 queries (pairs
# saved, to compare with the CPU reference) and on bench200M x 500 with the exact mode's recall.
#   run: bash bench/device_spaced.sh [ARGS for the bench200M run...]
# Expects .whl/ and .carry/ (with .carry/sp/db20.fasta.gz and q100.fasta) carried.
set -uo pipefail
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
W=/tmp/spaced; mkdir -p "$W"
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f "$W/b200/manifest.json" ] || {
  python3 .carry/tools/make_bench_db.py .carry/data/uniprot20k.fasta.gz "$W/b200.fasta.gz" --residues 200000000 --seed 7 > /dev/null
  python3 -m swgpu_core makedb "$W/b200.fasta.gz" "$W/b200" --quiet; }
[ -f "$W/db20/manifest.json" ] || python3 -m swgpu_core makedb .carry/sp/db20.fasta.gz "$W/db20" --quiet
zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
python3 bench/spaced_seed_probe.py gpu "$W/db20" .carry/sp/q100.fasta --queries-n 20 --out "$OUT/gpu20.npy" 2>&1 | tee "$OUT/probe20.log"
python3 bench/spaced_seed_probe.py gpu "$W/b200" "$W/q500.fasta" "$@" 2>&1 | tee "$OUT/probe200.log"
