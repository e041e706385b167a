#!/usr/bin/env bash
# One device call: the GPU tests (skips fail), where the command line's time goes, and the
# side-by-side scoreboard against CUDASW++4.0; logs and JSON lines under $OUT.
#   run: bash bench/device_check.sh [tests] [ab] [startup] [shapes] [intra] [intraprobe] [racecheck] [select] [memory] [seedsweep] [longpairs] [seedab] [seedparams] [fastprofile] [cliprofile] [abfast] [subsetncu] [timeline] [seedsrc] [fastcli] [long] [longquery] [profile] [stream] [side[=REPS]] [abscan] [peers] [calibration] [calsense] [plansense] [calreplay] [u20kvar] [slowhost]   (default: tests profile)
# Expects the wheels the device's python lacks under .whl/ (bash bench/fetch_wheels.sh) and a
# copy of shared/ (data/, tools/, anchors/) under .carry/ (both carried, both git-ignored).
set -uo pipefail
OUT=${OUT:-/tmp/swgpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
source bench/bytecode.sh  # bytecode as an installation has it
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SWGPU_SHARED=$PWD/.carry SWGPU_REQUIRE_GPU=1
# the device copy's .git can be stale: pass SWGPU_COMMIT=<commit> in the command
export SWGPU_COMMIT=${SWGPU_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
W=/tmp/side_by_side; mkdir -p "$W"
rc=0
# bench200M (tools/make_bench_db.py --residues 200000000 --seed 7) under $W, made once per machine;
# bench200M also builds its database
bench200M_fasta() {
  [ -f "$W/bench200M.fasta.gz" ] || python3 .carry/tools/make_bench_db.py .carry/data/uniprot20k.fasta.gz \
    "$W/bench200M.fasta.gz" --residues 200000000 --seed 7 > /dev/null || rc=1
}
bench200M() {
  bench200M_fasta
  [ -f "$W/sw_bench200M/manifest.json" ] || python3 -m swgpu_core makedb "$W/bench200M.fasta.gz" "$W/sw_bench200M" --quiet || rc=1
}
# uniprot20k: its FASTA unpacked under $W and its database, made once per machine
u20k() {
  zcat .carry/data/uniprot20k.fasta.gz > "$W/u20k.fasta"
  [ -f "$W/sw_u20k/manifest.json" ] || python3 -m swgpu_core makedb "$W/u20k.fasta" "$W/sw_u20k" --quiet || rc=1
}
# doubled_inter_rate CALIBRATION: a copy of the planner's calibration with the inter-task rate doubled, in $W/cal_x2 (a
# SWGPU_CACHE): the variant that moved subjects to the inter-task kernel and ran a slow H100 at the usual speed
doubled_inter_rate() {
  mkdir -p "$W/cal_x2"
  python3 -c "import json, sys; c = json.load(open(sys.argv[1])); [m.update(inter_rate=2 * m['inter_rate']) for m in c.values()]; json.dump(c, open(sys.argv[2], 'w'))" \
    "$1" "$W/cal_x2/calibration.json"
}
# calibration_file: where this machine keeps the planner's calibration (read when called: a step may set SWGPU_CACHE)
calibration_file() { echo "${SWGPU_CACHE:-$HOME/.cache/swgpu}/calibration.json"; }
# scan_summary: the last "in S s, G GCUPS" of a search's summary lines on stdin
scan_summary() { grep -o "in [0-9.]* s, [0-9.]* GCUPS" | tail -1; }
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(tests profile)
for what in "${steps[@]}"; do
  case $what in
    tests)
      # every gpu-marked test; with SWGPU_REQUIRE_GPU=1 a skip is a failure
      timeout 420 python3 -m pytest -q -m gpu tests/ -k "not slurm and not workflow" -p no:cacheprovider -rs 2>&1 \
        | tee "$OUT/gpu_tests.log" | tail -30 || rc=1 ;;
    ab)
      # start-up A/B on one machine: the tree in ab_old/ (an earlier swgpu_core, copied there
      # untracked for the call) against this one, uniprot20k x 20 queries (a scan of ~0.1 s,
      # so the wall is nearly all fixed cost), AB_REPS (default 5) interleaved runs each, and the phases of one;
      # with --quiet unless AB_QUIET=0 (the progress bar and the summary line then go to stderr)
      u20k
      args=(search --db "$W/sw_u20k" --query "$PWD/.carry/data/cudasw_queries.fasta" --backend cuda --top 10 --outfmt "6 qseqid sseqid score evalue")
      [ "${AB_QUIET:-1}" = 0 ] || args+=(--quiet)
      python3 -m swgpu_core "${args[@]}" --out /dev/null
      : > "$OUT/ab_walls.txt"
      for rep in $(seq "${AB_REPS:-5}"); do
        for tree in ab_old "$PWD"; do
          s=$EPOCHREALTIME
          (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core "${args[@]}" --out "$W/ab_$(basename "$tree").tsv" 2> /dev/null)
          echo "$(basename "$tree") $(python3 -c "print(round($EPOCHREALTIME - $s, 3))")" | tee -a "$OUT/ab_walls.txt"
        done
      done
      cmp "$W/ab_ab_old.tsv" "$W/ab_$(basename "$PWD").tsv" && echo "outputs identical"
      python3 -c "
import statistics, collections
w = collections.defaultdict(list)
for line in open('$OUT/ab_walls.txt'):
    t, s = line.split(); w[t].append(float(s))
print({t: (statistics.median(v), min(v)) for t, v in w.items()})"
      python3 bench/phase_times.py "${args[@]}" --out /dev/null | tee "$OUT/ab_phases.json" ;;
    profile)
      # where `swgpu search` spends its time on bench200M x 20: import, then a cProfile of the run
      bench200M
      python3 -X importtime -m swgpu_core --help 2> "$OUT/importtime.txt" > /dev/null
      sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -12
      q=.carry/data/cudasw_queries.fasta
      python3 -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 --outfmt "6 qseqid sseqid score" --out /dev/null --quiet
      for rep in 1 2; do
        s=$EPOCHREALTIME
        python3 -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 --outfmt "6 qseqid sseqid score" --out /dev/null
        echo "wall $(python3 -c "print(round($EPOCHREALTIME - $s, 3))") s"
      done
      python3 -m cProfile -o "$OUT/search.prof" -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 \
        --outfmt "6 qseqid sseqid score" --out /dev/null --quiet
      python3 -c "import pstats; pstats.Stats('$OUT/search.prof').sort_stats('cumulative').print_stats(35)" > "$OUT/search_profile.txt"
      head -80 "$OUT/search_profile.txt" | tail -50
      # scan time against kernel time in one process (warm: kernels loaded, resident batch uploaded),
      # resident and streamed under budgets of 1/8 and 1/32 of 9 bytes per residue of the database
      python3 - "$W/sw_bench200M" $q <<'PY' 2>&1 | tee "$OUT/scan_timing.txt"
import sys
from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu.search import CudaBackend
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
db = Database(sys.argv[1])
queries, sc = read_sequences(sys.argv[2], db.alphabet), Scoring.protein()
full = 9 * db.n_residues  # as bench/stream_profile.py: fractions of 9 bytes per residue in every session
for name, budget in (("resident", None), ("1/8", full // 8), ("1/32", full // 32)):
    backend = CudaBackend(sc, memory_budget=budget)
    search(db, queries[:1], sc, backend, top=10, show_progress=False)  # warm-up
    k0 = backend.kernel_seconds
    r = search(db, queries, sc, backend, top=10, show_progress=False)
    k = backend.kernel_seconds - k0
    print(f"{name:8s} {len(backend.batches(db, db.chunks)):4d} batches: scan {r.seconds:.3f} s ({r.gcups:.0f} GCUPS), "
          f"kernels {k:.3f} s ({r.cells / k / 1e9:.0f} GCUPS), scan/kernels {r.seconds / k:.3f}", flush=True)
    del backend
PY
      ;;
    startup)
      # the GPU warm-up's pieces in fresh processes (bench/startup_parts.py, after one search that
      # fills the caches), then the imports of a real `swgpu search` of uniprot20k x 20
      u20k
      args=(search --db "$W/sw_u20k" --query "$PWD/.carry/data/cudasw_queries.fasta" --backend cuda --top 10 --outfmt "6 qseqid sseqid score evalue" --quiet --out /dev/null)
      python3 -m swgpu_core "${args[@]}"
      for rep in 1 2 3; do python3 bench/startup_parts.py | tee -a "$OUT/startup_parts.jsonl"; done
      for rep in 1 2 3; do
        s=$EPOCHREALTIME; python3 -m swgpu_core "${args[@]}"; echo "wall $(python3 -c "print(round($EPOCHREALTIME - $s, 3))") s"
      done
      python3 -X importtime -m swgpu_core "${args[@]}" 2> "$OUT/importtime_search.txt"
      sort -t'|' -k2 -n "$OUT/importtime_search.txt" | tail -25
      python3 bench/phase_times.py "${args[@]}" | tee -a "$OUT/startup_phases.jsonl" ;;
    shapes)
      # per-query kernel time of each inter-task shape over bench200M, 40 of the 500 queries (bench/shape_sweep.py)
      bench200M
      python3 bench/shape_sweep.py "$W/sw_bench200M" .carry/data/uniprot_queries500.fasta.gz --sample 40 | tee "$OUT/shape_sweep.jsonl" || rc=1 ;;
    memory)
      # peak host memory (anonymous and file-backed apart, bench/host_memory.py) of a search of bench200M x 20,
      # resident and streamed under budgets of 1/8 and 1/32 of 9 bytes per residue
      bench200M
      for budget in "" 225000000 56250000; do
        python3 bench/host_memory.py -- python3 -m swgpu_core search --db "$W/sw_bench200M" --query .carry/data/cudasw_queries.fasta \
          --backend cuda --top 10 --out "$W/mem_${budget:-resident}.tsv" ${budget:+--gpu-memory $budget} | tee -a "$OUT/host_memory.jsonl" || rc=1
        cmp -s "$W/mem_resident.tsv" "$W/mem_${budget:-resident}.tsv" || { echo "memory: the ${budget} hits differ from the resident ones"; rc=1; }
      done
      # a database larger than the memory the process may use: the 1/32 search again in a cgroup
      # (v2) whose memory.max is its own anonymous peak above plus 128 or 256 MB (96 MB: killed
      # for memory, 2026-11-26), less than the 200 MB of residues it maps beside its libraries,
      # after the database's pages are dropped from the page cache (else they stay charged to
      # whoever read them first); the kernel must drop and read them again as the batches pass
      anon=$(tail -1 "$OUT/host_memory.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_bytes"]["RssAnon"])')
      for extra in 128 256; do
        cg=/sys/fs/cgroup/swgpu_mem_$$_$extra
        mkdir "$cg" 2>/dev/null || { echo "memory: no cgroup could be made here (no capped run)" | tee -a "$OUT/host_memory.jsonl"; break; }
        echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
        cap=$((anon + (extra << 20))); echo "$cap" > "$cg/memory.max"; echo 0 > "$cg/memory.swap.max" 2>/dev/null
        python3 - "$W/sw_bench200M" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
PY
        rm -f "$W/mem_capped.tsv"
        bash -c "echo \$\$ > $cg/cgroup.procs && exec python3 bench/host_memory.py -- python3 -m swgpu_core search --db $W/sw_bench200M \
          --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 --out $W/mem_capped.tsv --gpu-memory 56250000" | tee -a "$OUT/host_memory.jsonl"
        echo "{\"cgroup_memory_max\": $cap, \"memory_peak\": $(cat "$cg/memory.peak" 2>/dev/null || echo null), \"events\": \"$(tr '\n' ' ' < "$cg/memory.events")\", \"stat\": \"$(grep -E '^(anon|file|file_mapped|pgmajfault|workingset_refault_file) ' "$cg/memory.stat" | tr '\n' ' ')\"}" | tee -a "$OUT/host_memory.jsonl"
        cmp -s "$W/mem_resident.tsv" "$W/mem_capped.tsv" && echo "memory: capped (+$extra MB) hits identical" || echo "memory: capped (+$extra MB) run failed or its hits differ"
        rmdir "$cg" 2>/dev/null
      done ;;
    seedsweep)
      # issue 15: per seed rule (SPAN,X,TRIGGER) the GPU candidate stage's time and counts and the recall
      # of the exact mode's hits at E <= 1e-5 / 1e-3, bench200M x 500, top 500 (bench/seed_recall.py --backend cuda);
      # the first point is the default, compiled once before so that no point pays the build of the shared parts
      bench200M_fasta
      python3 bench/seed_recall.py run --backend cuda --threads 16 --fasta "$W/bench200M.fasta.gz" \
        --queries .carry/data/uniprot_queries500.fasta.gz --name bench200M --work /tmp/seed_recall --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
        --sweep 20,16,52 ${SEED_SWEEP:-20,16,52 20,16,55,0 25,16,52 20,16,50} --out "$OUT/seed_sweep.jsonl" \
        | python3 -c 'import json,sys
for line in sys.stdin:
    r = json.loads(line); p = r.get("params", {})
    print(r["kind"], *(p.get(k) for k in ("span", "xdrop", "trigger", "trigger_step")), "seed", r.get("seed_seconds"), "kernel", r.get("kernel_seconds"),
          "s", r.get("seconds"), "hits", r.get("hits"), "ext", r.get("extensions"), "cand/q", r.get("candidates_per_query"), "cells", r.get("candidate_share_of_cells"),
          "recall", r.get("recall_1e-05"), r.get("recall_0.001"))' || rc=1 ;;
    longpairs)
      # issue 15: the fast mode's candidates scored per chunk of bench200M x 500 for each threshold of
      # the long pairs sent to the intra-task kernel (bench/subset_split.py --steps; 0: none)
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      python3 bench/subset_split.py "$W/sw_bench200M" "$W/q500.fasta" --steps ${LONG_STEPS:-0 65536 32768 131072} \
        | tee "$OUT/long_pairs.jsonl" | cut -c1-200 || rc=1 ;;
    seedab)
      # issue 15: the seed kernel alone per chunk (bench/seed_ab.py: seconds, registers, a digest of the
      # candidates) and the warm overlapped fast search (bench/seeded_overlap.py), with the trees of
      # AB_TREES (default ab_old/: an earlier swgpu_core, copied there untracked for the call) and this
      # one, interleaved, twice (SEED_AB=0: the overlapped search only)
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      for rep in 1 2; do
        for tree in ${AB_TREES:-ab_old} "$PWD"; do
          [ -d "$tree/swgpu_core" ] || continue
          tag=$(basename "$tree")
          [ "${SEED_AB:-1}" = 0 ] || PYTHONPATH=/tmp/site:$(cd "$tree" && pwd) python3 bench/seed_ab.py "$W/sw_bench200M" "$W/q500.fasta" --tag "$tag" \
            | sed "s/^{/{\"commit\": \"$SWGPU_COMMIT\", /" | tee -a "$OUT/seed_ab.jsonl" | cut -c1-260 || rc=1
          PYTHONPATH=/tmp/site:$(cd "$tree" && pwd) python3 bench/seeded_overlap.py "$W/sw_bench200M" "$W/q500.fasta" --rounds 3 \
            | sed "s/^{/{\"tree\": \"$tag\", /" | tee -a "$OUT/seeded_overlap.jsonl" || rc=1
        done
      done ;;
    subsetncu)
      # issue 15: Nsight Compute on the candidates' scoring of bench200M's chunk ${NCU_CHUNK:-1} (the task-list
      # kernels, bench/subset_ncu.py) and on the exact scan of the same chunk by 8 queries (sw_inter)
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2> /dev/null | head -1)
      sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy
                --section LaunchStats --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis)
      if [ -n "$NCU" ]; then
        $NCU --kernel-name regex:sw_inter_tasks --launch-count 3 "${sections[@]}" \
          python3 bench/subset_ncu.py "$W/sw_bench200M" "$W/q500.fasta" ${NCU_CHUNK:-1} > "$OUT/subset_ncu.txt" 2>&1; echo "ncu rc $?"
        $NCU --kernel-name sw_inter --launch-count 2 "${sections[@]}" \
          python3 bench/subset_ncu.py "$W/sw_bench200M" "$W/q500.fasta" ${NCU_CHUNK:-1} --exact > "$OUT/exact_ncu.txt" 2>&1; echo "ncu rc $?"
        for f in subset_ncu exact_ncu; do
          echo "== $f"; grep -E "^  sw_|Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issued Ipc|No Eligible|Eligible Warps|Executed Instructions  |Block Size|Grid Size" "$OUT/$f.txt" | head -40
        done
      else
        echo "subsetncu: no ncu on this machine"
      fi ;;
    timeline)
      # issue 15: where one warm fast search's time goes, bench200M x 500, top 500 (bench/fast_timeline.py):
      # the host's turns in the seeder's and the scoring's steps and the GPU's timed events on one clock
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      # TIMELINE_COLD=1: also the process's first search (bench/fast_timeline.py --cold)
      # TIMELINE_EXTRA: more runs, each a list of options joined by commas (say "cold,async-pool")
      for how in warm ${TIMELINE_COLD:+cold} ${TIMELINE_EXTRA:-}; do
        python3 bench/fast_timeline.py "$W/sw_bench200M" "$W/q500.fasta" $(echo ",$how" | sed 's/,/ --/g') > "$OUT/fast_timeline_$how.txt" || rc=1
        tail -1 "$OUT/fast_timeline_$how.txt" | sed "s/^{/{\"commit\": \"$SWGPU_COMMIT\", /" | tee -a "$OUT/fast_timeline.jsonl"
      done ;;
    seedparams)
      # issue 15: the fast search under the seed rules of SEED_POINTS (SPAN,XDROP,TRIGGER,STEP) in one warm
      # process, interleaved (bench/seed_params_ab.py): scan, seed kernels, candidates, the table's recall
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      python3 bench/seed_params_ab.py "$W/sw_bench200M" "$W/q500.fasta" --rounds ${SEED_ROUNDS:-3} \
        --points ${SEED_POINTS:-20,16,52,3 22,16,52,3 24,16,52,3 25,16,52,3} | tee -a "$OUT/seed_params_ab.jsonl" || rc=1 ;;
    fastprofile)
      # issue 15: cProfile of the process's first fast search and of a second one (bench/fast_profile.py),
      # bench200M x 500; the profiles are kept under $OUT for pstats
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      python3 bench/fast_profile.py "$W/sw_bench200M" "$W/q500.fasta" --save "$OUT" > "$OUT/fast_profile.txt" 2>&1 || rc=1
      grep "==" "$OUT/fast_profile.txt" ;;
    cliprofile)
      # issue 15: cProfile of the fast command line's main thread (bench200M x 500, top 500), after a
      # warm-up run; the profile kept under $OUT for pstats (the scan's lines: scan_seeded and below)
      bench200M
      cli=(search --db "$W/sw_bench200M" --query "$PWD/.carry/data/uniprot_queries500.fasta.gz" --top 500 --outfmt "6 qseqid sseqid evalue score" --mode fast)
      python3 -m swgpu_core "${cli[@]}" --out /dev/null --quiet || rc=1
      python3 -m cProfile -o "$OUT/cli_fast.prof" -m swgpu_core "${cli[@]}" --out /dev/null 2>&1 | grep " in [0-9.]* s" || rc=1 ;;
    abfast)
      # issue 15: the fast command line (bench200M x 500, top 500), trees of AB_TREES against this one,
      # a warm-up of each, then FAST_REPS rounds interleaved: wall, scan, and the tables compared
      bench200M
      cli=(search --db "$W/sw_bench200M" --query "$PWD/.carry/data/uniprot_queries500.fasta.gz" --top 500 --outfmt "6 qseqid sseqid evalue score" --mode fast)
      trees=(${AB_TREES:-ab_old} "$PWD")
      for tree in "${trees[@]}"; do (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core "${cli[@]}" --out /dev/null --quiet) || rc=1; done
      for rep in $(seq "${FAST_REPS:-2}"); do
        for tree in "${trees[@]}"; do
          tag=$(basename "$tree"); s=$EPOCHREALTIME
          (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core "${cli[@]}" --out "$W/abfast_$tag.tsv" 2> "$W/abfast_$tag.err") || rc=1
          python3 -c "import json, re, sys; err = open(sys.argv[3]).read(); scan = re.search(r' in ([0-9.]+) s, ', err)
print(json.dumps({'kind': 'fast-cli-ab', 'commit': '$SWGPU_COMMIT', 'tree': sys.argv[1], 'wall': round(float(sys.argv[2]), 3), 'scan': float(scan.group(1)) if scan else None}))" \
            "$tag" "$(python3 -c "print($EPOCHREALTIME - $s)")" "$W/abfast_$tag.err" | tee -a "$OUT/fast_cli_ab.jsonl"
        done
      done
      python3 -c "import collections, json, statistics, sys
scans = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r['commit'] == sys.argv[2] and r['scan'] is not None:
        scans[r['tree']].append(r['scan'])
print('abfast medians:', {t: (statistics.median(v), min(v), max(v)) for t, v in scans.items()})" "$OUT/fast_cli_ab.jsonl" "$SWGPU_COMMIT"
      first=$(basename "${trees[0]}")
      for tree in "${trees[@]}"; do cmp -s "$W/abfast_$first.tsv" "$W/abfast_$(basename "$tree").tsv" && echo "abfast: $(basename "$tree") table identical to $first's" || echo "abfast: $(basename "$tree") table differs from $first's"; done ;;
    seedsrc)
      # issue 15: Nsight Compute's source counters of the seed kernel (compiled with -lineinfo) on
      # bench200M's chunk 1 x the 500 queries: instructions and stalls per line of kernels/seed.cu
      bench200M; zcat .carry/data/uniprot_queries500.fasta.gz > "$W/q500.fasta"
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2> /dev/null | head -1)
      if [ -n "$NCU" ]; then
        $NCU --kernel-name seed_candidates --launch-skip 1 --launch-count 1 --section SourceCounters --section InstructionStats \
          --section WarpStateStats --section LaunchStats --section Occupancy --import-source yes -f -o "$OUT/seed_src" \
          python3 bench/seed_ncu.py "$W/sw_bench200M" "$W/q500.fasta" 1 --lineinfo > "$OUT/seed_src_run.txt" 2>&1; echo "ncu rc $?"
        tail -3 "$OUT/seed_src_run.txt"
        $NCU -i "$OUT/seed_src.ncu-rep" --page source --csv --print-source cuda > "$OUT/seed_src_cuda.csv" 2> "$OUT/seed_src_err.txt" \
          || $NCU -i "$OUT/seed_src.ncu-rep" --page source --csv > "$OUT/seed_src_cuda.csv" 2>> "$OUT/seed_src_err.txt"
        $NCU -i "$OUT/seed_src.ncu-rep" --page source --csv --print-source sass > "$OUT/seed_src_sass.csv" 2>> "$OUT/seed_src_err.txt"
        $NCU -i "$OUT/seed_src.ncu-rep" --page details > "$OUT/seed_src_details.txt" 2>&1
        wc -c "$OUT"/seed_src_*; head -c 600 "$OUT/seed_src_err.txt"
      else
        echo "seedsrc: no ncu on this machine"
      fi ;;
    fastcli)
      # issue 15: the command line on bench200M x 500, top 500, --mode exact and fast (a warm-up of each,
      # then FAST_REPS rounds): the process's wall and its own scan time, and the fast table's recall
      bench200M
      cli=(search --db "$W/sw_bench200M" --query .carry/data/uniprot_queries500.fasta.gz --top 500 --outfmt "6 qseqid sseqid evalue score")
      for mode in ${FAST_MODES:-exact fast}; do python3 -m swgpu_core "${cli[@]}" --mode "$mode" --out "$W/cli_$mode.tsv" --quiet || rc=1; done
      for rep in $(seq "${FAST_REPS:-2}"); do
        for mode in ${FAST_MODES:-exact fast}; do
          s=$EPOCHREALTIME
          python3 -m swgpu_core "${cli[@]}" --mode "$mode" --out "$W/cli_$mode.tsv" 2> "$W/cli_$mode.err" || rc=1
          python3 -c "import json, re, sys; err = open(sys.argv[3]).read(); scan = re.search(r' in ([0-9.]+) s, ', err); seed = re.search(r'found in ([0-9.]+) s', err)
print(json.dumps({'kind': 'fast-cli', 'commit': '$SWGPU_COMMIT', 'mode': sys.argv[1], 'wall': round(float(sys.argv[2]), 3), 'scan': float(scan.group(1)) if scan else None,
                  'candidate_stage': float(seed.group(1)) if seed else None}))" "$mode" "$(python3 -c "print($EPOCHREALTIME - $s)")" "$W/cli_$mode.err" | tee -a "$OUT/fast_cli.jsonl"
        done
      done
      [ -f "$W/cli_exact.tsv" ] && [ -f "$W/cli_fast.tsv" ] && python3 bench/seed_recall.py compare --exact "$W/cli_exact.tsv" --table fast="$W/cli_fast.tsv" \
        --json "$OUT/fast_cli_recall.json" | tail -5 ;;
    intraprobe)
      # the intra-task kernel alone over bench200M's 548 longest subjects (bench/intra_probe.py): ns per
      # step per query length and block width, then Nsight Compute's view of two of them where ncu runs
      bench200M
      for lw in 144:1 1000:1 1000:4 1000:8 2504:16 5478:16 5478:32; do
        for tree in ab_old "$PWD"; do  # with an ab_old/ tree (see ab), the same for it first
          [ -d "$tree/swgpu_core" ] || continue
          PYTHONPATH=/tmp/site:$(cd "$tree" && pwd) python3 bench/intra_probe.py "$W/sw_bench200M" .carry/data/cudasw_queries.fasta \
            --length "${lw%%:*}" --warps "${lw##*:}" | sed "s/^{/{\"tree\": \"$(basename "$tree")\", /" | tee -a "$OUT/intra_probe.jsonl" || rc=1
        done
      done
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
      if [ -n "$NCU" ]; then
        for lw in 1000:4 5478:32; do
          timeout 240 "$NCU" --kernel-name regex:sw_intra --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy \
            --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
            python3 bench/intra_probe.py "$W/sw_bench200M" .carry/data/cudasw_queries.fasta --length "${lw%%:*}" --warps "${lw##*:}" --reps 1 \
            > "$OUT/ncu_intra_${lw/:/_}.txt" 2>&1; echo "ncu $lw: rc $?"; grep -E "Warp Cycles Per Issued|Stall|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Compute \(SM\) Throughput|Duration|Eligible Warps|No Eligible|ERR" "$OUT/ncu_intra_${lw/:/_}.txt" | head -30
        done
      else
        echo "intraprobe: no ncu on this machine"
      fi ;;
    racecheck)
      # compute-sanitizer's racecheck, synccheck and memcheck over the intra-task kernel's shared ring,
      # small cases (4 subjects of at most 600 residues) with several passes: 1,000 residues on 1
      # warp (4 passes), 2,504 on 4 warps (3), 5,478 on 16 warps (2)
      bench200M
      SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)
      # a cache of their own, filled by one run outside the tools: the planner's model measured under
      # a tool (ten times slower) would otherwise be kept for every later search on this machine
      export SWGPU_CACHE=/tmp/sanitizer_cache; rm -rf "$SWGPU_CACHE"
      python3 bench/intra_probe.py "$W/sw_bench200M" .carry/data/cudasw_queries.fasta --longest 4 --max-length 600 --reps 1 > /dev/null || rc=1
      for tool in racecheck synccheck memcheck; do
        for lw in 1000:1 2504:4 5478:16; do
          timeout 200 "$SAN" --tool $tool --error-exitcode 9 --print-limit 20 \
            python3 bench/intra_probe.py "$W/sw_bench200M" .carry/data/cudasw_queries.fasta --length "${lw%%:*}" --warps "${lw##*:}" \
            --longest 4 --max-length 600 --reps 1 > "$W/sanitizer.txt" 2>&1
          r=$?; echo "$tool $lw: rc $r; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$W/sanitizer.txt" | head -3 | tr '\n' ' ')"
          { echo "== $tool $lw: rc $r"; cat "$W/sanitizer.txt"; } >> "$OUT/sanitizer.txt"
          [ $r -eq 0 ] || rc=1
        done
      done
      unset SWGPU_CACHE ;;
    select)
      # what a query's candidate selection costs the GPU and the host (bench/select_probe.py)
      python3 bench/select_probe.py | tee "$OUT/select_probe.jsonl" || rc=1 ;;
    intra)
      # the intra-task kernel per R (8 as compiled, 16 compiled for the test) over bench200M's 548 longest subjects (bench/intra_sweep.py)
      bench200M
      python3 bench/intra_sweep.py "$W/sw_bench200M" .carry/data/cudasw_queries.fasta | tee "$OUT/intra_sweep.jsonl" || rc=1 ;;
    long)
      # align-long on the issue-16 data (a 10^4 DNA query against 10^8 of random DNA with its
      # mutated copy planted: 200 alignments of about 10^4 x 1.4 * 10^4), twice, against an ab_old/
      # tree when there is one (alignments compared), and the traceback kernels on one 10^4 pair per R
      L=/tmp/mg; mkdir -p $L; source <(sed -n '/^long_data() {/,/^}/p' bench/device_multigpu.sh); W=$L long_data
      python3 bench/tb_region_probe.py --length 10000 | tee "$OUT/tb_region_probe.jsonl"
      for rep in 1 2; do for tree in ab_old "$PWD"; do
        [ -d "$tree/swgpu_core" ] || continue
        s=$EPOCHREALTIME
        (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core align-long --query $L/long_q.fa --target $L/long_t.fa \
          --alphabet dna --backend cuda --out "$L/al_$(basename "$tree").tsv" --format tsv 2>&1 | tail -1)
        echo "$(basename "$tree") wall $(python3 -c "print(round($EPOCHREALTIME - $s, 3))")" | tee -a "$OUT/long_walls.txt"
      done; done
      [ -d ab_old ] && cmp "$L/al_ab_old.tsv" "$L/al_$(basename "$PWD").tsv" && echo "alignments identical" ;;
    longquery)
      # align-long's cost as the query grows (LONGQ_LENGTHS, default 10^4 3*10^4 10^5) against the same 10^8 of random
      # DNA with the query's mutated copy planted, for LONGQ_TOPS end points (default 1 and 200), in each tree of
      # LONGQ_TREES (default this one; ab_old: an earlier tree, outputs compared), each run cut off after LONGQ_LIMIT
      # seconds (default 120): one line per run in $OUT/longquery.txt as it ends, wall and the summary
      L=/tmp/mg; mkdir -p $L; source <(sed -n '/^long_data() {/,/^}/p' bench/device_multigpu.sh)
      for n in ${LONGQ_LENGTHS:-10000 30000 100000}; do
        W=$L long_data "$n"; sfx=; [ "$n" = 10000 ] || sfx=$n
        for top in ${LONGQ_TOPS:-1 200}; do
          outs=()
          for tree in ${LONGQ_TREES:-.}; do
            tag=$(basename "$(cd "$tree" && pwd)"); o=$L/lq_${tag}_${n}_$top.tsv; outs+=("$o"); s=$EPOCHREALTIME
            line=$(cd "$tree" && PYTHONPATH=/tmp/site:$PWD timeout "${LONGQ_LIMIT:-120}" python3 -m swgpu_core align-long \
              --query "$L/long_q$sfx.fa" --target "$L/long_t$sfx.fa" --alphabet dna --backend cuda --top "$top" --out "$o" \
              --format tsv 2>&1 | tail -1; echo "rc ${PIPESTATUS[0]}")
            echo "$tag query $n top $top wall $(python3 -c "print(round($EPOCHREALTIME - $s, 3))") $(tr '\n' ' ' <<< "$line")" \
              | tee -a "$OUT/longquery.txt"
          done
          [ ${#outs[@]} -lt 2 ] || { cmp -s "${outs[@]:0:2}" && echo "query $n top $top: outputs identical" || echo "query $n top $top: outputs DIFFER"; } \
            | tee -a "$OUT/longquery.txt"
        done
      done ;;
    phases)
      # where one `swgpu search` of bench200M x 20 spends its wall time (bench/phase_times.py), twice
      bench200M
      for rep in 1 2; do
        python3 bench/phase_times.py search --db "$W/sw_bench200M" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 \
          --outfmt "6 qseqid sseqid score" --out /dev/null --quiet | tee -a "$OUT/phases_bench200M.jsonl"
      done ;;
    stream)
      # streamed scans against the resident one, kernel time per device batch (bench/stream_profile.py);
      # with an ab_old/ tree (see ab), the same for it first
      bench200M
      for tree in ab_old "$PWD"; do
        [ -d "$tree/swgpu_core" ] || continue
        echo "== tree $(basename "$tree")"
        PYTHONPATH=/tmp/site:$(cd "$tree" && pwd) python3 bench/stream_profile.py "$W/sw_bench200M" "${STREAM_QUERIES:-.carry/data/cudasw_queries.fasta}" ${STREAM_ARGS:-} \
          --json "$OUT/stream_$(basename "$tree").jsonl" 2>&1 | tee "$OUT/stream_$(basename "$tree").txt" || rc=1
      done ;;
    abscan)
      # scan A/B on one machine: the tree in ab_old/ against this one, through `swgpu search`
      # as the scoreboard runs it (needs its databases: run after side), interleaved, 3 runs each
      q500=$W/q500.fasta
      [ -f "$W/sw_bench200M/manifest.json" ] && [ -f "$W/sw_uniprot20k/manifest.json" ] && [ -f "$q500" ] || { echo "abscan: run side first"; rc=1; continue; }
      for rep in 1 2 3; do
        for wl in bench200M:.carry/data/cudasw_queries.fasta uniprot20k:.carry/data/cudasw_queries.fasta bench200M:$q500; do
          qf=${wl#*:}; [[ $qf = /* ]] || qf=$PWD/$qf
          for tree in ab_old "$PWD"; do
            s=$EPOCHREALTIME
            (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 -m swgpu_core search --db "$W/sw_${wl%%:*}" --query "$qf" \
              --backend cuda --top 10 --outfmt "6 qseqid sseqid score" --out "$W/abscan.tsv" 2> "$W/abscan.log")
            g=$(grep -oE '[0-9.]+ GCUPS' "$W/abscan.log" | tail -1 | cut -d' ' -f1)
            echo "$(basename "$tree") ${wl%%:*}:$(grep -c '>' "$qf") $g $(python3 -c "print(round($EPOCHREALTIME - $s, 3))")" | tee -a "$OUT/abscan.txt"
          done
        done
      done ;;
    side*)
      reps=${what#side}; reps=${reps#=}
      OUT=$OUT SHARED=$PWD/.carry WORK=$W bash .carry/tools/side_by_side.sh "${reps:-2}" 2>&1 | tee "$OUT/side_by_side.log" || rc=1
      cp "$W/sw.log" "$OUT/side_sw_last.log" 2>/dev/null  # swgpu's stderr of the last run, for a failed one
      # the planner's model as this machine measured it (its first search calibrates): a skewed one skews every scan
      cp "$(calibration_file)" "$OUT/side_calibration.json" 2>/dev/null
      nvidia-smi -q > "$OUT/side_smi_q.txt"  # the machine's state: some H100s scan at 0.56 of the others' speed
      # the scoreboard's JSON lines with the commit, ready for bench/side_by_side.jsonl
      [ -f "$OUT/side_by_side.jsonl" ] && python3 -c "
import json, sys
rows = [dict(json.loads(l), commit='$SWGPU_COMMIT', machine='$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)') for l in open('$OUT/side_by_side.jsonl')]
open('$OUT/side_by_side.jsonl', 'w').write(''.join(json.dumps(r) + '\n' for r in rows))" ;;
    calibration)
      # the spread of the planner's calibration on this GPU (bench/calibration_spread.py): CAL_RUNS fresh measurements
      # (default 5) back to back, then as many after CAL_IDLE seconds idle each (default 20)
      python3 bench/calibration_spread.py --runs "${CAL_RUNS:-5}" | tee "$OUT/calibration_spread.jsonl" || rc=1
      python3 bench/calibration_spread.py --runs "${CAL_RUNS:-5}" --idle "${CAL_IDLE:-20}" | tee -a "$OUT/calibration_spread.jsonl" || rc=1 ;;
    plansense)
      # the planner's choices against measured kernel time (bench/bench.py --sweep) with this machine's
      # calibration as measured and with its inter_rate doubled (calibration_sensitivity.py's fast variant)
      bench200M; ln -sfn sw_bench200M "$W/bench200M"
      python3 -m swgpu_core search --db "$W/sw_bench200M" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 --out /dev/null --quiet
      cp "$(calibration_file)" "$OUT/plansense_calibration.json"
      python3 bench/bench.py --data .carry --work "$W" --db bench200M uniprot20k --reps 1 --sweep 3072 4096 6144 8192 12288 \
        --out "$OUT/plansense.jsonl" --note "calibration as measured" | grep -v "^  " || rc=1
      doubled_inter_rate "$(calibration_file)"
      SWGPU_CACHE=$W/cal_x2 python3 bench/bench.py --data .carry --work "$W" --db bench200M uniprot20k --reps 1 \
        --out "$OUT/plansense.jsonl" --note "inter_rate x2" | grep -v "^  " || rc=1 ;;
    slowhost)
      # is this one of the H100s that scan bench200M at ~2,400 GCUPS (bench/RESULTS.md, twenty-first session)? The
      # machine's state (nvidia-smi -q) always; where the scoreboard's search runs under 3,000 GCUPS, the kernels per query
      # at fixed thresholds (bench/bench.py --sweep, one query at a time) and the search with the inter-task rate doubled
      bench200M
      nvidia-smi -q > "$OUT/slowhost_smi_q.txt"
      q=.carry/data/cudasw_queries.fasta
      python3 -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 --out /dev/null --quiet
      g=$(python3 -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 --outfmt "6 qseqid sseqid score" \
        --out /dev/null 2>&1 | scan_summary | grep -o "[0-9.]* GCUPS" | cut -d' ' -f1)
      echo "slowhost: bench200M x 20 at ${g:-0} GCUPS" | tee "$OUT/slowhost.txt"
      if python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 3000)" "${g:-0}"; then
        ln -sfn sw_bench200M "$W/bench200M"
        cp "$(calibration_file)" "$OUT/slowhost_calibration.json"
        python3 bench/bench.py --data .carry --work "$W" --db bench200M --reps 1 --sweep 3072 6144 8192 \
          --out "$OUT/slowhost_bench.jsonl" --note "a slow host" | grep -v "^  " | tee -a "$OUT/slowhost.txt" || rc=1
        doubled_inter_rate "$(calibration_file)"
        echo "inter_rate x2: $(SWGPU_CACHE=$W/cal_x2 python3 -m swgpu_core search --db "$W/sw_bench200M" --query $q --backend cuda --top 10 \
          --out /dev/null 2>&1 | scan_summary)" | tee -a "$OUT/slowhost.txt"
      fi ;;
    calreplay)
      # `swgpu search` (the scoreboard's bench200M x 20 and uniprot20k x 20) under each calibration kept in
      # .carry/cal/NAME/calibration.json (measured on other machines), CALREPLAY_ROUNDS rounds (default 1)
      bench200M
      u20k
      python3 -m swgpu_core search --db "$W/sw_u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 --out /dev/null --quiet
      for round in $(seq "${CALREPLAY_ROUNDS:-1}"); do
        for cal in .carry/cal/*/; do
          for db in sw_bench200M sw_u20k; do
            line=$(SWGPU_CACHE=$cal python3 -m swgpu_core search --db "$W/$db" --query .carry/data/cudasw_queries.fasta --backend cuda \
              --top 10 --out /dev/null 2>&1 | scan_summary)
            echo "$(basename "$cal") $db $line" | tee -a "$OUT/calreplay.txt"
          done
        done
      done ;;
    u20kvar)
      # why uniprot20k x 20's scan takes 0.12 s in one process and 0.19-0.23 s in the next: U20K_RUNS (default 8)
      # `swgpu search` runs as the scoreboard makes them, each through bench/phase_times.py (per-query GPU seconds),
      # the GPU's clocks and state sampled just before each
      u20k
      python3 -m swgpu_core search --db "$W/sw_u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 --out /dev/null --quiet
      for run in $(seq "${U20K_RUNS:-8}"); do
        nvidia-smi --query-gpu=pstate,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee -a "$OUT/u20kvar_smi.txt"
        python3 bench/phase_times.py search --db "$W/sw_u20k" --query .carry/data/cudasw_queries.fasta --backend cuda --top 10 \
          --outfmt "6 qseqid sseqid score" --out "$W/u20k_out.tsv" 2> "$W/u20k_err.txt" >> "$OUT/u20kvar_phases.jsonl"
        scan_summary < "$W/u20k_err.txt" | tee -a "$OUT/u20kvar_smi.txt"
      done ;;
    calsense)
      # how far a skewed calibration slows a search (bench/calibration_sensitivity.py): every constant
      # times 0.5 and 2 in turn, bench200M x 20 and uniprot20k x 20
      bench200M
      u20k
      for db in sw_bench200M sw_u20k; do
        python3 bench/calibration_sensitivity.py --db "$W/$db" --query .carry/data/cudasw_queries.fasta \
          | tee -a "$OUT/calibration_sensitivity.jsonl" || rc=1
      done ;;
    peers)
      # the CPU-peer comparison's protocol (bench/cpu_peers.py) for swgpu on the GPU, through the CLI
      python3 bench/cpu_peers.py --only "swgpu cuda" --swgpu-backend cuda --reference bench/ssearch36_top10.tsv --threads 16 \
        --db .carry/data/uniprot20k.fasta.gz --queries .carry/data/cudasw_queries.fasta --json "$OUT/gpu_peers.json" 2>&1 | tail -8 || rc=1 ;;
    *) echo "unknown step $what"; rc=2 ;;
  esac
done
exit $rc
