#!/usr/bin/env bash
# scaling_runs.sh: real data-parallel runs of `cpuft train` with 1, 2 and 4 ranks on this host,
# a speedup table (samples/s from train_results.json) and an SVG chart. See docs/scaling.md.
#
# usage: tools/scaling_runs.sh MODEL_DIR [OUT_DIR]
#   MODEL_DIR  a Hugging Face BERT folder (config.json, model.safetensors, vocab.txt), e.g.
#              /root/.cache/cpuft/models/all-MiniLM-L6-v2
#   OUT_DIR    where runs, results.tsv and scaling.svg go (default: runs/scaling-<date>)
# environment (defaults in brackets):
#   CPUFT      the cpuft binary [build/release/apps/cpuft, else cpuft on PATH]
#   DATA_DIR   GLUE folder [data/glue]          TASK       GLUE task [mrpc]
#   MAX_STEPS  optimizer steps per run [20]     BATCH      per-rank batch [32]
#   RANKS      rank counts ["1 2 4"]            CORES      cores of this host [nproc]
#   MPIRUN     launcher [mpirun]: Open MPI's, or a Hydra mpiexec (MPICH, Intel MPI)
#   EXTRA      more `cpuft train` flags [""]    THREADS    threads per rank [CORES / ranks]
# Each rank gets OMP_NUM_THREADS = THREADS, or CORES / ranks (at least 1). The global batch grows
# with the rank count (data parallel), so speedup = samples/s(K ranks) / samples/s(1 rank).
# THREADS=4 RANKS="1 2 4" on 16 cores models 1, 2 and 4 hosts of 4 cores; unset, the same cores
# are split among the ranks (1 x 16, 2 x 8, 4 x 4).
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
MODEL_DIR=$1
OUT_DIR=${2:-runs/scaling-$(date +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${CPUFT:-}" ]]; then
  if [[ -x "$here/build/release/apps/cpuft" ]]; then CPUFT=$here/build/release/apps/cpuft
  else CPUFT=$(command -v cpuft || true); fi
fi
[[ -n "$CPUFT" && -x "$CPUFT" ]] || { echo "error: no cpuft binary (set CPUFT=...)" >&2; exit 1; }
DATA_DIR=${DATA_DIR:-$here/data/glue}
TASK=${TASK:-mrpc}
MAX_STEPS=${MAX_STEPS:-20}
BATCH=${BATCH:-32}
RANKS=${RANKS:-1 2 4}
CORES=${CORES:-$(nproc)}
MPIRUN=${MPIRUN:-mpirun}
EXTRA=${EXTRA:-}
half=$((MAX_STEPS / 2))
((half >= 1)) || half=1
[[ -f "$MODEL_DIR/config.json" ]] || { echo "error: $MODEL_DIR/config.json not found" >&2; exit 1; }
read -r -a extra <<<"$EXTRA"
command -v "$MPIRUN" >/dev/null || { echo "error: $MPIRUN not found" >&2; exit 1; }

# Keeps MPI's big temporary buffers mapped (see docs/distributed.md).
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=100000000000}
launcher=$("$MPIRUN" --version 2>&1 | head -n 3 || true)
# Passes OMP_NUM_THREADS (and the rest) to every rank in the launcher's own syntax.
launch() {  # launch K THREADS ALLOW cmd...
  local K=$1 t=$2 allow=$3
  shift 3
  if [[ $launcher == *"Open MPI"* || $launcher == *"OpenRTE"* ]]; then
    local flags=(--bind-to none --oversubscribe)
    [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
    OMP_NUM_THREADS=$t CPUFT_ALLOW_OVERSUBSCRIPTION=$allow "$MPIRUN" -np "$K" "${flags[@]}" \
      -x OMP_NUM_THREADS -x CPUFT_ALLOW_OVERSUBSCRIPTION -x GLIBC_TUNABLES "$@"
  else  # Hydra (MPICH, Intel MPI): -genv; Intel MPI pins each rank to OMP_NUM_THREADS cores
    "$MPIRUN" -np "$K" -genv OMP_NUM_THREADS "$t" -genv CPUFT_ALLOW_OVERSUBSCRIPTION "$allow" \
      -genv GLIBC_TUNABLES "$GLIBC_TUNABLES" -genv I_MPI_PIN_DOMAIN omp "$@"
  fi
}

mkdir -p "$OUT_DIR"
results=$OUT_DIR/results.tsv
printf 'ranks\tthreads_per_rank\tglobal_batch\tsamples_per_s\tspeedup\tefficiency\toversubscribed\tload_before\texposed_communication\toverlap_ratio\n' >"$results"
echo "scaling runs: $(basename "$MODEL_DIR"), task $TASK, $MAX_STEPS steps, batch $BATCH per rank," \
  "host $(hostname), $CORES cores; output $OUT_DIR"
base=""
for K in $RANKS; do
  threads=${THREADS:-$((CORES / K))}
  over=no
  if ((threads < 1)); then threads=1; fi
  if ((K * threads > CORES)); then
    over=yes
    echo "NOTE: $K ranks x $threads thread on $CORES cores: OVERSUBSCRIBED; this point measures" \
      "contention on a too-small host, not scaling (run on a host with >= $K cores)"
  elif ((K * threads < CORES)); then
    echo "note: $K ranks x $threads threads leave $((CORES - K * threads)) of $CORES cores idle"
  fi
  load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
  run_dir=$OUT_DIR/np$K
  log=$OUT_DIR/np$K.log
  echo "run: $K rank(s) x $threads thread(s), load average $load ... (log $log)"
  allow=0
  [[ $over == yes ]] && allow=1
  if ! launch "$K" "$threads" "$allow" "$CPUFT" train --model_name_or_path "$MODEL_DIR" --task_name "$TASK" \
    --data_dir "$DATA_DIR" --do_train --max_steps "$MAX_STEPS" \
    --per_device_train_batch_size "$BATCH" --save_strategy no --logging_steps "$half" \
    --output_dir "$run_dir" --overwrite_output_dir ${extra[@]+"${extra[@]}"} >"$log" 2>&1; then
    echo "error: the $K-rank run failed; last lines of $log:" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  # The speed of the second half of the steps (the last log entry): the first steps' warm-up
  # (first touch of buffers, oneDNN's first calls) is left out.
  last=$(grep '"samples_per_second"' "$run_dir/log.jsonl" | tail -n 1)
  field() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" <<<"$last"; }
  sps=$(field samples_per_second)
  exposed=$(field exposed_communication)
  overlap=$(field overlap_ratio)
  [[ -n "$sps" ]] || { echo "error: no samples_per_second in $run_dir/log.jsonl" >&2; exit 1; }
  [[ -z "$base" ]] && base=$sps
  awk -v K="$K" -v t="$threads" -v b="$BATCH" -v s="$sps" -v base="$base" -v o="$over" -v l="$load" \
    -v e="${exposed:--}" -v r="${overlap:--}" \
    'BEGIN { sp = s / base; printf "%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\n", K, t, K * b, s, sp, sp / K, o, l, e, r }' \
    >>"$results"
done

echo
awk -F'\t' 'NR == 1 { printf "%6s %9s %13s %10s %8s %10s %15s %6s %8s %8s\n", "ranks", "threads", "global_batch",
                      "samples/s", "speedup", "efficiency", "oversubscribed", "load", "exposed", "overlap"; next }
            { printf "%6d %9d %13d %10.2f %8.2f %10.2f %15s %6s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$results"
if grep -q $'\tyes\t' "$results"; then
  echo "(oversubscribed rows: more ranks x threads than the $CORES cores of this host)"
fi

# The chart: speedup vs ranks, the ideal line, oversubscribed points hollow.
svg=$OUT_DIR/scaling.svg
awk -F'\t' -v title="cpuft train $(basename "$MODEL_DIR") $TASK, $CORES cores, host $(hostname)" '
  NR == 1 { next }
  { n++; k[n] = $1; sp[n] = $5; ov[n] = $7; if ($1 > kmax) kmax = $1; if ($5 > smax) smax = $5 }
  END {
    W = 520; H = 360; L = 60; R = 20; T = 40; B = 50
    top = (kmax > smax ? kmax : smax); top = int(top + 0.999)
    if (top < 1) top = 1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
    printf "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H
    printf "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"13\">%s</text>\n", W / 2, title
    pw = W - L - R; ph = H - T - B
    for (i = 0; i <= top; i++) {
      y = T + ph - ph * i / top
      printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, L + pw, y
      printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", L - 6, y + 4, i
    }
    for (i = 1; i <= n; i++) {
      x = L + pw * k[i] / top
      printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", x, T + ph + 16, k[i]
    }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">ranks</text>\n", L + pw / 2, H - 12
    printf "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">speedup (samples/s vs 1 rank)</text>\n", T + ph / 2, T + ph / 2
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", L, T + ph, L + pw, T + ph
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", L, T, L, T + ph
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-dasharray=\"5,4\"/>\n", L, T + ph, L + pw, T
    printf "<text x=\"%d\" y=\"%d\" fill=\"#777\" text-anchor=\"end\">ideal</text>\n", L + pw - 4, T + 14
    pts = ""
    for (i = 1; i <= n; i++) pts = pts sprintf("%.1f,%.1f ", L + pw * k[i] / top, T + ph - ph * sp[i] / top)
    printf "<polyline points=\"%s\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", pts
    for (i = 1; i <= n; i++) {
      x = L + pw * k[i] / top; y = T + ph - ph * sp[i] / top
      fill = (ov[i] == "yes" ? "white" : "#1f77b4")
      printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", x, y, fill
      printf "<text x=\"%.1f\" y=\"%.1f\">%.2fx%s</text>\n", x + 8, y - 6, sp[i], (ov[i] == "yes" ? " (oversubscribed)" : "")
    }
    printf "</svg>\n"
  }' "$results" >"$svg"
echo "wrote $results and $svg"
