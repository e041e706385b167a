#!/usr/bin/env bash
# One device call: the workflow against one `swgpu search` of the same work, bench200M x 500
# queries with alignments (BLAST's 12 columns, top 50), one GPU, `--resources gpu=1`.
#   run: bash bench/device_workflow.sh        (carry .whl, .whl_sm (Snakemake's wheels), .carry)
# Prints and writes $OUT/workflow_vs_search.json: makedb, the one search, and the workflow
# (its own makedb included, and without it: the workflow's benchmark files give each rule's time).
set -uo pipefail
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl_sm/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
printf '#!/bin/sh\nexec python3 -m snakemake "$@"\n' > "$B/snakemake"; printf '#!/bin/sh\nexec python3 -m swgpu_core "$@"\n' > "$B/swgpu"
chmod +x "$B/snakemake" "$B/swgpu"
W=/tmp/wf; mkdir -p "$W"; R=$PWD
[ -f "$W/bench200M.fasta.gz" ] || python3 .carry/tools/make_bench_db.py .carry/data/uniprot20k.fasta.gz "$W/bench200M.fasta.gz" --residues 200000000 --seed 7 > /dev/null || exit 1
zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
now() { echo "$EPOCHREALTIME"; }
rm -rf "$W/db" "$W/results"; t0=$(now); swgpu makedb "$W/bench200M.fasta.gz" "$W/db" --quiet || exit 1; t1=$(now)
swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --top 1 --out /dev/null --quiet  # warm-up
t2=$(now); swgpu search --db "$W/db" --query "$W/q500.fasta" --backend cuda --top 50 --outfmt "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore" --out "$W/search.tsv" 2> "$W/search.log" || exit 1; t3=$(now)
tail -2 "$W/search.log"
cat > "$W/config.yaml" <<YAML
databases:
  bench: {source: $W/bench200M.fasta.gz}
queries: $W/q500.fasta
query_batch_size: 500
search: {backend: cuda, threads: 4, top: 50}
plan: {enabled: false}
align: {enabled: true, formats: [tsv], threads: 4, outfmt: "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore"}
report: {enabled: false}
YAML
t4=$(now); (cd "$W" && snakemake -s "$R/workflow/Snakefile" --configfile "$W/config.yaml" --cores 8 --resources gpu=1 > "$W/wf.log" 2>&1) || { tail -30 "$W/wf.log"; exit 1; }; t5=$(now)
python3 - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$W" "$OUT/workflow_vs_search.json" <<'PY'
import csv, glob, json, os, sys
t = list(map(float, sys.argv[1:7])); w = sys.argv[7]
rules = {}
for f in glob.glob(f"{w}/results/bench/benchmarks/**/*.tsv", recursive=True):
    rows = list(csv.DictReader(open(f), delimiter="\t"))
    rules[os.path.relpath(f, f"{w}/results/bench/benchmarks")] = float(rows[0]["s"]) if rows else None
rec = {"makedb_s": t[1] - t[0], "search_with_alignments_s": t[3] - t[2], "workflow_s": t[5] - t[4], "workflow_rules_s": rules}
rec["workflow_without_makedb_s"] = rec["workflow_s"] - (rules.get("makedb.tsv") or 0)
rec["ratio_workflow_over_search"] = rec["workflow_s"] / rec["search_with_alignments_s"]
rec["ratio_without_makedb"] = rec["workflow_without_makedb_s"] / rec["search_with_alignments_s"]
print(json.dumps(rec, indent=1))
json.dump(rec, open(sys.argv[8], "w"), indent=1)
PY
cmp <(grep -v '^#' "$W/search.tsv" | sort) <(grep -v '^#' "$W/results/bench/alignments/batch-0000.tsv" | sort) && echo "alignments identical to the one search's table"
