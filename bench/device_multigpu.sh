#!/usr/bin/env bash
# One device call on a machine with two or more GPUs (issue 16): how search, the workflow's
# GPU slots and align-long scale from one GPU to all of them. Results under $OUT.
#   run: bash bench/device_multigpu.sh [tests] [fast] [fastdefault] [abfast] [jobstart] [concphases] [probe] [phases] [envphases] [order] [search] [searchvar] [ctxprobe] [release] [envab] [exitab] [conns] [abworkflow] [abwall] [concstart] [plan] [absavehits] [cuinit] [visible] [abvisible] [split] [smallexact] [workflow] [wfprofile] [long] [longq] [longdefault] [longphases] [teardown] [search_primed]   (default: tests search workflow long)
#   WF_SLURM=1: SLURM's executor plugin installed too (extra `slurm`; every Snakemake start imports it)
#   WF_TRACE=1 (workflow): each search job traced by bench/phase_times.py on the run's time line ($OUT/wf_trace.jsonl)
#   carry: .whl (wheels), .whl_sm (Snakemake's wheels, for `workflow`; both from bench/fetch_wheels.sh), .carry (a copy of shared/)
# Every step runs on 1, 2, 4 and 8 GPUs as far as the machine has them (and on all of them).
# 1. search: `swgpu search --devices 0`, `0,1`, ... on bench200M x 500 queries (scan GCUPS as
#    the command reports it, process wall), hit tables compared;
# 2. workflow: `snakemake --cores 16 --resources gpu=G` for each count G on the same (4 query
#    batches, search and alignments per batch), nvidia-smi sampled every 200 ms, which device
#    each GPU job got (its gpu-run line), the jobs' spans from Snakemake's output stamped to
#    the millisecond, and the outputs of the runs compared;
# 3. long: `swgpu align-long --devices 0`, `0,1`, ..., a 10^4 query against a 10^8 target
#    (random DNA with a planted, mutated copy of the query), end points compared.
# Each prints and writes one JSON record ($OUT/multigpu_*.json).
set -uo pipefail
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
# Snakemake's wheels as the extra `workflow` has them: without SLURM's executor plugin (extra `slurm`), which every
# Snakemake start imports, unless WF_SLURM=1
SM_WHEELS=(); [ -d .whl_sm ] && for w in .whl_sm/*.whl; do
  case $w in *snakemake_executor_plugin_slurm*) [ -n "${WF_SLURM:-}" ] || continue ;; esac; SM_WHEELS+=("$w"); done
[ -n "${WF_SLURM:-}" ] || rm -rf /tmp/site/snakemake_executor_plugin_slurm*
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  "${SM_WHEELS[@]}" || exit 1
source bench/bytecode.sh  # bytecode as an installation has it
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SWGPU_SHARED=$PWD/.carry SWGPU_REQUIRE_GPU=1
export SWGPU_COMMIT=${SWGPU_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
B=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
printf '#!/bin/sh\nexec python3 -m snakemake "$@"\n' > "$B/snakemake"; printf '#!/bin/sh\nexec python3 -m swgpu_core "$@"\n' > "$B/swgpu"
chmod +x "$B/snakemake" "$B/swgpu"
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpus.txt"
NG=$(nvidia-smi -L | grep -c '^GPU ')
ALL=$(seq -s, 0 $((NG - 1)))
SETS=(); for k in 1 2 4 8; do [ "$k" -le "$NG" ] && SETS+=("$(seq -s, 0 $((k - 1)))"); done  # the GPU counts measured
[ "${SETS[-1]}" = "$ALL" ] || SETS+=("$ALL")
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
W=/tmp/mg; mkdir -p "$W"; R=$PWD
HOLDER='held = ctypes.CDLL|swgpu_core gpu-hold'  # a driver holder's command line (pgrep -f)
now() { echo "$EPOCHREALTIME"; }
stamped() {  # stamped T0: each line of stdin with the seconds since T0 (a `now`) in front, to the millisecond
  python3 -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print(f"{time.time() - t0:8.3f} {line}", end="", flush=True)' "$1"
}
warm_kernels() {  # untimed: the kernels' first build (NVRTC, then CuPy's disk cache) on every GPU for a search of
  # uniprot20k, align-long and, with "fast", a fast search of bench200M x 500
  swgpu search --db "$W/u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
  swgpu align-long --query "$W/long_q.fa" --target "$W/long_t.fa" --alphabet dna --backend cuda --format tsv --out /dev/null 2> /dev/null
  [ "${1:-}" != fast ] || swgpu search --db "$W/db" --query "$W/q500.fasta" --backend cuda --mode fast --devices "$ALL" --top 500 \
    --out /dev/null --quiet
}
record() {  # record NAME JSON: print, keep under $OUT, add machine and commit
  python3 - "$1" "$2" "$OUT" "$SWGPU_COMMIT" "$GPU_NAME" "$NG" <<'PY'
import datetime, json, os, sys
name, rec, out, commit, gpu, ng = sys.argv[1], json.loads(sys.argv[2]), *sys.argv[3:]
rec = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit, "gpu": gpu,
       "gpus": int(ng), "kind": f"multigpu-{name}", **rec}
if name.startswith("workflow") or name == "abworkflow":  # whether Snakemake's starts imported SLURM's plugin
    rec["slurm_plugin"] = os.path.isdir("/tmp/site/snakemake_executor_plugin_slurm")
print(json.dumps(rec))
open(f"{out}/multigpu.jsonl", "a").write(json.dumps(rec) + "\n")
PY
}
bench_db() {
  [ -f "$W/bench200M.fasta.gz" ] || python3 .carry/tools/make_bench_db.py .carry/data/uniprot20k.fasta.gz "$W/bench200M.fasta.gz" \
    --residues 200000000 --seed 7 > /dev/null || exit 1
  [ -f "$W/db/manifest.json" ] || swgpu makedb "$W/bench200M.fasta.gz" "$W/db" --quiet || exit 1
  [ -f "$W/q500.fasta" ] || zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
}
u20k_db() {  # uniprot20k's database under $W/u20k, built once
  [ -f "$W/u20k/manifest.json" ] && return
  zcat .carry/data/uniprot20k.fasta.gz > "$W/u20k.fasta"
  swgpu makedb "$W/u20k.fasta" "$W/u20k" --quiet || exit 1
}
query_copies() {  # query_copies K: the path of the 500 queries K times over (each copy's ids made unique), K times the work
  local k=${1:-1} q=$W/q500.fasta
  if [ "$k" -gt 1 ]; then
    q=$W/q500x$k.fasta
    [ -f "$q" ] || for c in $(seq "$k"); do sed "s/^>\([^ ]*\)/>\1_copy$c/" "$W/q500.fasta"; done > "$q"
  fi
  echo "$q"
}
# issue 16's search, as `scaling` runs it (DEVS and OUTFILE set by it): bench200M x 500, top 50, no alignments
SEARCH500=('swgpu search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices "$DEVS" --top 50'
  '--outfmt "6 qseqid sseqid score evalue bitscore" --out "$OUTFILE"')
job_cmd() {  # job_cmd JOB DEVS: the array cmd, a standard workload's command line without --out (DEVS "none": no
  # --devices): u20k (uniprot20k x 20, top 10), b20 (bench200M x 20, top 10), b200 (bench200M x 500, top 50), b200aln
  # (the same with BLAST's 12 columns: 25,000 alignments traced), u500aln (uniprot20k x 500, top 50, the 12 columns: a
  # search whose traceback and records weigh), fast (its fast mode, top 500), long (align-long 10^4 x
  # 10^8 DNA)
  local dev=(); [ "$2" = none ] || dev=(--devices "$2")
  case $1 in
    u20k) cmd=(search --db "$W/u20k" --query "$R/.carry/data/cudasw_queries.fasta" --backend cuda "${dev[@]}" --top 10 --outfmt "6 qseqid sseqid score evalue") ;;
    b20) cmd=(search --db "$W/db" --query "$R/.carry/data/cudasw_queries.fasta" --backend cuda "${dev[@]}" --top 10 --outfmt "6 qseqid sseqid score evalue") ;;
    b200) cmd=(search --db "$W/db" --query "$W/q500.fasta" --backend cuda "${dev[@]}" --top 50 --outfmt "6 qseqid sseqid score evalue bitscore") ;;
    u500aln) cmd=(search --db "$W/u20k" --query "$W/q500.fasta" --backend cuda "${dev[@]}" --top 50 --outfmt "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore") ;;
    b200aln) cmd=(search --db "$W/db" --query "$W/q500.fasta" --backend cuda "${dev[@]}" --top 50 --outfmt "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore") ;;
    fast) cmd=(search --db "$W/db" --query "$W/q500.fasta" --backend cuda --mode fast "${dev[@]}" --top 500 --outfmt "6 qseqid sseqid evalue score") ;;
    long) cmd=(align-long --query "$W/long_q.fa" --target "$W/long_t.fa" --alphabet dna --backend cuda "${dev[@]}" --format tsv) ;;
  esac
}
in_setting() {  # in_setting SETTING COMMAND...: COMMAND in a subshell under an envab/envphases setting, words
  # VAR=VALUE[,VAR=VALUE...] exported, TREE=DIR: run from the tree copied to $R/DIR (default this one)
  ( tree=$R
    for kv in ${1//,/ }; do case $kv in TREE=*) tree=$R/${kv#TREE=} ;; *) export "${kv?}" ;; esac; done
    shift
    cd "$tree" && export PYTHONPATH=/tmp/site:$PWD && "$@" )
}
jobs_same() {  # jobs_same PREFIX JOB...: "true" where each JOB's (NAME|...) output $W/PREFIX_NAME.out equals the first's
  local prefix=$1 job first= same=true; shift
  for job in "$@"; do
    [ -n "$first" ] || first=$W/${prefix}_${job%%|*}.out
    cmp -s "$first" "$W/${prefix}_${job%%|*}.out" || same=false
  done
  echo "$same"
}
round_order() {  # round_order ROUND HOW ITEM...: the array `order`, the ITEMs in turn, reversed in even rounds unless
  # HOW is "fixed": in the twenty-second session each later job of a fixed order was the faster, whatever its tree, which
  # moved the medians by more than the changes measured (bench/RESULTS.md)
  local round=$1 how=$2 j; shift 2
  order=("$@")
  if [ "$how" != fixed ] && [ $((round % 2)) = 0 ]; then
    order=(); for ((j = $#; j >= 1; j--)); do order+=("${!j}"); done
  fi
}
prime_all() {  # untimed: a one-query search of bench200M on every GPU, so that the timed run after it starts from the
  # same state whatever ran before (see scaling)
  [ -f "$W/one_query.fasta" ] || head -2 "$R/.carry/data/cudasw_queries.fasta" > "$W/one_query.fasta"
  swgpu search --db "$W/db" --query "$W/one_query.fasta" --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
}
summary() {  # the command's own summary line -> "seconds gcups", and its traceback's seconds where it traced
  python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.findall(r' in ([0-9.]+) s,? \(?([0-9.]+) GCUPS', t) or re.findall(r'in ([0-9.]+) s \(([0-9.]+) GCUPS', t); print(*m[-1], *re.findall(r'alignments traced in ([0-9.]+) s', t)[-1:])" "$1"
}
scaling() {  # scaling NAME WORKLOAD SAME_KEY COMMAND...: COMMAND (with DEVS and OUTFILE in it) run on 1, 2, 4, ... GPUs
  # up to all of them, twice each in turn; medians of wall, the command's scan seconds and GCUPS, every output compared
  # with the one-GPU output; one record. PRIMER (a command, untimed) runs before each run: a process's cuInit takes
  # 0.08-0.1 s longer where the process before it left a GPU unused (bench/RESULTS.md), so in turns of 1 and 2 GPUs
  # the two-GPU runs always paid it; after a primer on every GPU, each run starts from the same state
  local name=$1 workload=$2 key=$3; shift 3
  : > "$W/${name}_times.txt"
  for round in 1 2; do
    for devs in "${SETS[@]}"; do
      local tag=${devs//,/_} t0 t1
      [ -z "${PRIMER:-}" ] || eval "$PRIMER" > /dev/null 2>&1 || { echo "primer failed"; rc=1; }
      t0=$(now)
      DEVS=$devs OUTFILE="$W/${name}_$tag.out" eval "$@" 2> "$W/${name}_$tag.log" || { tail -5 "$W/${name}_$tag.log"; rc=1; }
      t1=$(now)
      echo "$devs $(python3 -c "print(round($t1 - $t0, 3))") $(summary "$W/${name}_$tag.log")" | tee -a "$W/${name}_times.txt"
    done
  done
  local same=true rec
  for devs in "${SETS[@]}"; do cmp -s "$W/${name}_0.out" "$W/${name}_${devs//,/_}.out" || same=false; done
  rec=$(python3 - "$W/${name}_times.txt" "$same" "$workload" "$key" "${SETS[@]}" <<'PY'
import json, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
sets = sys.argv[5:]
def med(devs, k):
    return statistics.median(float(r[k]) for r in rows if r[0] == devs)
rec = {"workload": sys.argv[3], **{f"{what}_s": {d: med(d, k) for d in sets} for what, k in (("wall", 1), ("scan", 2))},
       "scan_gcups": {d: med(d, 3) for d in sets}, sys.argv[4]: sys.argv[2] == "true", "runs": rows}
one, many = sets[0], sets[-1]
rec["scan_speedup"] = rec["scan_s"][one] / rec["scan_s"][many]  # all GPUs against one, as before 4-GPU runs
rec["wall_speedup"] = rec["wall_s"][one] / rec["wall_s"][many]
rec["speedup_per_gpus"] = {("auto" if d == "auto" else str(d.count(",") + 1)): {"scan": round(rec["scan_s"][one] / rec["scan_s"][d], 3),
                                                   "wall": round(rec["wall_s"][one] / rec["wall_s"][d], 3)} for d in sets}
print(json.dumps(rec))
PY
)
  record "$name" "$rec"
}
ab_rounds() {  # ab_rounds NAME COMMAND: COMMAND (a string, $TAG in it) run in ab_old/ (an earlier tree, copied there
  # untracked for the call) and in this tree, each as the executable runs it, 3 rounds in turn; "TAG wall" lines in
  # $W/NAME_times.txt, with the command's scan seconds and GCUPS where it wrote them to $W/NAME_TAG.log
  local name=$1 command=$2 tree tag t0 t1
  : > "$W/${name}_times.txt"
  for round in 1 2 3; do
    for tree in ab_old "$PWD"; do
      tag=$(basename "$tree"); t0=$(now)
      (cd "$tree" && export PYTHONPATH=/tmp/site:$PWD TAG=$tag && eval "$command") || rc=1
      t1=$(now)
      echo "$tag $(python3 -c "print(round($t1 - $t0, 3))") $([ -f "$W/${name}_$tag.log" ] && summary "$W/${name}_$tag.log")" \
        | tee -a "$W/${name}_times.txt"
    done
  done
}
long_data() {  # long_data [QLEN]: a QLEN query (default 10^4: long_q.fa, long_t.fa; else long_qQLEN.fa, long_tQLEN.fa)
  # and a 10^8 target (random DNA, a planted mutated copy of the query)
  local n=${1:-10000} sfx=; [ "$n" = 10000 ] || sfx=$n
  [ -f "$W/long_t$sfx.fa" ] && return
  python3 - "$W" "$n" "$sfx" <<'PY'
import numpy as np, sys
w, n, sfx = sys.argv[1], int(sys.argv[2]), sys.argv[3]; rng = np.random.default_rng(16); acgt = np.frombuffer(b"ACGT", np.uint8)
q = acgt[rng.integers(0, 4, n)]; t = acgt[rng.integers(0, 4, 100_000_000)]
copy = q.copy(); flip = rng.random(q.size) < 0.1; copy[flip] = acgt[rng.integers(0, 4, int(flip.sum()))]
t[61_234_567:61_234_567 + q.size] = copy
for name, seq in ((f"long_q{sfx}.fa", q), (f"long_t{sfx}.fa", t)):
    with open(f"{w}/{name}", "wb") as fh:
        fh.write(b">" + name.encode() + b"\n"); fh.write(seq.tobytes()); fh.write(b"\n")
PY
}
wf_setup() {  # the workflow's config and everything before its search jobs, built once (not timed against anything),
  # so that the timed runs do the same work: the database, its statistics and the query batches
  bench_db
  mkdir -p "$W/wf"
  cat > "$W/wf/config.yaml" <<YAML
databases:
  bench: {source: $W/bench200M.fasta.gz}
queries: $W/q500.fasta
query_batch_size: 1000
query_batch_residues: 62000
search: {backend: cuda, threads: 4, top: 50, job_size: database}
plan: {enabled: false}
align: {enabled: true, formats: [tsv], threads: 4, outfmt: "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore"}
report: {enabled: false}
gpu: {slot_dir: $W/wf/slots, devices: "", hold_driver: true}
YAML
  sed 's/hold_driver: true/hold_driver: false/' "$W/wf/config.yaml" > "$W/wf/config_nohold.yaml"
  [ -f "$W/wf/prepared" ] && return
  sm results/bench/dbstats/stats.txt results/queries/batches --resources gpu=1 > "$W/wf/prepare.log" 2>&1 || { tail -20 "$W/wf/prepare.log"; exit 1; }
  # a search on every GPU first: CuPy's kernel cache and the planner's calibration are filled once
  # per machine, by whichever process comes first (a first job took 12.5 s instead of 5.6 s)
  swgpu search --db "$W/wf/results/bench/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 \
    --out /dev/null --quiet || exit 1
  touch "$W/wf/prepared"
}
# WF_PYTHONPATH: the jobs' (and Snakemake's) PYTHONPATH instead, e.g. /tmp/site:$PWD/ab_old for an earlier swgpu_core
sm() { (cd "$W/wf" && PYTHONPATH=${WF_PYTHONPATH:-$PYTHONPATH} snakemake -s "$R/workflow/Snakefile" --configfile "${WF_CONFIG:-$W/wf/config.yaml}" --cores 16 "$@"); }
rc=0
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(tests search workflow long)
for what in "${steps[@]}"; do
  case $what in
    tests)
      # the multi-device and slot tests, with every device visible (a skip fails)
      timeout 300 python3 -m pytest -q -m gpu tests/test_gpu_scores.py tests/test_gpu_slots.py tests/test_gpu_align_long.py tests/test_gpu_traceback.py tests/test_gpu_align_long_trace.py \
        -p no:cacheprovider -rs 2>&1 | tee "$OUT/multigpu_tests.log" | tail -8 || rc=1 ;;
    jobstart)
      # what a workflow GPU job pays before its command's work, alone and two at once, with and
      # without a driver holder (bench/job_start.py); and how the GPUs sit on the host
      python3 bench/job_start.py "$W/js_slots" --json "$OUT/job_start.json" || rc=1
      { nvidia-smi topo -m; lscpu | grep -i 'numa\|socket\|model name'; } 2>&1 | tee "$OUT/topology.txt" ;;
    concphases)
      # a workflow search job (125 queries, alignments) in phases (bench/phase_times.py), alone on GPU 0
      # and as two started together on GPUs 0 and 1, while `swgpu gpu-hold` holds the driver as in the workflow
      bench_db
      python3 -c "import sys; t=open(sys.argv[1]).read().split('>')[1:126]; open(sys.argv[2],'w').write(''.join('>'+r for r in t))" "$W/q500.fasta" "$W/q125.fasta"
      swgpu gpu-hold --while-pid $$ & holder=$!; sleep 1
      job() { CUDA_VISIBLE_DEVICES=$1 python3 bench/phase_times.py search --db "$W/db" --query "$W/q125.fasta" --backend cuda --top 50 \
        --outfmt "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore" --out "$W/cp$1.out" 2> /dev/null \
        | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['mode']='$2'; d['gpu']=$1; print(json.dumps(d))" >> "$OUT/concphases.jsonl"; }
      for round in 1 2 3; do
        job 0 alone; job 0 together & p0=$!; job 1 together & p1=$!
        wait $p0 $p1  # not a bare wait: that would wait for the holder too
      done
      kill $holder; python3 - "$OUT/concphases.jsonl" <<'PY'
import json, sys, collections
acc = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    d = json.loads(line)
    acc[d["mode"]]["end"].append(d["end"])
    for name, a, b, thread in d["spans"]:
        acc[d["mode"]][name].append(round(b - a, 3))
for mode, spans in acc.items():
    print(mode, {k: v for k, v in spans.items() if max(v) >= 0.02})
PY
      ;;
    probe)
      # where a two-GPU search loses time: per device, the kernel seconds and the wall of its
      # batches, for devices 0, 1 and both, on the first PROBE_N (default 100) queries, with the workers set up before
      bench_db
      python3 - "$W/db" "$W/q500.fasta" "$ALL" <<'PY' 2>&1 | tee "$OUT/multigpu_probe.txt"
import os, sys, time
from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu.search import CudaBackend
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
db = Database(sys.argv[1]); sc = Scoring.protein()
queries = read_sequences(sys.argv[2], db.alphabet)[: int(os.environ.get("PROBE_N", "100"))]
many = [int(d) for d in sys.argv[3].split(",")]
for devs in ([0], [1], many, many):
    backend = CudaBackend(sc, devs)
    search(db, queries[:2], sc, backend, top=10, show_progress=False)  # warm-up
    spans = {}
    for w in backend.workers:
        original = w.scan_chunk
        def timed(*a, _o=original, _w=w, **k):
            t = time.perf_counter(); r = _o(*a, **k); spans.setdefault(_w.device_id, []).append(round(time.perf_counter() - t, 3)); return r
        w.scan_chunk = timed
    k0 = [w.kernel_seconds for w in backend.workers]
    t = time.perf_counter(); r = search(db, queries, sc, backend, top=50, show_progress=False); wall = time.perf_counter() - t
    print(devs, f"scan {r.seconds:.3f} s {r.gcups:.0f} GCUPS wall {wall:.3f}", "batches", [(len(b.runs), b.n_residues) for b in backend.batches(db, db.chunks)],
          "kernel s per device", [round(w.kernel_seconds - k, 3) for w, k in zip(backend.workers, k0)], "batch walls", spans, flush=True)
PY
      ;;
    phases)
      # where the process time of a search goes beside the scan (bench/phase_times.py: the command's
      # phases in one process, on GPU 0 and on all GPUs, twice), and the bare CUDA start-up per GPU
      bench_db
      python3 - "$NG" <<'PY' 2>&1 | tee "$OUT/multigpu_cuda_start.txt"
import os, sys, time
t = time.perf_counter(); import cupy as cp; t1 = time.perf_counter()
n = cp.cuda.runtime.getDeviceCount(); t2 = time.perf_counter(); spans = []
for d in range(int(sys.argv[1])):
    s = time.perf_counter()
    with cp.cuda.Device(d):
        cp.cuda.runtime.free(0)
    spans.append(round(time.perf_counter() - s, 3))
print(f"import cupy {t1 - t:.3f} s, device count {t2 - t1:.3f} s, context per GPU {spans}")
PY
      for devs in 0 "$ALL" 0 "$ALL"; do
        python3 bench/phase_times.py search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices "$devs" --top 50 \
          --outfmt "6 qseqid sseqid score evalue bitscore" --out "$W/phases.out" 2> "$W/phases.log" | tee -a "$OUT/multigpu_phases.jsonl" || rc=1
        tail -1 "$W/phases.log"
      done ;;
    envphases)
      # envab's jobs (ENVAB_JOBS, the same words) in one process each through bench/phase_times.py, ENVAB_ROUNDS rounds
      # (default 1): their phases in $OUT/multigpu_phases.jsonl, each line with the job's name; ENVAB_WORK as in envab
      bench_db; case ${ENVAB_WORK:-} in u20k | u500aln) u20k_db ;; long) long_data ;; esac
      for round in $(seq "${ENVAB_ROUNDS:-1}"); do
        for job in $ENVAB_JOBS; do
          IFS='|' read -r name devs setting <<< "$job"
          job_cmd "${ENVAB_WORK:-b200}" "$devs"
          in_setting "$setting" python3 "$R/bench/phase_times.py" "${cmd[@]}" --out "$W/phases.out" 2> "$W/phases.log" \
            > "$W/phases.json" || rc=1
          python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["job"] = sys.argv[2]; print(json.dumps(d))' \
            "$W/phases.json" "$name" >> "$OUT/multigpu_phases.jsonl"
          echo "$name $devs $(tail -1 "$W/phases.log")"
        done
      done ;;
    abworkflow)
      # the workflow on one GPU (gpu=1) and on all (gpu=NG), A/B on one machine: the workflow/ of ab_old/ (an
      # earlier tree, copied there untracked for the call) against this one, interleaved, WF_REPEATS rounds
      # (default 2); per tree the medians and their ratio, and the alignments compared; per run in abworkflow.txt
      # tree, GPUs, wall, Snakemake's first job's start and its last job's end (what is before and after the jobs)
      wf_setup
      [ -d ab_old/workflow ] || { echo "abworkflow: no ab_old/workflow"; rc=1; continue; }
      : > "$OUT/abworkflow.txt"
      for rep in $(seq "${WF_REPEATS:-2}"); do for tree in "$R/ab_old" "$R"; do for g in 1 "$NG"; do
        rm -rf "$W/wf/results/bench/hits" "$W/wf/results/bench/alignments" "$W/wf/results/bench/search" "$W/wf/results/bench/logs" \
          "$W/wf/results/bench/benchmarks"
        t0=$(now)
        # Snakemake's output stamped with the seconds since the start: its first job's start and its last job's end
        { (cd "$W/wf" && snakemake -s "$tree/workflow/Snakefile" --configfile "$W/wf/config.yaml" --cores 16 --resources gpu=$g \
          --forcerun search 2>&1); echo "exit $?"; } | stamped "$t0" > "$W/wf/ab.log"
        t1=$(now)
        grep -q " exit 0$" "$W/wf/ab.log" || { tail -20 "$W/wf/ab.log"; rc=1; }
        (cd "$W/wf/results" && find . -path '*alignments*' -name '*.tsv' | sort | xargs cat) > "$W/wf/ab_$(basename "$tree")_$g.tsv"
        echo "$(basename "$tree") $g $(python3 -c "print(round($t1 - $t0, 3))") $(python3 -c '
import re, sys
lines = open(sys.argv[1]).read().splitlines()
first = next(float(l.split()[0]) for l in lines if re.search(r"rule search:$", l))
last = max(float(l.split()[0]) for l in lines if "Finished jobid" in l)
print(first, last)' "$W/wf/ab.log")" | tee -a "$OUT/abworkflow.txt"
      done; done; done
      python3 - "$OUT/abworkflow.txt" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tree, g, t, first, last = line.split()  # wall, first job's start, last job's end
    runs[(tree, g)].append(float(t))
for tree in sorted({t for t, _ in runs}):
    med = {g: statistics.median(v) for (t, g), v in runs.items() if t == tree}
    one, alls = med["1"], med[max(med, key=int)]
    print(f"abworkflow {tree}: gpu=1 {one:.3f} s, gpu={max(med, key=int)} {alls:.3f} s, ratio {alls / one:.3f}; runs {dict((g, v) for (t, g), v in runs.items() if t == tree)}")
PY
      same=true; for f in "$W"/wf/ab_*.tsv; do cmp -s "$f" "$W/wf/ab_$(basename "$R")_1.tsv" || same=false; done
      echo "abworkflow: alignments identical: $same"; [ "$same" = true ] || rc=1 ;;
    order)
      # does a search's start-up depend on what ran before it? The searches of `phases` (phase_times.py) in
      # the order 0 0 ALL ALL 0 ALL 0 (ORDER overrides it), each with its wall, its end in the process, its
      # cuInit and each GPU's first launch; one line per run in order.txt
      bench_db
      : > "$OUT/order.txt"
      for devs in ${ORDER:-0 0 $ALL $ALL 0 $ALL 0}; do
        t0=$(now)
        PHASE_EXIT=${PHASE_EXIT:-} python3 bench/phase_times.py search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices "$devs" --top 50 \
          --outfmt "6 qseqid sseqid score evalue bitscore" --out "$W/order.out" 2> /dev/null > "$W/order.json" || rc=1
        t1=$(now)
        python3 - "$devs" "$(python3 -c "print(round($t1 - $t0, 3))")" "$W/order.json" <<'PY' | tee -a "$OUT/order.txt"
import json, sys
d = json.load(open(sys.argv[3]))
spans = {}
for name, a, b, _thread in d["spans"]:
    spans.setdefault(name, (a, b))
cu = spans.get("cuInit (ctypes)", (0, 0))
launches = " ".join(f"{n[-1]}@{a}" for n, (a, b) in spans.items() if n.startswith("first launch"))
write = spans.get("write_output", (0, 0))
import os
print(f"exit {os.environ.get('PHASE_EXIT') or 'normal'} devices {sys.argv[1]} wall {sys.argv[2]} end {d['end']} cuInit {cu[0]}-{cu[1]} launches {launches} write {write[0]}-{write[1]}")
PY
      done ;;
    longphases)
      # where align-long's wall goes (bench/phase_times.py), on GPU 0 and on all GPUs, twice
      long_data
      for devs in 0 "$ALL" 0 "$ALL"; do
        python3 bench/phase_times.py align-long --query "$W/long_q.fa" --target "$W/long_t.fa" --alphabet dna --backend cuda \
          --devices "$devs" --out "$W/long_phases.tsv" --format tsv 2> "$W/long_phases.log" | tee -a "$OUT/multigpu_long_phases.jsonl" || rc=1
        tail -2 "$W/long_phases.log"
      done ;;
    teardown)
      # what the process pays at its end (bench/teardown.py: cuInit only, a search then os._exit, with the GPUs'
      # contexts reset first, or reset in a thread while the writing would run), and the tail of a search on
      # every GPU set (--tail: per GPU when its steps start, when its last event is seen, when they return)
      bench_db
      python3 bench/teardown.py --db "$W/db" --queries "$W/q500.fasta" --devices 0 "$ALL" ${TEARDOWN_MODES:+--modes $TEARDOWN_MODES} 2>&1 | tee "$OUT/teardown.txt" || rc=1
      [ -n "${TEARDOWN_MODES:-}" ] || python3 bench/teardown.py --db "$W/db" --queries "$W/q500.fasta" --devices 0 "$ALL" 0 "$ALL" --tail 2>&1 | tee -a "$OUT/teardown.txt" || rc=1 ;;
    fast)
      # issue 15's fast mode on 1, 2, ... GPUs (each device seeds and scores its share of every chunk,
      # CudaBackend.scan_seeded): bench200M x 500, top 500, the tables compared with one GPU's
      bench_db
      # a warm-up on every GPU: the kernels' first build (NVRTC, then CuPy's disk cache) is not timed
      swgpu search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices "$ALL" --top 500 --mode fast --out /dev/null --quiet
      scaling fast "bench200M x 500 queries, --mode fast, top 500" hits_identical \
        'swgpu search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices "$DEVS" --top 500 --mode fast' \
        '--outfmt "6 qseqid sseqid evalue score" --out "$OUTFILE"' ;;
    search|search_primed)
      # search_primed: each run after a one-query search on every GPU (see scaling)
      bench_db
      swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      primer=; [ "$what" = search ] || primer=prime_all
      PRIMER=$primer scaling "$what" "bench200M x 500 queries, top 50, no alignments${primer:+, each run after a one-query search on every GPU}" hits_identical \
        "${SEARCH500[@]}" ;;
    searchvar)
      # issue 16's search (as `search`) under each setting of SEARCH_VARIANTS (default "bare held"): bare, as `search`;
      # held, while `swgpu gpu-hold` holds the driver (as a job script or the workflow does); connN, with
      # CUDA_DEVICE_MAX_CONNECTIONS=N; held_connN both. One record each (multigpu-search_VARIANT)
      bench_db
      swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      for variant in ${SEARCH_VARIANTS:-bare held}; do
        holder=; conns=${variant##*conn}; [ "$conns" = "$variant" ] && conns=
        if [[ $variant == held* ]]; then swgpu gpu-hold --while-pid $$ & holder=$!; sleep 1; fi
        (
          [ -z "$conns" ] || export CUDA_DEVICE_MAX_CONNECTIONS=$conns
          scaling "search_$variant" "bench200M x 500 queries, top 50, no alignments; $variant" hits_identical \
            "${SEARCH500[@]}"
          exit $rc
        ) || rc=1
        [ -z "$holder" ] || { kill "$holder"; wait "$holder" 2> /dev/null; }
      done ;;
    envab)
      # issue 16's search (bench200M x 500, top 50) under environment settings, rounds interleaved: ENVAB_JOBS, words
      # NAME|DEVICES|VAR=VALUE[,VAR=VALUE...] (an empty setting: as it is; TREE=ab_old runs the tree copied to ab_old/),
      # ENVAB_ROUNDS rounds (default 4); the process wall and the command's scan seconds; every output compared with
      # the first job's. The jobs run in their order in odd rounds and in reverse in even ones (round_order;
      # ENVAB_ORDER=fixed: always in order), and with ENVAB_PRIMER=1 each after a one-query search on every GPU.
      # ENVAB_WORK=u20k|b20|long|...: another of job_cmd's workloads instead
      bench_db; case ${ENVAB_WORK:-} in u20k | u500aln) u20k_db ;; long) long_data ;; esac
      swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      : > "$W/envab_times.txt"
      read -ra envab_jobs <<< "$ENVAB_JOBS"
      # ENVAB_WARM=1: each job once, untimed, a one-query traced search: its tree's kernels compiled and its scan
      # calibrated before the timed rounds (trees whose kernels differ keep calibrations of their own; made inside a
      # timed run, one was 25% slow for the whole call in the thirtieth session)
      [ -f "$W/one_query.fasta" ] || head -2 "$R/.carry/data/cudasw_queries.fasta" > "$W/one_query.fasta"
      for job in "${envab_jobs[@]}"; do
        [ -n "${ENVAB_WARM:-}" ] || break
        IFS='|' read -r name devs setting <<< "$job"
        in_setting "$setting" python3 -m swgpu_core search --db "$W/db" --query "$W/one_query.fasta" --backend cuda --devices "$devs" \
          --top 5 --outfmt "6 qseqid sseqid pident length evalue bitscore" --out /dev/null --quiet || rc=1
      done
      for round in $(seq "${ENVAB_ROUNDS:-4}"); do
        round_order "$round" "${ENVAB_ORDER:-abba}" "${envab_jobs[@]}"
        for job in "${order[@]}"; do
          IFS='|' read -r name devs setting <<< "$job"
          [ -z "${ENVAB_PRIMER:-}" ] || prime_all > /dev/null 2>&1 || { echo "primer failed"; rc=1; }
          t0=$(now)
          if [ -n "${ENVAB_WORK:-}" ]; then
            job_cmd "$ENVAB_WORK" "$devs"
            in_setting "$setting" swgpu "${cmd[@]}" --out "$W/envab_$name.out" 2> "$W/envab_$name.log" || { tail -3 "$W/envab_$name.log"; rc=1; }
          else
            DEVS=$devs OUTFILE="$W/envab_$name.out" in_setting "$setting" eval "${SEARCH500[@]}" 2> "$W/envab_$name.log" \
              || { tail -3 "$W/envab_$name.log"; rc=1; }
          fi
          t1=$(now)
          echo "$name $devs $(python3 -c "print(round($t1 - $t0, 3))") $(summary "$W/envab_$name.log")" | tee -a "$W/envab_times.txt"
        done
      done
      same=$(jobs_same envab $ENVAB_JOBS)
      rec=$(python3 - "$W/envab_times.txt" "$same" "$ENVAB_JOBS" <<'PY'
import json, os, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = list(dict.fromkeys(r[0] for r in rows))
rec = {"workload": os.environ.get("ENVAB_WORK") or "bench200M x 500 queries, top 50, no alignments", "jobs": sys.argv[3], "outputs_identical": sys.argv[2] == "true",
       "order": os.environ.get("ENVAB_ORDER", "abba"), "primer": bool(os.environ.get("ENVAB_PRIMER")),
       "wall_s": {n: statistics.median(float(r[2]) for r in rows if r[0] == n) for n in names},
       "scan_s": {n: statistics.median(float(r[3]) for r in rows if r[0] == n) for n in names}, "runs": rows}
if all(len(r) > 5 for r in rows):  # a workload with alignments: the command's traceback seconds
    rec["traced_s"] = {n: statistics.median(float(r[5]) for r in rows if r[0] == n) for n in names}
print(json.dumps(rec))
PY
)
      record envab "$rec" ;;
    exitab)
      # commands back to back: EXIT_N (default 5) runs of ENVAB_WORK's command (default u20k) in a row make one timed
      # sequence, for each job of ENVAB_JOBS (words as envab's), ENVAB_ROUNDS (4) rounds interleaved; the sequence's wall
      # and its runs' walls. After each sequence, the seconds until no GPU process and no keeper (cuda_driver's
      # hand-over) is left. Every output compared with the first job's
      bench_db; u20k_db; long_data
      warm_kernels
      : > "$W/exitab.txt"
      read -ra envab_jobs <<< "$ENVAB_JOBS"
      for round in $(seq "${ENVAB_ROUNDS:-4}"); do
        round_order "$round" "${ENVAB_ORDER:-abba}" "${envab_jobs[@]}"
        for job in "${order[@]}"; do
          IFS='|' read -r name devs setting <<< "$job"
          job_cmd "${ENVAB_WORK:-u20k}" "$devs"
          runs=(); t0=$(now)
          for i in $(seq "${EXIT_N:-5}"); do
            a=$(now); in_setting "$setting" swgpu "${cmd[@]}" --out "$W/exitab_$name.out" 2> "$W/exitab_$name.log" || { tail -3 "$W/exitab_$name.log"; rc=1; }
            runs+=("$(python3 -c "print(round($(now) - $a, 3))")")
          done
          t1=$(now)
          while pgrep -f 'sys.stdin.buffer.read' > /dev/null || [ -n "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ]; do sleep 0.01; done
          t2=$(now)
          echo "$name $devs $(python3 -c "print(round($t1 - $t0, 3), round($t2 - $t1, 3))") ${runs[*]}" | tee -a "$W/exitab.txt"
        done
      done
      same=$(jobs_same exitab $ENVAB_JOBS)
      rec=$(python3 - "$W/exitab.txt" "$same" "$ENVAB_JOBS" <<'PY'
import json, os, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = list(dict.fromkeys(r[0] for r in rows))
med = lambda k, i: statistics.median(float(r[i]) for r in rows if r[0] == k)
rec = {"workload": os.environ.get("ENVAB_WORK") or "u20k", "runs_per_sequence": int(os.environ.get("EXIT_N") or 5), "jobs": sys.argv[3],
       "outputs_identical": sys.argv[2] == "true", "sequence_wall_s": {n: med(n, 2) for n in names},
       "gpus_free_after_s": {n: med(n, 3) for n in names},
       "run_wall_s": {n: statistics.median(float(x) for r in rows if r[0] == n for x in r[4:]) for n in names}, "rows": rows}
print(json.dumps(rec))
PY
)
      record exitab "$rec" ;;
    conns)
      # the commands under each CUDA_DEVICE_MAX_CONNECTIONS of CONNS (default "default 2 4"; "default" leaves it unset),
      # CONN_ROUNDS (3) interleaved rounds, each output compared with the default's: uniprot20k x 20 on GPU 0 (start-up
      # bound), bench200M x 20 on GPU 0 (the long subjects' streams), bench200M x 500 on GPU 0 and on GPUs 0,1, its
      # fast mode (top 500) and align-long 10^4 x 10^8 on GPU 0; u20kxN, b20xN and b500xN on GPUs 0..N-1. CONN_JOBS picks.
      # "JOB conns N wall S scan S GCUPS" in $OUT/conns.txt
      bench_db; long_data; u20k_db
      warm_kernels fast
      conn_jobs=${CONN_JOBS:-u20k b20 b500 b500x2 fast long} conn_values=${CONNS:-default 2 4}
      : > "$W/conns.txt"
      for round in $(seq "${CONN_ROUNDS:-3}"); do
        for job in $conn_jobs; do
          case $job in
            long) job_cmd long none ;;
            *)  # JOB on GPU 0, JOBxN on N GPUs (as many as the machine has); b500 is job_cmd's b200
              base=${job%x[0-9]} devs=0; [ "$base" != b500 ] || base=b200
              if [[ $job == *x[0-9] ]]; then n=${job##*x}; [ "$n" -le "$NG" ] || n=$NG; devs=$(seq -s, 0 $((n - 1))); fi
              job_cmd "$base" "$devs" ;;
          esac
          for c in $conn_values; do
            t0=$(now)
            if [ "$c" = default ]; then (unset CUDA_DEVICE_MAX_CONNECTIONS; swgpu "${cmd[@]}" --out "$W/conns_${job}_$c.out" 2> "$W/conns.log") || rc=1
            else CUDA_DEVICE_MAX_CONNECTIONS=$c swgpu "${cmd[@]}" --out "$W/conns_${job}_$c.out" 2> "$W/conns.log" || rc=1; fi
            t1=$(now)
            echo "$job conns $c wall $(python3 -c "print(round($t1 - $t0, 3))") scan $(summary "$W/conns.log" 2>/dev/null)" | tee -a "$W/conns.txt"
          done
        done
      done
      for job in $conn_jobs; do
        for c in $conn_values; do
          cmp -s "$W/conns_${job}_default.out" "$W/conns_${job}_$c.out" || { echo "conns: $job with $c differs"; rc=1; }
        done
      done
      cp "$W/conns.txt" "$OUT/"
      python3 - "$OUT/conns.txt" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split(); by[(f[0], f[2])].append((float(f[4]), float(f[6]) if len(f) > 6 else float("nan")))
for (job, c), v in by.items():
    print(job, c, "wall", statistics.median(x[0] for x in v), "scan", statistics.median(x[1] for x in v))
PY
      ;;
    ctxprobe)
      # what a GPU's start costs a fresh process by setting (bench/ctx_probe.py): GPUs shown, CUDA_DEVICE_MAX_CONNECTIONS,
      # a keeper holding the driver or none
      python3 bench/ctx_probe.py drive --rounds "${CTX_ROUNDS:-3}" | tee "$OUT/ctxprobe.jsonl"
      python3 - "$OUT/ctxprobe.jsonl" <<'PY'
import collections, json, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); by[(r["visible"], r["connections"], r["keeper"])].append(r)
keys = ["cuInit", "ctx0", "streams0", "ctx1", "streams1", "reset", "total", "wall"]
print("visible conns keeper " + " ".join(keys) + "  (medians)")
for k, rows in by.items():
    print(*k, *(round(statistics.median(r[x] for r in rows), 3) if all(x in r for r in rows) else "-" for x in keys))
PY
      ;;
    release)
      # the end of a search on every GPU (bench/release_probe.py): the contexts' destruction after what is freed first
      # (CuPy's pools, GPU 1's peer access), in parallel or in reverse; bench200M x the 20 classic queries
      bench_db
      python3 bench/release_probe.py drive --rounds "${RELEASE_ROUNDS:-3}" -- --db "$W/db" --query "$R/.carry/data/cudasw_queries.fasta" \
        --backend cuda --devices "$ALL" --top 10 --out "$W/release.out" | tee "$OUT/release_probe.jsonl"
      python3 - "$OUT/release_probe.jsonl" <<'PY'
import collections, json, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); by[r["variant"]].append(r)
keys = ["peer_off", "pools_freed", "reset0", "reset1", "resets", "end_total", "wall"]
print("variant " + " ".join(keys) + "  (medians)")
for k, rows in by.items():
    print(k, *(round(statistics.median(r[x] for r in rows), 4) if all(x in r for r in rows) else "-" for x in keys))
PY
      ;;
    abwall)
      # the search's wall on all GPUs, A/B on one machine: the tree in ab_old/ (an earlier swgpu_core,
      # copied there untracked for the call) against this one, interleaved, 3 rounds, outputs compared
      bench_db
      [ -d ab_old/swgpu_core ] || { echo "abwall: no ab_old/"; rc=1; continue; }
      swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      : > "$W/abwall.txt"
      for round in 1 2 3; do for tree in ab_old "$PWD"; do
        t0=$(now)
        (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core search --db "$W/db" --query "$W/q500.fasta" --backend cuda \
          --devices "$ALL" --top 50 --outfmt "6 qseqid sseqid score evalue bitscore" --out "$W/abwall_$(basename "$tree").out" 2> "$W/abwall.log")
        t1=$(now)
        echo "$(basename "$tree") $(python3 -c "print(round($t1 - $t0, 3))") $(summary "$W/abwall.log")" | tee -a "$W/abwall.txt"
      done; done
      cmp -s "$W/abwall_ab_old.out" "$W/abwall_$(basename "$PWD").out" && echo "abwall: outputs identical" || { echo "abwall: outputs differ"; rc=1; }
      cp "$W/abwall.txt" "$OUT/" ;;
    fastdefault)
      # the fast mode where no GPUs are named (as many as the work pays for, gpu_choice.fast_device_count)
      # beside each GPU count, interleaved, 3 rounds: wall and the command's scan; outputs compared.
      # FAST_COPIES=K: the 500 queries K times over (query_copies)
      bench_db
      q=$(query_copies "${FAST_COPIES:-1}")
      swgpu search --db "$W/db" --query "$q" --backend cuda --devices "$ALL" --top 500 --mode fast --out /dev/null --quiet
      : > "$W/fastdefault.txt"; rm -f "$W"/fastdefault_*.out
      for round in 1 2 3; do for devs in default "${SETS[@]}"; do
        opt=(--devices "$devs"); [ "$devs" = default ] && opt=()
        t0=$(now)
        swgpu search --db "$W/db" --query "$q" --backend cuda "${opt[@]}" --top 500 --mode fast \
          --outfmt "6 qseqid sseqid evalue score" --out "$W/fastdefault_${devs//,/_}.out" 2> "$W/fastdefault.log"
        t1=$(now)
        echo "$devs $(python3 -c "print(round($t1 - $t0, 3))") $(summary "$W/fastdefault.log")" | tee -a "$W/fastdefault.txt"
      done; done
      for f in "$W"/fastdefault_*.out; do cmp -s "$W/fastdefault_0.out" "$f" || { echo "fastdefault: $f differs"; rc=1; }; done
      cp "$W/fastdefault.txt" "$OUT/" ;;
    longdefault)
      # align-long where no GPUs are named (as many as the scan's size pays for, gpu_choice.long_device_count)
      # beside each GPU count, interleaved, 2 rounds, for queries of LONGD_LENGTHS residues (default 10^4 and
      # 3 x 10^4; 10^8 target residues, top 200): wall, the GPUs the command took (its summary line) and its scan;
      # outputs compared
      : > "$W/longdefault.txt"
      for n in ${LONGD_LENGTHS:-10000 30000}; do
        long_data "$n"; sfx=; [ "$n" = 10000 ] || sfx=$n
        rm -f "$W"/longdefault_"$n"_*.out
        for round in 1 2; do for devs in default "${SETS[@]}"; do
          opt=(--devices "$devs"); [ "$devs" = default ] && opt=()
          t0=$(now)
          swgpu align-long --query "$W/long_q$sfx.fa" --target "$W/long_t$sfx.fa" --alphabet dna --backend cuda "${opt[@]}" \
            --format tsv --out "$W/longdefault_${n}_${devs//,/_}.out" 2> "$W/longdefault.log"
          t1=$(now)
          echo "$n $devs $(python3 -c "print(round($t1 - $t0, 3))") $(grep -o 'on [0-9]* GPU(s)' "$W/longdefault.log" | tr ' ' _) $(summary "$W/longdefault.log")" \
            | tee -a "$W/longdefault.txt"
        done; done
        for f in "$W"/longdefault_"$n"_*.out; do cmp -s "$W/longdefault_${n}_0.out" "$f" || { echo "longdefault: $f differs"; rc=1; }; done
      done
      cp "$W/longdefault.txt" "$OUT/" ;;
    abfast)
      # the fast mode on each GPU count, A/B on one machine: the trees of AB_TREES (default
      # ab_old: other swgpu_core trees, copied there untracked for the call) against this one,
      # interleaved, AB_ROUNDS rounds (default 3): process wall and the command's scan seconds; outputs compared.
      # AB_QUERY_COPIES=K: the 500 queries K times over (each copy's ids made unique), K times the work
      bench_db
      q=$(query_copies "${AB_QUERY_COPIES:-1}")
      for tree in ${AB_TREES:-ab_old}; do [ -d "$tree/swgpu_core" ] || { echo "abfast: no $tree/"; rc=1; continue 2; }; done
      swgpu search --db "$W/db" --query "$q" --backend cuda --devices "$ALL" --top 500 --mode fast --out /dev/null --quiet
      : > "$W/abfast.txt"; rm -f "$W"/abfast_*.out  # a warm machine keeps an earlier call's outputs
      for round in $(seq "${AB_ROUNDS:-3}"); do for tree in ${AB_TREES:-ab_old} "$PWD"; do for devs in "${SETS[@]}"; do
        t0=$(now)
        (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core search --db "$W/db" --query "$q" --backend cuda \
          --devices "$devs" --top 500 --mode fast --outfmt "6 qseqid sseqid evalue score" --out "$W/abfast_$(basename "$tree")_${devs//,/_}.out" \
          2> "$W/abfast.log")
        t1=$(now)
        echo "$(basename "$tree") $devs $(python3 -c "print(round($t1 - $t0, 3))") $(summary "$W/abfast.log")" | tee -a "$W/abfast.txt"
      done; done; done
      for f in "$W"/abfast_*.out; do cmp -s "$W/abfast_$(basename "$PWD")_0.out" "$f" || { echo "abfast: $f differs"; rc=1; }; done
      cp "$W/abfast.txt" "$OUT/" ;;
    concstart)
      # the workflow's first round starts one job per GPU at the same instant, and those jobs took
      # 0.2-0.4 s longer than jobs started alone (RESULTS.md): here one process per GPU at once
      # against one alone, each with CUDA_VISIBLE_DEVICES set as gpu-run sets it, three rounds:
      # bench/startup_parts.py's pieces (cuInit, CuPy, context, kernels), then whole searches of
      # uniprot20k x 20 (a scan of 0.1 s: the wall is start-up); per process one line in concstart.txt
      u20k_db
      swgpu search --db "$W/u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      parts() { CUDA_VISIBLE_DEVICES=$2 python3 bench/startup_parts.py | sed "s/^/$1 parts /"; }
      search1() {
        local t0=$EPOCHREALTIME
        CUDA_VISIBLE_DEVICES=$2 swgpu search --db "$W/u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 \
          --out "$W/conc_$2.tsv" --quiet
        echo "$1 search_wall $(python3 -c "print(round($EPOCHREALTIME - $t0, 3))")"
      }
      # then the same with a "keeper": a process that holds the driver initialised (cuInit, no context)
      # between the runs, as nvidia-persistenced would; without it and with persistence mode off, the
      # driver may tear the GPUs' state down whenever the last process exits, and the next process
      # sets it up again, which two processes starting at once may do one after the other
      nvidia-smi --query-gpu=index,persistence_mode --format=csv,noheader | sed 's/^/persistence /' | tee "$OUT/concstart.txt"
      for keeper in no yes; do
        kp=
        if [ $keeper = yes ]; then
          python3 -c "import ctypes, time; ctypes.CDLL('libcuda.so.1').cuInit(0); time.sleep(3600)" & kp=$!
          sleep 1
        fi
        for round in 1 2 3; do
          for step in parts search1; do
            $step "keeper=$keeper alone" 0 >> "$OUT/concstart.txt"
            for d in $(seq 0 $((NG - 1))); do $step "keeper=$keeper together$d" "$d" > "$W/conc_out_$d.txt" & done
            wait $(jobs -p | grep -v "^${kp:-none}$")
            cat "$W"/conc_out_*.txt >> "$OUT/concstart.txt"
          done
        done
        [ -n "$kp" ] && kill $kp
      done
      grep search_wall "$OUT/concstart.txt" ;;
    workflow)
      # WF_HOLD="true false": the same runs with config gpu.hold_driver on and off, in turn
      wf_setup
      # WF_TRACE=1: each search job runs under bench/phase_times.py (a `swgpu` first on the jobs' PATH that runs
      # `search` through it, as the executable ends; gpu-run's exec keeps the process, so its start is the job's)
      WF_PATH=$PATH
      if [ -n "${WF_TRACE:-}" ]; then
        mkdir -p "$W/wf/bin"
        printf '#!/bin/sh\nif [ "$1" = search ]; then shift; PHASE_EXIT=os exec python3 %s/bench/phase_times.py search "$@"; fi\nexec python3 -m swgpu_core "$@"\n' \
          "$R" > "$W/wf/bin/swgpu"
        chmod +x "$W/wf/bin/swgpu"; WF_PATH=$W/wf/bin:$PATH
      fi
      COUNTS=(); for devs in "${SETS[@]}"; do COUNTS+=("$(( $(tr -cd , <<< "$devs" | wc -c) + 1 ))"); done
      for hold in ${WF_HOLD:-true}; do : > "$W/wf/times_$hold.txt"; done
      # WF_REPEATS rounds of every GPU count in turn, in reverse in even rounds (WF_ORDER=fixed: always in order); medians
      for rep in $(seq "${WF_REPEATS:-1}"); do
      round_order "$rep" "${WF_ORDER:-abba}" "${COUNTS[@]}"
      for hold in ${WF_HOLD:-true}; do
      WF_CONFIG=$W/wf/config.yaml sfx=; [ "$hold" = true ] || { WF_CONFIG=$W/wf/config_nohold.yaml; sfx=_nohold; }
      for g in "${order[@]}"; do
        rm -rf "$W/wf/results/bench/hits" "$W/wf/results/bench/alignments" "$W/wf/results/bench/search" "$W/wf/results/bench/logs" \
          "$W/wf/results/bench/benchmarks"
        nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader -lms 200 > "$W/wf/smi_gpu$g$sfx.csv" &
        p1=$!
        nvidia-smi --query-compute-apps=timestamp,gpu_bus_id,pid,used_memory --format=csv,noheader -lms 200 > "$W/wf/smi_apps$g$sfx.csv" &
        p2=$!
        # how many driver holders run during the run: the workflow's (workflow/rules/driver.smk, a `python -c` whose
        # program holds the driver: HOLDER below) or a `swgpu gpu-hold`
        (while :; do pgrep -fc "$HOLDER" || true; sleep 0.5; done) > "$W/wf/holders_$hold$g.txt" &
        p3=$!
        t0=$(now); echo "$t0" > "$W/wf/t0_gpu$g$sfx.txt"
        # every line of Snakemake's output with the seconds since the start: the jobs' starts and ends, to the millisecond
        { PATH=$WF_PATH sm --resources gpu=$g --forcerun search 2>&1; echo "exit $?"; } | stamped "$t0" > "$W/wf/run_gpu$g$sfx.log"
        t1=$(now)
        grep -q " exit 0$" "$W/wf/run_gpu$g$sfx.log" || { tail -30 "$W/wf/run_gpu$g$sfx.log"; rc=1; }
        kill $p1 $p2 $p3 2> /dev/null; wait $p1 $p2 $p3 2> /dev/null
        echo "$g $(python3 -c "print(round($t1 - $t0, 3))")" >> "$W/wf/times_$hold.txt"
        echo "hold_driver=$hold gpu=$g: driver holders seen $(sort -n "$W/wf/holders_$hold$g.txt" | tail -1) at most; left after the run $(pgrep -fc "$HOLDER")"
        grep -rh "gpu-run: CUDA_VISIBLE_DEVICES" "$W/wf/results" "$W/wf/logs" 2> /dev/null | sort | uniq -c > "$W/wf/devices_gpu$g$sfx.txt"
        (cd "$W/wf/results" && find . -path '*alignments*' -name '*.tsv' | sort | xargs cat) > "$W/wf/alignments_gpu$g$sfx.tsv"
        (cd "$W/wf/results/bench" && tail -n +2 benchmarks/*/*.tsv) > "$W/wf/benchmarks_gpu$g$sfx.txt" 2> /dev/null
        # each search job's own account: scan, traceback and writing seconds (the rest of its time is start-up)
        (cd "$W/wf/results/bench/logs/search" && grep -H "swgpu search:" ./*.log) > "$W/wf/joblogs_gpu$g$sfx.txt" 2> /dev/null
        if [ -n "${WF_TRACE:-}" ]; then  # each job's phases on the run's time line, its GPU, per round (wf_trace.jsonl)
          python3 - "$W/wf/results/bench/logs/search" "$(cat "$W/wf/t0_gpu$g$sfx.txt")" "$g" "$rep" >> "$OUT/wf_trace.jsonl" <<'PY'
import glob, json, re, sys
logs, t0, g, rep = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
for path in sorted(glob.glob(f"{logs}/*.log")):
    text = open(path).read()
    device = re.search(r"gpu-run: CUDA_VISIBLE_DEVICES=(\S+)", text)
    phases = [json.loads(line) for line in text.splitlines() if line.startswith('{"argv"')]
    if not phases:
        continue
    d = phases[-1]
    shift = d["t0"] - t0  # the job's process start on the run's time line
    print(json.dumps({"gpus": g, "round": rep, "job": path.rsplit("/", 1)[1], "device": device.group(1) if device else None,
                      "start": round(shift, 3), "end": round(shift + d["end"], 3), "imports_done": d["imports_done"],
                      "spans": [[n, round(a + shift, 3), round(b + shift, 3), th] for n, a, b, th in d["spans"] if b - a >= 0.01]}))
PY
        fi
        if [ -n "${WF_LOGS:-}" ]; then  # the runs' own files (at most 8 files come back from a call)
          cp "$W/wf/joblogs_gpu$g$sfx.txt" "$OUT/" 2> /dev/null
          cp "$W/wf/smi_gpu$g$sfx.csv" "$W/wf/smi_apps$g$sfx.csv" "$W/wf/run_gpu$g$sfx.log" "$W/wf/benchmarks_gpu$g$sfx.txt" "$OUT/" 2> /dev/null
        fi
      done
      done
      done
      for hold in ${WF_HOLD:-true}; do
      sfx=; [ "$hold" = true ] || sfx=_nohold
      same=true
      for g in "${COUNTS[@]}"; do cmp -s "$W/wf/alignments_gpu1.tsv" "$W/wf/alignments_gpu$g$sfx.tsv" || same=false; done
      rec=$(python3 - "$W/wf" "$same" "$hold" "$sfx" "${COUNTS[@]}" <<'PY'
import collections, csv, datetime, json, os, re, statistics, sys
w, same, hold, sfx, counts = sys.argv[1], sys.argv[2] == "true", sys.argv[3], sys.argv[4], sys.argv[5:]
runs = [line.split() for line in open(f"{w}/times_{hold}.txt")]
times = {g: statistics.median(float(t) for c, t in runs if c == g) for g in counts}
rec = {"workload": "workflow, bench200M x 500 queries in 4 batches of about 62,000 residues, search + alignments (BLAST 12 columns, top 50)",
       "command": "snakemake --cores 16 --resources gpu=G --forcerun search (database built before)",
       "hold_driver": hold == "true", "order": os.environ.get("WF_ORDER", "abba"), "wall_s": {g: times[g] for g in counts},
       "runs": runs, "outputs_identical": same}
rec["wall_ratio"] = rec["wall_s"][counts[-1]] / rec["wall_s"]["1"]  # all GPUs against one
rec["wall_ratio_per_gpus"] = {g: round(rec["wall_s"][g] / rec["wall_s"]["1"], 3) for g in counts}
for g in counts:
    busy = collections.defaultdict(int); samples = collections.defaultdict(int)
    for row in csv.reader(open(f"{w}/smi_gpu{g}{sfx}.csv")):
        if len(row) < 3: continue
        samples[row[1].strip()] += 1
        busy[row[1].strip()] += float(row[2].split()[0]) > 0
    # one sample = the rows nvidia-smi wrote within a few ms of each other (each row has its own time)
    per_ts, last = [], None
    for row in csv.reader(open(f"{w}/smi_apps{g}{sfx}.csv")):
        if len(row) >= 3 and row[2].strip().isdigit():
            t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            if last is None or t - last > 0.1:
                per_ts.append(collections.Counter())
            last = t
            per_ts[-1][row[1].strip()] += 1
    # the jobs' spans from Snakemake's timestamped output: "rule NAME:" ... "jobid: N" starts, "Finished jobid: N" ends
    starts, spans, rule, first = {}, [], None, None
    for line in open(f"{w}/run_gpu{g}{sfx}.log"):
        t, _, text = line.strip().partition(" ")
        text = text.strip()
        if m := re.match(r"(?:local)?(?:rule|checkpoint) (\w+):", text):
            rule = m.group(1)
        elif m := re.match(r"jobid: (\d+)", text):
            starts[m.group(1)] = (rule, float(t))
        elif m := re.match(r"Finished jobid: (\d+)", text):
            r, s0 = starts.get(m.group(1), ("?", None))
            spans.append([r, s0, float(t)])
        if first is None and "Building DAG" in text:
            first = float(t)
    rec[f"gpu{g}"] = {"busy_share_per_device": {d: round(busy[d] / samples[d], 3) for d in samples},
                      "max_processes_on_one_device": max((max(c.values()) for c in per_ts), default=None),
                      "samples_with_processes_on_every_device": sum(len(c) == int(g) for c in per_ts), "samples_with_processes": len(per_ts),
                      "job_devices": open(f"{w}/devices_gpu{g}{sfx}.txt").read().split("\n")[:-1],
                      "dag_at_s": first, "jobs": spans}
print(json.dumps(rec))
PY
)
      record workflow "$rec"
      done ;;
    wfprofile)
      # where a workflow run's own time goes (not its jobs'): cProfile of a real run that re-runs only gather_hits
      wf_setup
      sm --resources gpu=1 > "$W/wf/complete.log" 2>&1 || { tail -20 "$W/wf/complete.log"; rc=1; }
      (cd "$W/wf" && python3 -m cProfile -o "$W/wf/prof.out" -m snakemake -s "$R/workflow/Snakefile" --configfile "$W/wf/config.yaml" \
        --cores 16 --resources gpu=1 --forcerun gather_hits > "$W/wf/profiled.log" 2>&1) || { tail -20 "$W/wf/profiled.log"; rc=1; }
      python3 -c "
import pstats, sys
for key in ('cumulative', 'tottime'):
    pstats.Stats(sys.argv[1], stream=sys.stdout).sort_stats(key).print_stats(45)" "$W/wf/prof.out" > "$OUT/wf_profile.txt"
      head -70 "$OUT/wf_profile.txt" | tail -50 ;;
    plan)
      # `swgpu plan` reads GPU 0's model: A/B on one machine against the tree in ab_old/ (an earlier swgpu_core,
      # copied there untracked for the call, where plan was no GPU command and CUDA saw every GPU), both as the
      # executable runs them, 3 rounds in turn, outputs compared
      bench_db
      [ -d ab_old/swgpu_core ] || { echo "plan: no ab_old/"; rc=1; continue; }
      ab_rounds plan 'python3 -m swgpu_core plan "$W/db" --query-length 500 > "$W/plan_$TAG.txt" 2>&1'
      cmp -s "$W/plan_ab_old.txt" "$W/plan_$(basename "$PWD").txt" && echo "plan: same output" \
        || { echo "plan: outputs differ"; diff "$W/plan_ab_old.txt" "$W/plan_$(basename "$PWD").txt" | head; rc=1; }
      record plan "$(python3 -c "import json,sys; r=[l.split() for l in open(sys.argv[1])]; print(json.dumps({'workload': 'swgpu plan bench200M --query-length 500, ab_old against this tree', 'runs': r}))" "$W/plan_times.txt")" ;;
    absavehits)
      # `swgpu search --save-hits` (the workflow's search jobs: every score counted into a histogram per query) of
      # bench200M x 500 on GPU 0: A/B on one machine against the tree in ab_old/, both as the executable runs them,
      # 3 rounds in turn, hit tables compared, and the .npz hit lists array by array (their scan seconds aside)
      bench_db
      [ -d ab_old/swgpu_core ] || { echo "absavehits: no ab_old/"; rc=1; continue; }
      ab_rounds absave 'python3 -m swgpu_core search --db "$W/db" --query "$W/q500.fasta" --backend cuda --devices 0 --top 50 \
        --save-hits "$W/absave_$TAG.npz" --out "$W/absave_$TAG.tsv" 2> "$W/absave_$TAG.log"'
      python3 - "$W/absave_ab_old.npz" "$W/absave_$(basename "$PWD").npz" <<'PY' || rc=1
import json, sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
def meta(f):  # the run's scan seconds aside
    m = json.loads(str(f["meta"])); m.pop("seconds", None); return m
same = sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files if k != "meta") and meta(a) == meta(b)
print("absavehits: hit lists", "identical" if same else "DIFFER"); sys.exit(0 if same else 1)
PY
      cmp -s "$W/absave_ab_old.tsv" "$W/absave_$(basename "$PWD").tsv" && echo "absavehits: same table" || { echo "absavehits: tables differ"; rc=1; }
      record absavehits "$(python3 -c "import json,sys; r=[l.split() for l in open(sys.argv[1])]; print(json.dumps({'workload': 'swgpu search --save-hits bench200M x 500 --devices 0, ab_old against this tree (wall, scan s, GCUPS)', 'runs': r}))" "$W/absave_times.txt")" ;;
    cuinit)
      # why cuInit takes 0.3-0.45 s inside `swgpu search` and 0.12 s alone (bench/cuinit_probe.py): cuInit beside
      # each kind of the command's other start-up work, CUINIT_ROUNDS (4) rounds of every variant in turn
      bench_db
      : > "$OUT/cuinit.jsonl"
      for round in $(seq "${CUINIT_ROUNDS:-4}"); do
        for v in alone alone0 numpy cupy swgpu both serial; do
          if [ "$v" = alone0 ]; then
            CUDA_VISIBLE_DEVICES=0 python3 bench/cuinit_probe.py alone >> "$OUT/cuinit.jsonl" || rc=1
          else
            python3 bench/cuinit_probe.py "$v" --db "$W/db" --query "$W/q500.fasta" >> "$OUT/cuinit.jsonl" || rc=1
          fi
        done
      done
      python3 - "$OUT/cuinit.jsonl" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in rows:
    key = r["variant"] + ("" if r["visible"] == "all" else f" (CUDA_VISIBLE_DEVICES={r['visible']})")
    by[key].append(" ".join(f"{k} {v[0]}-{v[1]}" for k, v in r.items() if isinstance(v, list)))
for k, v in by.items():
    print(k); [print("   ", x) for x in v]
PY
      ;;
    visible|abvisible)
      # what the GPUs a command does not use cost it, VISIBLE_ROUNDS (3) interleaved rounds, outputs compared.
      # visible: each run with every GPU visible and with CUDA_VISIBLE_DEVICES naming only its GPUs (set here);
      # abvisible: the tree in ab_old/ (an earlier swgpu_core, copied there untracked for the call) against this
      # one, each as `swgpu` runs it. VISIBLE_JOBS picks among u20k (search uniprot20k x 20 on GPU 0: a short scan,
      # the wall is start-up), b200 (bench200M x 500 on GPUs 0,1; 0 on a one-GPU machine), long (align-long
      # 10^4 x 10^8 on GPU 0, its default) and fast (bench200M x 500 --mode fast, top 500, no --devices)
      [ "$what" = visible ] || [ -d ab_old/swgpu_core ] || { echo "abvisible: no ab_old/"; rc=1; continue; }
      bench_db; long_data
      u20k_db
      pair=0,1; [ "$NG" -ge 2 ] || pair=0
      jobs=${VISIBLE_JOBS:-u20k b200 long}
      warm_kernels "$([[ " $jobs " != *" fast "* ]] || echo fast)"
      sides=(all named); [ "$what" = visible ] || sides=(ab_old "$(basename "$PWD")")
      : > "$W/$what.txt"
      for round in $(seq "${VISIBLE_ROUNDS:-3}"); do
        for job in $jobs; do
          devs=0; [ "$job" = b200 ] && devs=$pair; [ "$job" = fast ] && devs=none
          for side in "${sides[@]}"; do
            if [ "$job" = long ]; then job_cmd long none; else job_cmd "$job" "$devs"; fi
            cmd+=(--out "$W/${what}_${job}_$side.out")
            t0=$(now)
            case $side in
              all) swgpu "${cmd[@]}" 2> "$W/$what.log" || rc=1 ;;
              named) CUDA_VISIBLE_DEVICES=${devs/none/$pair} swgpu "${cmd[@]}" 2> "$W/$what.log" || rc=1 ;;
              ab_old) (cd ab_old && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core "${cmd[@]}" 2> "$W/$what.log") || rc=1 ;;
              *) python3 -m swgpu_core "${cmd[@]}" 2> "$W/$what.log" || rc=1 ;;
            esac
            t1=$(now)
            echo "$job devices $devs ${side} wall $(python3 -c "print(round($t1 - $t0, 3))") scan $(summary "$W/$what.log" 2>/dev/null)" | tee -a "$W/$what.txt"
          done
        done
      done
      for job in $jobs; do
        cmp -s "$W/${what}_${job}_${sides[0]}.out" "$W/${what}_${job}_${sides[1]}.out" && echo "$what: $job outputs identical" \
          || { echo "$what: $job outputs differ"; rc=1; }
      done
      cp "$W/$what.txt" "$OUT/" ;;
    split)
      # issue 16's lead: a process per GPU. The 500 queries cut in two halves of equal residues (longest first, each
      # to the half with fewer), each half searched by a process of its own that sees one GPU (CUDA_VISIBLE_DEVICES),
      # both started together, timed until both end; beside `--devices 0` and `--devices 0,1` in one process,
      # SPLIT_ROUNDS (2) interleaved rounds; the halves' rows together compared with the whole's (sorted)
      bench_db
      [ "$NG" -ge 2 ] || { echo "split: needs two GPUs"; rc=1; continue; }
      python3 - "$W/q500.fasta" "$W/half" <<'PY'
import sys
recs = open(sys.argv[1]).read().split(">")[1:]
size = lambda r: len("".join(r.split("\n", 1)[1].split()))
halves, load = ([], []), [0, 0]
for r in sorted(recs, key=size, reverse=True):
    k = load.index(min(load)); halves[k].append(r); load[k] += size(r)
for k, h in enumerate(halves):
    open(f"{sys.argv[2]}{k}.fasta", "w").write("".join(">" + r for r in h))
print("half residues", load)
PY
      args=(--db "$W/db" --backend cuda --top 50 --outfmt "6 qseqid sseqid score evalue bitscore")
      swgpu search --db "$W/db" --query .carry/data/cudasw_queries.fasta --backend cuda --devices 0,1 --top 1 --out /dev/null --quiet
      : > "$W/split.txt"
      for round in $(seq "${SPLIT_ROUNDS:-2}"); do
        for how in one two split; do
          t0=$(now)
          case $how in
            one) swgpu search "${args[@]}" --query "$W/q500.fasta" --devices 0 --out "$W/split_one.out" 2> "$W/split.log" || rc=1 ;;
            two) swgpu search "${args[@]}" --query "$W/q500.fasta" --devices 0,1 --out "$W/split_two.out" 2> "$W/split.log" || rc=1 ;;
            split)
              CUDA_VISIBLE_DEVICES=0 swgpu search "${args[@]}" --query "$W/half0.fasta" --out "$W/split_h0.out" 2> "$W/split_h0.log" &
              p0=$!
              CUDA_VISIBLE_DEVICES=1 swgpu search "${args[@]}" --query "$W/half1.fasta" --out "$W/split_h1.out" 2> "$W/split_h1.log" &
              p1=$!
              wait $p0 || rc=1; t_0=$(now); wait $p1 || rc=1 ;;
          esac
          t1=$(now)
          extra=; [ "$how" = split ] && extra="h0_end $(python3 -c "print(round($t_0 - $t0, 3))") scans $(summary "$W/split_h0.log") / $(summary "$W/split_h1.log")"
          echo "$how wall $(python3 -c "print(round($t1 - $t0, 3))") ${extra:-scan $(summary "$W/split.log")}" | tee -a "$W/split.txt"
        done
      done
      cat "$W/split_h0.out" "$W/split_h1.out" | sort > "$W/split_halves.sorted"; sort "$W/split_one.out" > "$W/split_one.sorted"
      cmp -s "$W/split_halves.sorted" "$W/split_one.sorted" && echo "split: rows identical" || { echo "split: rows differ"; rc=1; }
      cp "$W/split.txt" "$OUT/" ;;
    smallexact)
      # an exact search's default GPU count (gpu_choice.exact_device_count): searches of 4e11 to 1.2e13 cells
      # on 1, 2, 3, 4 and 8 GPUs as far as there are, and with no --devices ("auto", the rule's choice):
      # uniprot20k x 20 queries, and bench200M x every 25th, 8th and 4th of the 500 queries
      bench_db; u20k_db
      for k in 25 8 4; do
        python3 -c "import sys; t=open(sys.argv[1]).read().split('>')[1:]; open(sys.argv[2],'w').write(''.join('>'+r for r in t[::int(sys.argv[3])]))" \
          "$W/q500.fasta" "$W/q_every$k.fasta" "$k"
      done
      devflag() { [ "$DEVS" = auto ] || printf -- '--devices %s' "$DEVS"; }
      saved=("${SETS[@]}"); SETS=(); for k in 1 2 3 4 8; do [ "$k" -le "$NG" ] && SETS+=("$(seq -s, 0 $((k - 1)))"); done; SETS+=(auto)
      swgpu search --db "$W/u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --devices "$ALL" --top 1 --out /dev/null --quiet
      scaling small_u20k "uniprot20k x 20 queries, top 10" hits_identical \
        'swgpu search --db "$W/u20k" --query .carry/data/cudasw_queries.fasta --backend cuda $(devflag) --top 10' \
        '--outfmt "6 qseqid sseqid score evalue" --out "$OUTFILE"'
      for k in 25 8 4; do
        scaling "small_b200_every$k" "bench200M x every ${k}th of the 500 queries, top 10" hits_identical \
          "swgpu search --db \"\$W/db\" --query \"\$W/q_every$k.fasta\" --backend cuda \$(devflag) --top 10" \
          '--outfmt "6 qseqid sseqid score evalue" --out "$OUTFILE"'
      done
      SETS=("${saved[@]}") ;;
    long)
      long_data
      scaling long "align-long, DNA, 10^4 query x 10^8 target" end_points_identical \
        'swgpu align-long --query "$W/long_q.fa" --target "$W/long_t.fa" --alphabet dna --backend cuda --devices "$DEVS"' \
        '--out "$OUTFILE" --format tsv' ;;
    longq)
      # the same with a longer query (LONG_Q residues, default 3 x 10^4), whose 200 alignments' traceback the GPUs share
      n=${LONG_Q:-30000}; long_data "$n"
      scaling "long$n" "align-long, DNA, $n query x 10^8 target, top 200" end_points_identical \
        "swgpu align-long --query \"\$W/long_q$n.fa\" --target \"\$W/long_t$n.fa\" --alphabet dna --backend cuda --devices \"\$DEVS\"" \
        '--out "$OUTFILE" --format tsv' ;;
  esac
done
exit $rc
