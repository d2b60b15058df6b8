#!/usr/bin/env bash
# host_figures.sh: every figure docs/performance.md and docs/scaling.md quote for one machine, in
# one run: the machine, cpuft vs PyTorch per step (tools/side_by_side.py), end to end against HF
# Trainer, and data-parallel scaling with 1, 2 and 4 ranks (tools/scaling_runs.sh), both as hosts
# of equal size (THREADS per rank fixed) and as one host's cores split among the ranks.
#
# usage: tools/host_figures.sh OUT_DIR
# environment (defaults in brackets):
#   CPUFT_BIN   folder with cpuft and cpuft_bench_step [build/release/apps, build/release/bench]
#   MPIRUN      launcher for the scaling runs [mpirun]
#   PYTHON      a Python with torch + transformers [python3]
#   MODELS      folder for the random-weight model folders [OUT_DIR/models]
#   VOCAB_CASED / VOCAB_UNCASED  vocab.txt of bert-base-cased / all-MiniLM-L6-v2
#               [../shared/data/models/{bert-base-cased,all-MiniLM-L6-v2}/vocab.txt]
#   STEPS       timed steps per step benchmark [5]      E2E_EPOCHS  end-to-end epochs [1]
#   SCALE_STEPS optimizer steps per scaling run [12]    HOST_CORES  cores per "host" [4]
#   PARTS       which parts, in this order ["scaling steps e2e"]
# The models have random weights of bert-base-cased's and all-MiniLM-L6-v2's shapes
# (tools/make_random_model.py): times and memory are the real models', accuracy is not.
# Each part writes into OUT_DIR as it goes, so a run cut short keeps what it finished.
set -uo pipefail
[[ $# -eq 1 ]] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out=$1
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
bin_apps=${CPUFT_BIN:-$here/build/release/apps}
bin_bench=${CPUFT_BIN:-$here/build/release/bench}
PYTHON=${PYTHON:-python3}
MODELS=${MODELS:-$out/models}
VOCAB_CASED=${VOCAB_CASED:-$here/../shared/data/models/bert-base-cased/vocab.txt}
VOCAB_UNCASED=${VOCAB_UNCASED:-$here/../shared/data/models/all-MiniLM-L6-v2/vocab.txt}
STEPS=${STEPS:-5}
E2E_EPOCHS=${E2E_EPOCHS:-1}
SCALE_STEPS=${SCALE_STEPS:-12}
HOST_CORES=${HOST_CORES:-4}
PARTS=${PARTS:-scaling steps e2e}
cores=$(nproc)

{
  echo "== machine"
  date -u
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node|L3|Flags' |
    sed 's/^Flags:.*/Flags: (in cpuinfo)/'
  grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort | uniq -c
  free -g | head -2
  echo "nproc $cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$out/machine.txt"

bert=$MODELS/bert-base-cased-shape
minilm=$MODELS/minilm-l6-shape
if [[ ! -f $bert/model.safetensors || ! -f $minilm/model.safetensors ]]; then
  echo "== random-weight models"
  "$PYTHON" "$here/tools/make_random_model.py" --config "$here/bench/data/bert-base-cased-config.json" \
    --vocab "$VOCAB_CASED" --out "$bert" &&
    "$PYTHON" "$here/tools/make_random_model.py" --config "$here/bench/data/all-MiniLM-L6-v2-config.json" \
      --vocab "$VOCAB_UNCASED" --out "$minilm" || { echo "error: could not make the models"; exit 1; }
fi

for part in $PARTS; do
  case $part in
    scaling)
      echo "== scaling: 1, 2, 4 ranks x $HOST_CORES threads (hosts of $HOST_CORES cores), BERT-base shape, fp32"
      CPUFT=$bin_apps/cpuft MPIRUN=${MPIRUN:-mpirun} THREADS=$HOST_CORES MAX_STEPS=$SCALE_STEPS \
        bash "$here/tools/scaling_runs.sh" "$bert" "$out/scaling-hosts" 2>&1 | tee "$out/scaling-hosts.txt"
      echo "== scaling: the $cores cores split among 1, 2, 4 ranks, BERT-base shape, fp32"
      CPUFT=$bin_apps/cpuft MPIRUN=${MPIRUN:-mpirun} MAX_STEPS=$SCALE_STEPS \
        bash "$here/tools/scaling_runs.sh" "$bert" "$out/scaling-split" 2>&1 | tee "$out/scaling-split.txt"
      ;;
    steps)
      echo "== one step, cpuft vs PyTorch, $cores threads"
      "$PYTHON" "$here/tools/side_by_side.py" --cpuft_bench "$bin_bench/cpuft_bench_step" \
        --threads "$cores" --steps "$STEPS" --configs "$bert/config.json" "$minilm/config.json" \
        --out "$out/steps" 2>&1 | tee "$out/steps.txt"
      ;;
    e2e)
      echo "== end to end, MRPC $E2E_EPOCHS epoch(s), MiniLM shape, $cores threads"
      "$PYTHON" "$here/tools/side_by_side.py" --skip_steps --threads "$cores" \
        --end_to_end "$minilm" --cpuft "$bin_apps/cpuft" --data_dir "$here/data/glue" \
        --epochs "$E2E_EPOCHS" --out "$out/e2e" 2>&1 | tee "$out/e2e.txt"
      ;;
    *) echo "error: unknown part $part" >&2; exit 2 ;;
  esac
done
