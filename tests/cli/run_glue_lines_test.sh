#!/usr/bin/env bash
# The reference stack's own command lines, run by cpuft with `python run_glue.py` changed to
# `cpuft train` and the model path changed to a tiny model (make_tiny_model.cc):
#   1. the single-node line (boolean values after flags, --xpu_backend ccl, --no_cuda True);
#   2. its distributed form under mpirun -np 2, with --local_rank from Open MPI's rank variable;
#   3. the HF CPU docs' line (--ddp_backend ccl --use_ipex --bf16 --no_cuda);
#   4. a JSON args file (HfArgumentParser's one-argument form) and a YAML one with a flag after it;
#   each trains and writes the same output files. Then:
#   5. --load_best_model_at_end: trainer_state.json's best checkpoint is the best logged
#      evaluation, and the final weights are that checkpoint's;
#   6. run_glue.py's automatic resume, --resume_from_checkpoint True;
#   7. hub names found in a Hugging Face cache (HF_HUB_CACHE), and the one-line error when absent;
#   8. --local_rank that contradicts the launcher; notices for flags that change nothing;
#   9. --optim sgd --optim_args, --lr_scheduler_kwargs, --label_smoothing_factor;
#  10. --dataset_name glue from the hub cache's parquet files; 11. --report_to tensorboard;
#  12. --eval_on_start, --eval_delay, --logging_first_step, --dataloader_drop_last;
#  13. --config_name, --tokenizer_name, --logging_dir, --log_level error.
# GLUE MRPC comes through GLUE_DIR, as a user's environment gives it: the first 256 training and 64
# dev pairs of the repository's data/glue/MRPC, so the unchanged 3-epoch lines take seconds.
# Usage: run_glue_lines_test.sh CPUFT MAKE_TINY_MODEL MPIRUN WITH_CCL
set -uo pipefail
cpuft="$1" make_tiny_model="$2" mpirun="$3" with_ccl="${4:-0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
mrpc="$(cd "$(dirname "$0")/../../data/glue/MRPC" && pwd)"
export GLUE_DIR="$work/glue"
export HF_HUB_CACHE="$work/empty_hub_cache"  # no GLUE parquet files from this machine's cache
mkdir -p "$GLUE_DIR/MRPC"
head -n 257 "$mrpc/train.tsv" >"$GLUE_DIR/MRPC/train.tsv"
head -n 65 "$mrpc/dev.tsv" >"$GLUE_DIR/MRPC/dev.tsv"
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

M="$work/model"
"$make_tiny_model" "$M" --no-head || { echo "cannot make the tiny model"; exit 1; }
backend=ccl
[ "$with_ccl" = 1 ] || backend=mpi  # a build without oneCCL: the same line with mpi

expected_files=(config.json model.safetensors vocab.txt tokenizer_config.json train_results.json
                eval_results.json all_results.json trainer_state.json training_args.json README.md)
check_outputs() {  # check_outputs NAME DIR
  local f missing=""
  for f in "${expected_files[@]}"; do [ -s "$2/$f" ] || missing+=" $f"; done
  [ -z "$missing" ] && pass || fail "$1: missing$missing"
  python3 - "$2" <<'EOF' && pass || fail "$1: output files inconsistent"
import json, sys
d = sys.argv[1]
ev = json.load(open(f"{d}/eval_results.json"))
assert 0 <= ev["eval_accuracy"] <= 1 and "eval_f1" in ev, ev
args = json.load(open(f"{d}/training_args.json"))
assert args["output_dir"].rstrip("/") == d.rstrip("/"), args["output_dir"]
card = open(f"{d}/README.md").read()
assert "GLUE MRPC" in card and "Accuracy" in card and "base_model:" in card, card[:400]
EOF
}

# 1. The reference stack's single-node line.
out1="$work/out1"
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --do_eval --max_seq_length 128 \
  --per_device_train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3 --output_dir "$out1" \
  --overwrite_output_dir True --xpu_backend $backend --no_cuda True >"$work/1.log" 2>&1 &&
  pass || fail "single-node line: $(tail -3 "$work/1.log")"
check_outputs single-node "$out1"
grep -q "^--no_cuda true: accepted, changes nothing" "$work/1.log" && pass ||
  fail "no notice for --no_cuda: $(head -5 "$work/1.log")"
grep -q "^--xpu_backend $backend: mapped -> --dist_backend" "$work/1.log" && pass ||
  fail "no notice for --xpu_backend"

# 2. Its distributed form: two ranks, --local_rank from the launcher's variable (PMI_RANK under
#    Intel MPI's Hydra; Open MPI's is OMPI_COMM_WORLD_RANK).
out2="$work/out2"
"$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 -x GLUE_DIR \
  bash -c 'exec "$0" train --model_name_or_path "$1" --task_name mrpc --do_train --do_eval \
    --max_seq_length 128 --per_device_train_batch_size 32 --learning_rate 2e-5 \
    --num_train_epochs 3 --output_dir "$2" --overwrite_output_dir True --xpu_backend "$3" \
    --no_cuda True --local_rank $OMPI_COMM_WORLD_RANK' "$cpuft" "$M" "$out2" $backend \
  >"$work/2.log" 2>&1 && pass || fail "mpirun -np 2 line: $(tail -5 "$work/2.log")"
check_outputs distributed "$out2"
grep -q "rank 1: openmpi: rank 1 of 2.*backend $backend" "$work/2.log" && pass ||
  fail "2 ranks over $backend not seen: $(grep 'rank ' "$work/2.log" | head -3)"

# 3. The HF CPU docs' line. --bf16 needs AVX512_BF16 or AMX: elsewhere it is refused in one line,
#    and the line without it must run.
out3="$work/out3"
docs_line=(--model_name_or_path "$M" --task_name mrpc --do_train --do_eval
           --per_device_train_batch_size 12 --learning_rate 3e-5 --num_train_epochs 2
           --max_seq_length 128 --output_dir "$out3" --no_cuda --ddp_backend $backend --use_ipex)
if "$cpuft" train "${docs_line[@]}" --bf16 >"$work/3.log" 2>&1; then
  pass
else
  if grep -q "^error: --bf16 needs a CPU with AVX512_BF16" "$work/3.log" && [ ! -e "$out3" ]; then
    pass
    "$cpuft" train "${docs_line[@]}" >"$work/3.log" 2>&1 && pass ||
      fail "HF docs line without --bf16: $(tail -3 "$work/3.log")"
  else
    fail "HF docs line: $(tail -3 "$work/3.log")"
  fi
fi
check_outputs hf-docs "$out3"
grep -q "^--use_ipex true: accepted, changes nothing" "$work/3.log" && pass || fail "no --use_ipex notice"

# 4. Args files: run_glue.py's JSON form, and YAML with a flag after it (the command line wins).
out4="$work/out4"
cat >"$work/args.json" <<EOF
{"model_name_or_path": "$M", "task_name": "mrpc", "do_train": true, "do_eval": true,
 "max_seq_length": 128, "per_device_train_batch_size": 32, "learning_rate": 2e-5,
 "num_train_epochs": 3, "output_dir": "$out4", "overwrite_output_dir": true}
EOF
"$cpuft" train "$work/args.json" >"$work/4.log" 2>&1 && pass || fail "JSON args file: $(tail -3 "$work/4.log")"
check_outputs json-args "$out4"
cmp -s "$out1/model.safetensors" "$out4/model.safetensors" && pass ||
  fail "the JSON args file trained differently from the same flags on the command line"
printf 'model_name_or_path: %s\ntask_name: mrpc\ndo_train: true\ndo_eval: true\nmax_steps: 3\noutput_dir: %s\n' \
  "$M" "$work/out4y" >"$work/args.yaml"
"$cpuft" train "$work/args.yaml" --max_steps 5 >"$work/4y.log" 2>&1 && pass ||
  fail "YAML args file: $(tail -3 "$work/4y.log")"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['global_step']==5, s['global_step']" \
  "$work/out4y/trainer_state.json" && pass || fail "YAML file + flag: the flag did not win"

# 5. --load_best_model_at_end.
out5="$work/out5"
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --max_seq_length 64 \
  --per_device_train_batch_size 16 --learning_rate 1e-3 --max_steps 40 --eval_strategy steps \
  --eval_steps 10 --save_steps 10 --save_total_limit 1 --load_best_model_at_end \
  --metric_for_best_model accuracy --logging_steps 10 --output_dir "$out5" \
  >"$work/5.log" 2>&1 && pass || fail "load_best_model_at_end run: $(tail -3 "$work/5.log")"
python3 - "$out5" <<'EOF' && pass || fail "best model: see above"
import json, os, sys
d = sys.argv[1]
state = json.load(open(f"{d}/trainer_state.json"))
evals = [e for e in state["log_history"] if "eval_accuracy" in e]
assert len(evals) == 4, evals
best = evals[0]
for e in evals[1:]:
    if e["eval_accuracy"] > best["eval_accuracy"]:  # the first of equal bests, as HF's strict >
        best = e
assert state["best_metric"] == best["eval_accuracy"], (state["best_metric"], best)
assert state["best_global_step"] == best["step"], (state["best_global_step"], best)
assert state["best_model_checkpoint"] == f"{d}/checkpoint-{best['step']}", state["best_model_checkpoint"]
kept = sorted(x for x in os.listdir(d) if x.startswith("checkpoint-"))
assert f"checkpoint-{best['step']}" in kept and len(kept) <= 2, kept
print("best", best["step"], best["eval_accuracy"], "kept", kept)
EOF
best_dir=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best_model_checkpoint'])" \
  "$out5/trainer_state.json" 2>/dev/null)
cmp -s "$best_dir/model.safetensors" "$out5/model.safetensors" && pass ||
  fail "the final model is not the best checkpoint's weights ($best_dir)"
grep -q "loading best model from $best_dir" "$work/5.log" && pass || fail "no 'loading best model' line"

# 6. run_glue.py's automatic resume: the same command on an output_dir with checkpoints continues
#    from the latest; --resume_from_checkpoint True too; without checkpoints it is refused.
out6="$work/out6"
resume_line=(--model_name_or_path "$M" --task_name mrpc --do_train --max_seq_length 64
             --per_device_train_batch_size 16 --save_steps 4 --output_dir "$out6")
"$cpuft" train "${resume_line[@]}" --max_steps 8 >"$work/6a.log" 2>&1 || fail "resume: first run"
"$cpuft" train "${resume_line[@]}" --max_steps 12 >"$work/6b.log" 2>&1 && pass ||
  fail "automatic resume: $(tail -3 "$work/6b.log")"
grep -q "checkpoint detected, resuming training at $out6/checkpoint-8" "$work/6b.log" && pass ||
  fail "no automatic resume from checkpoint-8: $(head -5 "$work/6b.log")"
"$cpuft" train "${resume_line[@]}" --max_steps 16 --resume_from_checkpoint True >"$work/6c.log" 2>&1 &&
  grep -q "resumed from $out6/checkpoint-12 at step 12" "$work/6c.log" && pass ||
  fail "--resume_from_checkpoint True: $(tail -3 "$work/6c.log")"
mkdir -p "$work/not_empty" && touch "$work/not_empty/x"
"$cpuft" train "${resume_line[@]}" --max_steps 4 --output_dir "$work/not_empty" 2>"$work/6d.err" >/dev/null
[ $? = 1 ] && grep -q "use --overwrite_output_dir" "$work/6d.err" && pass ||
  fail "non-empty output_dir without checkpoints: $(cat "$work/6d.err")"

# 7. Hub names in a Hugging Face cache, laid out as huggingface_hub writes it (blobs + symlinks).
cache="$work/hf/hub"
repo="$cache/models--google-bert--bert-tiny"
commit=0123456789abcdef0123456789abcdef01234567
mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$commit"
for f in "$M"/*; do
  blob=$(sha256sum "$f" | cut -c1-64)
  cp "$f" "$repo/blobs/$blob"
  ln -s "../../blobs/$blob" "$repo/snapshots/$commit/$(basename "$f")"
done
printf '%s' "$commit" >"$repo/refs/main"
hub_line=(--task_name mrpc --do_train --max_steps 2 --max_seq_length 64)
HF_HUB_CACHE="$cache" "$cpuft" train --model_name_or_path google-bert/bert-tiny "${hub_line[@]}" \
  --output_dir "$work/out7" >"$work/7.log" 2>&1 && pass || fail "hub name in HF_HUB_CACHE: $(tail -3 "$work/7.log")"
env -u HF_HUB_CACHE HF_HOME="$work/hf" "$cpuft" train --model_name_or_path bert-tiny "${hub_line[@]}" \
  --output_dir "$work/out7b" >"$work/7b.log" 2>&1 && pass ||
  fail "renamed hub name via HF_HOME: $(tail -3 "$work/7b.log")"
HF_HUB_CACHE="$cache" "$cpuft" train --model_name_or_path google-bert/bert-tiny --model_revision v2 \
  "${hub_line[@]}" --output_dir "$work/out7c" >/dev/null 2>"$work/7c.err"
[ $? = 1 ] && [ "$(wc -l <"$work/7c.err")" = 1 ] && grep -q "revision 'v2' is not in the Hugging Face cache (looked in $repo)" "$work/7c.err" &&
  [ ! -e "$work/out7c" ] && pass || fail "missing revision: $(cat "$work/7c.err")"

# 8. --local_rank that contradicts the launcher (one process: rank 0) is a usage error.
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --max_steps 1 --local_rank 3 \
  --output_dir "$work/out8" >/dev/null 2>"$work/8.err"
[ $? = 2 ] && grep -q "^error: --local_rank 3 contradicts the launcher" "$work/8.err" && pass ||
  fail "contradicting --local_rank: $(cat "$work/8.err")"

# 9. The optimizer, schedule and loss flags: --optim sgd --optim_args, --lr_scheduler_type with
#    --lr_scheduler_kwargs, --label_smoothing_factor; a bad schedule argument is a usage error.
out9="$work/out9"
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --max_steps 4 --max_seq_length 64 \
  --optim sgd --optim_args "momentum=0.9,nesterov=True" --lr_scheduler_type polynomial \
  --lr_scheduler_kwargs '{"power": 2.0}' --label_smoothing_factor 0.1 --output_dir "$out9" \
  >"$work/9.log" 2>&1 && pass || fail "sgd/polynomial/label smoothing: $(tail -3 "$work/9.log")"
python3 - "$out9" <<'EOF' && pass || fail "training_args.json lacks the optimizer flags"
import json, sys
a = json.load(open(f"{sys.argv[1]}/training_args.json"))
assert a["optim"] == "sgd" and a["optim_args"] == "momentum=0.9,nesterov=True", a
assert a["lr_scheduler_type"] == "polynomial" and a["label_smoothing_factor"] == 0.1, a
EOF
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --max_steps 4 \
  --lr_scheduler_type polynomial --lr_scheduler_kwargs '{"powr": 2}' --output_dir "$work/out9b" \
  >/dev/null 2>"$work/9b.err"
[ $? = 2 ] && [ "$(wc -l <"$work/9b.err")" = 1 ] && grep -q "powr" "$work/9b.err" && pass ||
  fail "bad --lr_scheduler_kwargs: $(cat "$work/9b.err")"

# 10. GLUE as run_glue.py's users have it: --dataset_name glue --dataset_config_name mrpc from the
#     Hugging Face hub cache's parquet files (the committed fixture is laid out as that cache).
out10="$work/out10"
HF_HUB_CACHE="$(cd "$(dirname "$0")/../fixtures/glue_parquet/hub" && pwd)" "$cpuft" train \
  --model_name_or_path "$M" --dataset_name glue --dataset_config_name mrpc --do_train --do_eval \
  --max_steps 2 --max_seq_length 64 --output_dir "$out10" >"$work/10.log" 2>&1
status=$?
if grep -q "built without Apache Arrow" "$work/10.log"; then
  echo "note: this build has no Arrow; the parquet line was not run"
elif [ $status = 0 ] && grep -q "^data: Hugging Face hub cache, nyu-mll/glue at main" "$work/10.log"; then
  pass
else
  fail "GLUE from the hub cache's parquet files: $(tail -3 "$work/10.log")"
fi

# 11. --report_to tensorboard: event files under output_dir/runs/DATE_HOST, read back with
#     TensorBoard's own reader when scripts/fetch_tensorboard.sh has put it in the cache.
out11="$work/out11"
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --do_eval --max_steps 4 \
  --max_seq_length 64 --logging_steps 2 --eval_strategy steps --eval_steps 4 \
  --report_to tensorboard --output_dir "$out11" >"$work/11.log" 2>&1 && pass ||
  fail "--report_to tensorboard: $(tail -3 "$work/11.log")"
events=$(ls "$out11"/runs/*/events.out.tfevents.* 2>/dev/null | head -1)
[ -s "$events" ] && pass || fail "no event file under $out11/runs"
tb_dir="${CPUFT_TENSORBOARD_DIR:-$HOME/.cache/cpuft/tensorboard-2.21.0}"
if [ -d "$tb_dir/tensorboard" ] && [ -n "$events" ]; then
  PYTHONPATH="$tb_dir" /usr/bin/python3 - "$events" <<'EOF' && pass || fail "TensorBoard's reader: see above"
import sys
from tensorboard.backend.event_processing import event_accumulator
acc = event_accumulator.EventAccumulator(sys.argv[1])
acc.Reload()
tags = acc.Tags()["scalars"]
for tag in ("train/loss", "train/learning_rate", "train/grad_norm", "eval/accuracy", "eval/loss"):
    assert tag in tags, (tag, tags)
assert [e.step for e in acc.Scalars("train/loss")] == [2, 4], acc.Scalars("train/loss")
assert [e.step for e in acc.Scalars("eval/accuracy")][0] == 4
EOF
else
  echo "note: TensorBoard's reader not fetched (scripts/fetch_tensorboard.sh); event file only"
fi

# 12. --eval_on_start, --eval_delay, --logging_first_step, --dataloader_drop_last, fractional
#     --eval_steps: the log history shows each (256 pairs, batch 48: 5 full batches an epoch).
out12="$work/out12"
"$cpuft" train --model_name_or_path "$M" --task_name mrpc --do_train --max_seq_length 64 \
  --per_device_train_batch_size 48 --dataloader_drop_last --num_train_epochs 2 --eval_on_start \
  --eval_strategy steps --eval_steps 0.2 --eval_delay 4 --logging_first_step --logging_steps 5 \
  --save_strategy no --output_dir "$out12" >"$work/12.log" 2>&1 && pass ||
  fail "eval_on_start etc.: $(tail -3 "$work/12.log")"
python3 - "$out12" <<'EOF' && pass || fail "log history of section 12: see above"
import json, sys
state = json.load(open(f"{sys.argv[1]}/trainer_state.json"))
assert state["max_steps"] == 10, state["max_steps"]  # drop_last: 5 steps an epoch, not 6
evals = [e["step"] for e in state["log_history"] if "eval_accuracy" in e]
assert evals == [0, 4, 6, 8, 10], evals  # on start; every ceil(0.2 * 10) = 2 steps from step 4
losses = [e["step"] for e in state["log_history"] if "loss" in e]
assert losses == [1, 5, 10], losses
EOF

# 13. --config_name / --tokenizer_name from other folders, --logging_dir, --log_level error.
cp -r "$M" "$work/other_config" && rm "$work/other_config/model.safetensors"
"$cpuft" train --model_name_or_path "$M" --config_name "$work/other_config" \
  --tokenizer_name "$work/other_config" --task_name mrpc --do_train --max_steps 2 --max_seq_length 64 \
  --report_to tensorboard --logging_dir "$work/tb13" --log_level error --output_dir "$work/out13" \
  >"$work/13.log" 2>&1 && pass || fail "config_name/tokenizer_name/logging_dir: $(tail -3 "$work/13.log")"
ls "$work/tb13"/events.out.tfevents.* >/dev/null 2>&1 && pass || fail "no events in --logging_dir"
[ ! -s "$work/13.log" ] && pass || fail "--log_level error printed: $(head -3 "$work/13.log")"

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
