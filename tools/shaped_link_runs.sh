#!/usr/bin/env bash
# shaped_link_runs.sh: one rank alone against two network-namespace hosts on a shaped link, for a
# list of link rates and both gradient exchange dtypes; prints the table of docs/distributed.md
# ("Said before it hurts"): the run's link probe, its exchange forecast against the measured wait
# after backward, buckets done during backward, samples/s and the speed-up over one rank.
#
# usage: tools/shaped_link_runs.sh MODEL_DIR [OUT_DIR]
#   MODEL_DIR  a Hugging Face encoder folder, e.g. /root/.cache/cpuft/models/all-MiniLM-L6-v2
#   OUT_DIR    where the runs' logs go (default: runs/shaped-<date>)
# environment (defaults in brackets):
#   CPUFT      the cpuft binary [build/release/apps/cpuft]   MPIRUN  Open MPI's mpirun [mpirun]
#   DATA_DIR   GLUE folder [data/glue]     TASK  GLUE task [mrpc]     BATCH  per-rank batch [32]
#   RATES      tc tbf rates ["1600mbit 800mbit 400mbit 200mbit"]; "unshaped": the bare veth pair
#   DTYPES     --gradient_exchange_dtype values ["float32 bfloat16"]
#   STEPS      optimizer steps per run [12]; samples/s are those of the second half's log entry
#   EXTRA      more `cpuft train` flags [""]
# Needs root (network namespaces, tc) and 2 cores: each host and the lone rank get one core and one
# thread. Runs take 10-30 s each; run it on an idle machine.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
MODEL_DIR=$1
OUT_DIR=${2:-runs/shaped-$(date +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")/.." && pwd)
CPUFT=${CPUFT:-$here/build/release/apps/cpuft}
[[ -x "$CPUFT" ]] || { echo "error: no cpuft binary at $CPUFT (set CPUFT=...)" >&2; exit 1; }
MPIRUN=${MPIRUN:-$(command -v mpirun)}
DATA_DIR=${DATA_DIR:-$here/data/glue}
TASK=${TASK:-mrpc}
BATCH=${BATCH:-32}
RATES=${RATES:-1600mbit 800mbit 400mbit 200mbit}
DTYPES=${DTYPES:-float32 bfloat16}
STEPS=${STEPS:-12}
EXTRA=${EXTRA:-}
mkdir -p "$OUT_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2206
flags=(--model_name_or_path "$MODEL_DIR" --task_name "$TASK" --data_dir "$DATA_DIR" --do_train
       --max_steps "$STEPS" --logging_steps $((STEPS / 2)) --per_device_train_batch_size "$BATCH"
       --save_strategy no $EXTRA)
# samples/s of the last log line (the second half of the steps).
speed() { grep "^step $STEPS/$STEPS" "$1" | grep -o '[0-9.]* samples/s' | cut -d' ' -f1; }

echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
     "(family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')" \
     "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))" \
     " cpuft $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?')"
OMP_NUM_THREADS=1 taskset -c 0 "$CPUFT" train "${flags[@]}" --output_dir "$OUT_DIR/one" \
  >"$OUT_DIR/one.log" 2>&1
one=$(speed "$OUT_DIR/one.log")
echo "# one rank alone on one core: $one samples/s"
echo "| link | exchange | probe | forecast waiting | measured waiting | buckets in backward, forecast / measured | samples/s | vs 1 rank |"
echo "|---|---|---|---|---|---|---|---|"
for rate in $RATES; do
  for dtype in $DTYPES; do
    name=$rate-$dtype
    rm -rf "${OUT_DIR:?}/$name"
    LINK_RATE=${rate#unshaped} OMP_NUM_THREADS=1 "$here/tests/parallel/netns_hosts.sh" "$MPIRUN" "$CPUFT" train \
      "${flags[@]}" --gradient_exchange_dtype "$dtype" --output_dir "$OUT_DIR/$name" \
      >"$OUT_DIR/$name.log" 2>&1 || { echo "| $rate | $dtype | run failed: $OUT_DIR/$name.log |"; continue; }
    log=$OUT_DIR/$name.log
    probe=$(sed -n 's/^link probe: .* (\([0-9.]* MB\/s\)); probed in .*/\1/p' "$log")
    read -r forecast measured in_f buckets in_m < <(sed -n \
      's/^gradient exchange: forecast \([0-9.]*%\) .* measured \([0-9.]*%\); buckets done during backward: forecast \([0-9]*\) of \([0-9]*\), measured \([0-9.]*\) .*/\1 \2 \3 \4 \5/p' "$log")
    two=$(speed "$log")
    ratio=$(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2fx", a / b }')
    dt=$([ "$dtype" = float32 ] && echo fp32 || echo bf16)
    link=$([ "$rate" = unshaped ] && echo unshaped || echo "${rate%mbit} Mbit/s")
    echo "| $link | $dt | $probe | $forecast | $measured | $in_f / $in_m of $buckets | $two | $ratio |"
  done
done
