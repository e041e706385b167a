#!/usr/bin/env bash
# One device call (H100): `swgpu search --mode fast` against `--mode exact`, MMseqs2 and BLAST on
# bench200M x 500 queries: wall and scan time of each, recall of the exact mode's hits at E <= 1e-5
# and E <= 1e-3 (top 500 per query; bench/seed_recall.py compare).
#   run: bash bench/device_seed.sh      (carry .whl, .carry, .debs)
# .debs/ holds Debian bookworm's ncbi-blast+ and the libraries it and MMseqs2 need, and MMseqs2's
# AVX2 build repacked alone (not in the repository: .debs/ is git-ignored); unpacked with dpkg -x into
# /tmp/peers. Prints one JSON and writes $OUT/seed.json (and the logs, $OUT/seed_logs.txt).
# Budget ~500 s: bench DB ~20 s, makedb ~20 s, exact ~25 s, peers' builds ~100 s, MMseqs2 and
# BLAST get what is left (BLAST searches an evenly spread subset of the queries under a timeout).
# A smoke test without a GPU: SEED_BACKEND=cpu SEED_RESIDUES=2000000 SEED_QUERIES=20 SEED_THREADS=2 bash bench/device_seed.sh
set -uo pipefail
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
START=$EPOCHREALTIME
BACKEND=${SEED_BACKEND:-cuda} RESIDUES=${SEED_RESIDUES:-200000000} NQ=${SEED_QUERIES:-500} T=${SEED_THREADS:-16}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  source bench/bytecode.sh  # bytecode as an installation has it
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
W=/tmp/seed; mkdir -p "$W"; LOG=$OUT/seed_logs.txt; : > "$LOG"
now() { echo "$EPOCHREALTIME"; }
since() { python3 -c "print(round($EPOCHREALTIME - $1, 2))"; }
left() { python3 -c "print(int(${1} - ($EPOCHREALTIME - $START)))"; }  # seconds left of a total of $1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); echo "GPU: ${GPU:-none}" | tee -a "$LOG"

t=$(now); python3 .carry/tools/make_bench_db.py .carry/data/uniprot20k.fasta.gz "$W/bench200M.fasta.gz" --residues "$RESIDUES" --seed 7 2>> "$LOG" || exit 1
bench_db_s=$(since "$t")
t=$(now); python3 -m swgpu_core makedb "$W/bench200M.fasta.gz" "$W/db" --quiet || exit 1; makedb_s=$(since "$t")
# the queries renamed q0001.. so that every tool reports the same ids; BLAST's subset: every 10th
zcat .carry/data/uniprot_queries500.fasta.gz | awk -v max="$NQ" '/^>/{n++; sub(/^>/, sprintf(">q%04d ", n))} n <= max' > "$W/q.fasta"
awk '/^>/{n++} n % 10 == 1' "$W/q.fasta" > "$W/q_blast.fasta"
FMT="6 qseqid sseqid evalue score"

search() {  # mode, table: wall seconds, and the command's summary lines in the log
  local t0; t0=$(now)
  python3 -m swgpu_core search --db "$W/db" --query "$W/q.fasta" --backend "$BACKEND" --mode "$1" --top 500 --outfmt "$FMT" --out "$2" 2> "$W/$1.err"
  local rc=$?; echo "$(since "$t0") $rc"; grep -v '^\s*$' "$W/$1.err" | tail -3 >> "$LOG"
}
# warm-up: kernels compiled and cached (both modes), so the timed runs measure searches
for m in exact fast; do
  python3 -m swgpu_core search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend "$BACKEND" --mode $m --top 1 --out /dev/null --quiet 2>> "$LOG"
done
read -r exact_wall exact_rc <<< "$(search exact "$W/exact.tsv")"
read -r fast_wall fast_rc <<< "$(search fast "$W/fast.tsv")"

# peers from .debs (dpkg -x, no install)
P=/tmp/peers; rm -rf "$P"; mkdir -p "$P"
for d in .debs/*.deb; do dpkg -x "$d" "$P" || echo "dpkg -x $d failed" | tee -a "$LOG"; done
export LD_LIBRARY_PATH=$P/usr/lib/ncbi-blast+:$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldd "$P/usr/bin/blastp" "$P/usr/bin/mmseqs-avx2" 2>&1 | grep "not found" | tee -a "$LOG"
grep -q avx2 /proc/cpuinfo || echo "no AVX2: MMseqs2's AVX2 build cannot run" | tee -a "$LOG"
zcat "$W/bench200M.fasta.gz" > "$W/bench200M.fasta"
MM=$P/usr/bin/mmseqs-avx2
t=$(now); $MM createdb "$W/bench200M.fasta" "$W/mmdb" -v 1 >> "$LOG" 2>&1; mm_createdb_s=$(since "$t")
t=$(now); timeout "$(left 330)" $MM easy-search "$W/q.fasta" "$W/mmdb" "$W/mmseqs.tsv" "$W/mmtmp" --threads $T -e 10 --max-seqs 500 \
  --format-output query,target,evalue,raw -v 1 >> "$LOG" 2>&1; mm_rc=$?; mm_s=$(since "$t")
t=$(now); "$P/usr/bin/makeblastdb" -dbtype prot -in "$W/bench200M.fasta" -out "$W/blastdb" >> "$LOG" 2>&1; makeblastdb_s=$(since "$t")
blast_budget=$(left 540); [ "$blast_budget" -gt 20 ] || blast_budget=20
t=$(now); timeout "$blast_budget" "$P/usr/bin/blastp" -query "$W/q_blast.fasta" -db "$W/blastdb" -num_threads $T -max_target_seqs 500 \
  -outfmt "$FMT" -out "$W/blastp.tsv" >> "$LOG" 2>&1; blast_rc=$?; blast_s=$(since "$t")
# queries BLAST finished: all, or (cut off by its timeout) those before the last one in its table
python3 - "$W/blastp.tsv" "$W/q_blast.fasta" "$W/q_blast_done.fasta" "$blast_rc" <<'PY'
import os, sys
table, fasta, out, rc = sys.argv[1:5]
ids = [line[1:].split()[0] for line in open(fasta) if line.startswith(">")]
last = None
for line in open(table) if os.path.exists(table) else []:
    last = line.split("\t")[0]
done = set(ids if rc == "0" else (ids[: ids.index(last)] if last in ids else []))
keep, text = False, []
for line in open(fasta):
    if line.startswith(">"):
        keep = line[1:].split()[0] in done
    if keep:
        text.append(line)
open(out, "w").write("".join(text))
PY
blast_queries=$(grep -c '^>' "$W/q_blast_done.fasta")

python3 bench/seed_recall.py compare --exact "$W/exact.tsv" --top 500 --json "$W/recall.json" \
  --table fast="$W/fast.tsv" mmseqs2="$W/mmseqs.tsv" blastp="$W/blastp.tsv@$W/q_blast_done.fasta" >> "$LOG" 2>&1
python3 - "$W" "$OUT/seed.json" <<PY
import json, re, sys
w, out = sys.argv[1:3]
def summary(mode):
    text = open(f"{w}/{mode}.err").read()
    m = re.search(r"in ([0-9.]+) s, ([0-9.]+) GCUPS", text)
    f = re.search(r"fast mode: ([0-9,]+) candidates \(([0-9.,]+) per query, ([0-9.]+)% of the pairs\) found in ([0-9.]+) s", text)
    row = {"scan_s": float(m.group(1)), "gcups": float(m.group(2))} if m else {"error": text.strip().splitlines()[-1:] }
    if f:
        row.update(candidates=int(f.group(1).replace(",", "")), candidates_per_query=float(f.group(2).replace(",", "")),
                   candidate_pairs_percent=float(f.group(3)), seed_s=float(f.group(4)))
    return row
try:
    recall = json.load(open(f"{w}/recall.json"))
except (OSError, ValueError):
    recall = {}
rec = {
    "gpu": "${GPU:-none}", "backend": "$BACKEND", "database": "make_bench_db $RESIDUES --seed 7", "queries": $NQ, "top": 500,
    "bench_db_s": $bench_db_s, "makedb_s": $makedb_s,
    "exact": {"wall_s": $exact_wall, "rc": $exact_rc, **summary("exact"), **recall.get("exact", {})},
    "fast": {"wall_s": $fast_wall, "rc": $fast_rc, **summary("fast"), **recall.get("fast", {})},
    "mmseqs2": {"threads": $T, "createdb_s": $mm_createdb_s, "search_s": $mm_s, "rc": $mm_rc, **recall.get("mmseqs2", {}),
                "command": "mmseqs easy-search q.fasta mmdb out tmp --threads $T -e 10 --max-seqs 500"},
    "blastp": {"threads": $T, "makeblastdb_s": $makeblastdb_s, "search_s": $blast_s, "rc": $blast_rc, "queries_done": $blast_queries,
               "queries_asked": $(grep -c '^>' "$W/q_blast.fasta"), "timeout_s": $blast_budget, **recall.get("blastp", {}),
               "command": "blastp -num_threads $T -max_target_seqs 500 (every 10th query)"},
}
if "scan_s" in rec["fast"] and "scan_s" in rec["exact"]:
    rec["speedup_scan"] = round(rec["exact"]["scan_s"] / rec["fast"]["scan_s"], 2)
rec["speedup_wall"] = round(rec["exact"]["wall_s"] / rec["fast"]["wall_s"], 2) if rec["fast"]["rc"] == 0 else None
if rec["blastp"]["queries_done"]:
    rec["blastp"]["search_s_per_500_queries"] = round(rec["blastp"]["search_s"] * 500 / rec["blastp"]["queries_done"], 1)
print(json.dumps(rec, indent=1))
json.dump(rec, open(out, "w"), indent=1)
PY
echo "total $(since "$START") s"
