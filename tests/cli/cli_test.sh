#!/usr/bin/env bash
# End-to-end tests of the cpuft command line on a tiny model (see make_tiny_model.cc):
#   - fine-tuning learns a simple task (loss falls, dev accuracy >= 0.95) and writes HF's files;
#   - cpuft predict on the output folder; resuming from a checkpoint gives the same final weights;
#   - every kind of bad input gives exit code 1, exactly one "error: ..." line, and no output folder.
# Usage: cli_test.sh CPUFT MAKE_TINY_MODEL
set -uo pipefail
cpuft="$1"
make_tiny_model="$2"
work="$(mktemp -d)"
hogs=()  # 1c's busy loops, killed on any exit
trap 'kill "${hogs[@]}" 2>/dev/null; rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
# The measured compute peak (train/machine_peak.h) is cached here, not in the user's ~/.cache.
export CPUFT_PEAK_CACHE="$work/peaks.json"
# ctest runs tests side by side: a probe that shares its cores would not be cached (1c), so the
# checks of the cache accept any share here.
export CPUFT_PEAK_MIN_SHARE=0
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

"$make_tiny_model" "$work/model" --no-head || { echo "cannot make the tiny model"; exit 1; }
"$make_tiny_model" "$work/model3" --labels 3 || exit 1

# A learnable task: label 1 when the sentence says "good" or "great", else 0.
RANDOM=7
words=(the movie film is was very not and plot acting story music fun long short funny sad
       dark cast scene ending i you we they loved watched saw made one two many few some)
make_data() {  # make_data FILE ROWS
  printf 'sentence\tlabel\n' >"$1"
  for ((r = 0; r < $2; r++)); do
    s=""
    for ((k = 0; k < 6; k++)); do s+="${words[RANDOM % ${#words[@]}]} "; done
    # RANDOM only in this shell: bash reseeds it in a $(...) subshell (the data would differ from
    # run to run).
    if ((RANDOM % 2)); then
      word=good; ((RANDOM % 2)) && word=great
      printf '%s%s\t1\n' "$s" "$word" >>"$1"
    else
      word=bad; ((RANDOM % 2)) && word=dull
      printf '%s%s\t0\n' "$s" "$word" >>"$1"
    fi
  done
}
make_data "$work/train.tsv" 320
make_data "$work/dev.tsv" 64

train_flags=(--model_name_or_path "$work/model" --train_file "$work/train.tsv"
             --validation_file "$work/dev.tsv" --do_train --do_eval --max_seq_length 16
             --per_device_train_batch_size 16 --learning_rate 2e-3 --num_train_epochs 4
             --warmup_ratio 0.1 --logging_steps 10 --seed 3)

# 1. Fine-tuning converges and writes the Trainer's files.
out="$work/run"
if "$cpuft" train "${train_flags[@]}" --save_strategy no --output_dir "$out" >"$work/run.log" 2>&1; then
  pass
  for f in config.json model.safetensors vocab.txt tokenizer_config.json special_tokens_map.json \
           train_results.json eval_results.json all_results.json trainer_state.json \
           training_curves.svg log.jsonl; do
    [ -s "$out/$f" ] && pass || fail "missing $f"
  done
  accuracy=$(sed -n 's/.*"eval_accuracy": \([0-9.]*\).*/\1/p' "$out/eval_results.json")
  awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.95) }' && pass ||
    fail "dev accuracy $accuracy < 0.95 after fine-tuning"
  first=$(grep -o '"loss": [0-9.]*' "$out/trainer_state.json" | head -1 | cut -d' ' -f2)
  last=$(grep -o '"loss": [0-9.]*' "$out/trainer_state.json" | tail -1 | cut -d' ' -f2)
  awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 2) }' && pass ||
    fail "training loss did not fall: $first -> $last"
  grep -q '"architectures": \[' "$out/config.json" && grep -q BertForSequenceClassification "$out/config.json" &&
    pass || fail "config.json lacks the architecture"
  # The speed in every log line (real tokens per sequence: between 3 and the 16 of
  # --max_seq_length), and the padding avoided: 320 x 4 epochs sequences, padded to 16 tokens.
  python3 - "$out/log.jsonl" <<'PY' && pass || fail "log.jsonl lacks the speed: $(head -2 "$out/log.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(lines) >= 8, len(lines)
for e in lines:
    assert e["samples_per_second"] > 0 and 3 <= e["tokens_per_second"] / e["samples_per_second"] <= 16, e
PY
  padding=$(sed -n 's/^padding avoided: \([0-9]*\) real tokens trained; padded to --max_seq_length 16 (run_glue.py.s default) the batches would hold 20480, \([0-9.]*\)% of them padding$/\1 \2/p' "$work/run.log")
  awk -v r="${padding% *}" -v p="${padding#* }" 'BEGIN { exit !(r > 3 * 1280 && r < 20480 && p > 0 && p < 80) }' &&
    pass || fail "padding line: '$(grep '^padding' "$work/run.log")'"
  # The compute peak, measured by the first run and saved; MFU in every log entry and step line.
  grep -q "^compute peak: [0-9.]* GFLOP/s [A-Za-z0-9_ -]* on 2 threads per rank (measured now, saved to $work/peaks.json); MFU below is model FLOP/s over it$" "$work/run.log" &&
    [ -s "$work/peaks.json" ] && pass || fail "compute peak line: '$(grep '^compute peak' "$work/run.log")'"
  python3 - "$out/log.jsonl" <<'PY' && pass || fail "log.jsonl lacks mfu: $(head -1 "$out/log.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert lines and all(0 < e["mfu"] <= 1.5 for e in lines), lines
PY
  grep -qE '^step [0-9]+/[0-9]+ .* tokens/s  MFU [0-9.]+%$' "$work/run.log" && pass ||
    fail "step lines lack MFU: $(grep -m1 '^step' "$work/run.log")"
  # One start-up line, after the first step: its moments in order.
  startup=$(sed -n 's/^start-up: weights read at \([0-9.]*\) s, data tokenized at \([0-9.]*\) s, first optimizer step done at \([0-9.]*\) s (\([0-9.]*\) s after the weights were read)$/\1 \2 \3 \4/p' "$work/run.log")
  [ "$(grep -c '^start-up: ' "$work/run.log")" = 1 ] &&
    awk -v t="$startup" 'BEGIN { split(t, a, " "); exit !(a[3] > 0 && a[1] <= a[2] && a[2] <= a[3] && a[4] <= a[3]) }' &&
    pass || fail "start-up line: '$(grep '^start-up' "$work/run.log")'"
else
  fail "training failed: $(tail -3 "$work/run.log")"
fi

# 1b. The next run reads the cached peak; a cache it cannot parse is measured again and rewritten,
#     never an error.
"$cpuft" train "${train_flags[@]}" --max_steps 2 --save_strategy no --output_dir "$work/cached" \
  >"$work/cached.log" 2>&1 && grep -q "^compute peak: .* (cached in $work/peaks.json); " "$work/cached.log" &&
  pass || fail "second run did not read the cached peak: $(grep -E '^(compute|error)' "$work/cached.log")"
printf '{"broken' >"$work/peaks.json"
"$cpuft" train "${train_flags[@]}" --max_steps 2 --save_strategy no --output_dir "$work/recached" \
  >"$work/recached.log" 2>&1 && grep -q "^compute peak: .* (measured now, saved to $work/peaks.json); " "$work/recached.log" &&
  python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$work/peaks.json" &&
  pass || fail "a broken peak cache: $(grep -E '^(compute|error)' "$work/recached.log")"

# 1b'. A cached peak far below this machine's (a probe taken in a slow moment) makes MFU read above
#      100%: the run probes again once, says so, logs MFU over the new peak and caches it.
python3 - "$work/peaks.json" <<'PY'
import json, sys
cache = json.load(open(sys.argv[1]))
for entry in cache.values():
    entry["gflops"] /= 1e6
json.dump(cache, open(sys.argv[1], "w"))
PY
"$cpuft" train "${train_flags[@]}" --max_steps 3 --logging_steps 1 --save_strategy no \
  --output_dir "$work/low-peak" >"$work/low-peak.log" 2>&1 &&
  [ "$(grep -c '^compute peak: MFU read ' "$work/low-peak.log")" = 1 ] &&
  grep -qE "^compute peak: MFU read [0-9]+\.[0-9]% against [0-9]+\.[0-9] GFLOP/s, so that probe read low; probed again: [0-9]+\.[0-9] GFLOP/s [A-Za-z0-9_ -]+ \(saved to $work/peaks.json\); MFU from here on is over it$" "$work/low-peak.log" &&
  python3 - "$work/low-peak/log.jsonl" "$work/peaks.json" <<'PY' && pass || fail "an MFU above 100%: $(grep -E '^(compute|step|error)' "$work/low-peak.log")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(lines) == 3 and all(0 < e["mfu"] <= 1.5 for e in lines), lines
assert all(e["gflops"] > 1 for e in json.load(open(sys.argv[2])).values())
PY

# 1c. A probe whose threads share their cores with other processes reads low: it is used, said so
#     in the line, and not cached. Busy loops, two per core, take at least two thirds of each core
#     (four loops on two cores: 31-33%, the peak read 128 against 428 GFLOP/s quiet); a bad
#     CPUFT_PEAK_MIN_SHARE is one error line, before anything is written.
for ((i = 0; i < 2 * $(nproc); i++)); do
  (while :; do :; done) &
  hogs+=($!)
done
CPUFT_PEAK_MIN_SHARE= CPUFT_PEAK_CACHE="$work/busy-peaks.json" "$cpuft" train "${train_flags[@]}" \
  --max_steps 1 --save_strategy no --output_dir "$work/busy" >"$work/busy.log" 2>&1
busy_rc=$?
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
hogs=()
[ "$busy_rc" = 0 ] && [ ! -e "$work/busy-peaks.json" ] &&
  grep -q "^compute peak: .* (measured now, not cached: its threads got [0-9]*% of the CPU time they could have had (another process, or a CPU quota), so it reads low); " "$work/busy.log" &&
  pass || fail "a busy probe: rc $busy_rc, $(grep -E '^(compute|error)' "$work/busy.log")"
CPUFT_PEAK_MIN_SHARE=high CPUFT_PEAK_CACHE="$work/busy-peaks.json" "$cpuft" train "${train_flags[@]}" \
  --max_steps 1 --save_strategy no --output_dir "$work/bad-share" >"$work/bad-share.log" 2>&1
[ $? = 1 ] && [ "$(grep -c '^error:' "$work/bad-share.log")" = 1 ] &&
  grep -q "CPUFT_PEAK_MIN_SHARE=high" "$work/bad-share.log" && [ ! -e "$work/bad-share" ] &&
  pass || fail "CPUFT_PEAK_MIN_SHARE=high: $(cat "$work/bad-share.log")"

# 2. cpuft predict on the fine-tuned folder.
if "$cpuft" predict --model_name_or_path "$out" --test_file "$work/dev.tsv" \
     --output_dir "$work/pred" >"$work/pred.log" 2>&1; then
  [ "$(wc -l <"$work/pred/predict_results_data.txt")" = 65 ] && pass || fail "predict rows"
  [ "$(wc -l <"$work/pred/predict_logits_data.tsv")" = 65 ] && pass || fail "logit rows"
else
  fail "predict failed: $(tail -3 "$work/pred.log")"
fi

# 2b. The progress bar: drawn on a terminal (script(1) gives the run a pseudo-terminal), not with
#     --disable_tqdm, never off a terminal (the log files above).
if command -v script >/dev/null; then
  bar_flags="${train_flags[*]} --max_steps 3 --save_strategy no"
  script -qec "'$cpuft' train $bar_flags --output_dir '$work/bar'" /dev/null >"$work/bar.log" 2>&1
  grep -q "samples/s" "$work/bar.log" && grep -q $'\r\\[' "$work/bar.log" && pass ||
    fail "no progress bar on a terminal: $(tail -2 "$work/bar.log")"
  if script -qec "'$cpuft' train $bar_flags --disable_tqdm --output_dir '$work/nobar'" /dev/null \
    >"$work/nobar.log" 2>&1; then
    grep -q $'\r\\[' "$work/nobar.log" && fail "--disable_tqdm still drew the bar" || pass
  else
    fail "--disable_tqdm run failed: $(tail -2 "$work/nobar.log")"
  fi
  grep -q $'\r\\[' "$work/run.log" && fail "progress bar drawn off a terminal" || pass
fi

# 3. Checkpoints: rotation, and resuming from one gives bit-identical final weights.
full="$work/full" resumed="$work/resumed"
"$cpuft" train "${train_flags[@]}" --save_steps 20 --save_total_limit 3 --output_dir "$full" \
  >"$work/full.log" 2>&1 || fail "checkpointed run failed: $(tail -3 "$work/full.log")"
# 20 batches an epoch x 4 epochs = 80 steps: checkpoints 20 40 60 80, the oldest deleted.
[ "$(cd "$full" && ls -d checkpoint-* 2>/dev/null | sort -t- -k2 -n | tr '\n' ' ')" = \
  "checkpoint-40 checkpoint-60 checkpoint-80 " ] && pass || fail "save_total_limit 3 kept: $(ls "$full")"
"$cpuft" train "${train_flags[@]}" --save_strategy no --output_dir "$resumed" \
  --resume_from_checkpoint "$full/checkpoint-40" >"$work/resume.log" 2>&1 ||
  fail "resume failed: $(tail -3 "$work/resume.log")"
cmp -s "$full/model.safetensors" "$resumed/model.safetensors" && pass ||
  fail "resumed run's weights differ from the uninterrupted run's"
# Resuming with another batch per device (the data order would not continue), or a checkpoint at
# or beyond this run's last step: refused in one line.
"$cpuft" train "${train_flags[@]}" --per_device_train_batch_size 8 --save_strategy no \
  --output_dir "$work/resume_batch" --resume_from_checkpoint "$full/checkpoint-40" \
  >/dev/null 2>"$work/stderr"
[ $? = 1 ] && [ "$(wc -l <"$work/stderr")" = 1 ] &&
  grep -q "trained with 16 sequences per device x 1 rank(s) x 1 accumulation; this run has 8 x 1 x 1" "$work/stderr" &&
  pass || fail "resume with another batch: $(cat "$work/stderr")"
"$cpuft" train "${train_flags[@]}" --max_steps 40 --save_strategy no --output_dir "$work/resume_end" \
  --resume_from_checkpoint "$full/checkpoint-40" >/dev/null 2>"$work/stderr"
[ $? = 1 ] && grep -q "the checkpoint is at step 40, and this run stops at step 40" "$work/stderr" &&
  pass || fail "resume at the last step: $(cat "$work/stderr")"

# 3b. --bf16 (bf16 encoder products): converges as fp32 does, predict runs, resuming gives
#     bit-identical weights (the bf16 copy is re-rounded after the checkpoint is loaded). On a CPU
#     without AVX512_BF16/AMX it must be refused in one line instead.
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  bf="$work/bf16" bf_full="$work/bf16_full" bf_resumed="$work/bf16_resumed"
  if "$cpuft" train "${train_flags[@]}" --bf16 --save_strategy no --output_dir "$bf" \
       >"$work/bf16.log" 2>&1; then
    grep -q "bf16 matrix products" "$work/bf16.log" && pass || fail "bf16 run did not say bf16"
    accuracy=$(sed -n 's/.*"eval_accuracy": \([0-9.]*\).*/\1/p' "$bf/eval_results.json")
    awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.95) }' && pass ||
      fail "--bf16 dev accuracy $accuracy < 0.95 after fine-tuning"
    cmp -s "$bf/model.safetensors" "$out/model.safetensors" &&
      fail "--bf16 gave the fp32 run's weights bit for bit" || pass
    "$cpuft" predict --model_name_or_path "$bf" --test_file "$work/dev.tsv" --bf16 \
      --output_dir "$work/bf16_pred" >"$work/bf16_pred.log" 2>&1 &&
      [ "$(wc -l <"$work/bf16_pred/predict_results_data.txt")" = 65 ] && pass ||
      fail "predict --bf16: $(tail -3 "$work/bf16_pred.log")"
  else
    fail "--bf16 training failed: $(tail -3 "$work/bf16.log")"
  fi
  "$cpuft" train "${train_flags[@]}" --bf16 --save_steps 40 --output_dir "$bf_full" \
    >"$work/bf16_full.log" 2>&1 || fail "bf16 checkpointed run failed: $(tail -3 "$work/bf16_full.log")"
  "$cpuft" train "${train_flags[@]}" --bf16 --save_strategy no --output_dir "$bf_resumed" \
    --resume_from_checkpoint "$bf_full/checkpoint-40" >"$work/bf16_resume.log" 2>&1 ||
    fail "bf16 resume failed: $(tail -3 "$work/bf16_resume.log")"
  cmp -s "$bf_full/model.safetensors" "$bf_resumed/model.safetensors" && pass ||
    fail "--bf16: resumed run's weights differ from the uninterrupted run's"
else
  "$cpuft" train "${train_flags[@]}" --bf16 --output_dir "$work/bf16" >/dev/null 2>"$work/stderr"
  [ $? = 1 ] && grep -q "^error: --bf16 needs a CPU with AVX512_BF16" "$work/stderr" &&
    [ "$(wc -l <"$work/stderr")" = 1 ] && [ ! -e "$work/bf16" ] && pass ||
    fail "--bf16 on a CPU without bf16: $(cat "$work/stderr")"
fi

# 4. Bad input: exit code 1 (2 for a usage error: bad flag value or combination), one line
#    "error: ...", no output folder.
expect_error() {  # expect_error NAME SUBSTRING ARGS...   (want_code: 1 unless set)
  local name="$1" want="$2" want_code="${want_code:-1}"
  shift 2
  local dir="$work/bad-$name"
  "$cpuft" "$@" --output_dir "$dir" >"$work/stdout" 2>"$work/stderr"
  local code=$?
  local lines
  lines=$(wc -l <"$work/stderr")
  if [ "$code" != "$want_code" ]; then
    fail "$name: exit code $code (want $want_code): $(cat "$work/stderr")"; return
  fi
  if [ "$lines" != 1 ]; then fail "$name: $lines lines on stderr: $(cat "$work/stderr")"; return; fi
  if ! grep -q "^error: .*$want" "$work/stderr"; then
    fail "$name: message lacks '$want': $(cat "$work/stderr")"; return
  fi
  if [ -e "$dir" ]; then fail "$name: created the output folder"; return; fi
  pass
}
base=(train --model_name_or_path "$work/model" --do_train --max_seq_length 16)
files=(--train_file "$work/train.tsv" --validation_file "$work/dev.tsv")

expect_error missing-model "nope" train --model_name_or_path "$work/nope" "${files[@]}" --do_train
expect_error missing-data "missing.tsv" "${base[@]}" --train_file "$work/missing.tsv"
printf 'sentence\tlabel\nthe movie\t1\nthe film\n' >"$work/short_row.tsv"
expect_error short-row "short_row.tsv:3" "${base[@]}" --train_file "$work/short_row.tsv"
printf 'sentence\tlabel\nthe movie\t1\nthe \xff film\t0\n' >"$work/bad_utf8.tsv"
expect_error invalid-utf8 "UTF-8" "${base[@]}" --train_file "$work/bad_utf8.tsv"
printf 'sentence\tlabel\n' >"$work/empty.tsv"
expect_error empty-split "empty.tsv" "${base[@]}" --train_file "$work/empty.tsv"
expect_error unknown-task "unknown task" "${base[@]}" --task_name mrpcc --data_dir "$work"
mkdir -p "$work/glue/MRPC"
printf '\xef\xbb\xbfQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n2\t1\t2\tthe movie\tthe film\n' \
  >"$work/glue/MRPC/train.tsv"
expect_error bad-label "label" "${base[@]}" --task_name mrpc --data_dir "$work/glue"
mkdir -p "$work/glue/STS-B"
printf 'index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n0\tg\tf\ty\t0\ts\ts\tthe movie\tthe film\tmany\n' \
  >"$work/glue/STS-B/train.tsv"
expect_error bad-score "score" "${base[@]}" --task_name stsb --data_dir "$work/glue"
expect_error label-count "labels" train --model_name_or_path "$work/model3" --do_train --task_name mrpc \
  --data_dir "$(dirname "$0")/../../data/glue" --max_seq_length 16
mkdir -p "$work/full_dir" && touch "$work/full_dir/x"
"$cpuft" "${base[@]}" "${files[@]}" --output_dir "$work/full_dir" >/dev/null 2>"$work/stderr"
[ $? = 1 ] && grep -q "overwrite_output_dir" "$work/stderr" && [ "$(wc -l <"$work/stderr")" = 1 ] &&
  pass || fail "non-empty output_dir: $(cat "$work/stderr")"
want_code=2 expect_error both-sources "not both" "${base[@]}" "${files[@]}" --task_name mrpc --data_dir "$work"
want_code=2 expect_error nothing-to-do "nothing to do" train --model_name_or_path "$work/model" "${files[@]}"
want_code=2 expect_error bad-batch "per_device_train_batch_size" "${base[@]}" "${files[@]}" \
  --per_device_train_batch_size 0
cp -r "$work/model" "$work/truncated"
head -c 5000 "$work/model/model.safetensors" >"$work/truncated/model.safetensors"
expect_error truncated-weights "model.safetensors" train --model_name_or_path "$work/truncated" \
  --do_train "${files[@]}"
cp -r "$work/model" "$work/badcfg"
sed -i 's/"hidden_size": 32/"hidden_size": "32"/' "$work/badcfg/config.json"
expect_error bad-config "hidden_size" train --model_name_or_path "$work/badcfg" --do_train "${files[@]}"

# Sizes are checked before anything large is allocated: a config beyond any machine, or beyond this
# one's memory, is refused in one line saying what it would need.
make_config() {  # make_config NAME PYTHON-ASSIGNMENTS: a copy of the tiny model with config changes
  cp -r "$work/model" "$work/$1"
  python3 -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); $2; json.dump(c, open(p, 'w'))" \
    "$work/$1/config.json"
}
make_config wide "c['hidden_size'] = 1 << 20; c['num_attention_heads'] = 1; c['intermediate_size'] = 1"
expect_error memory "9.9e+12 parameters with their gradients and optimizer state need 158333 GB, but .* of memory are available" \
  train --model_name_or_path "$work/wide" --do_train "${files[@]}"
make_config absurd "c['hidden_size'] = 1 << 40; c['num_attention_heads'] = 1"
expect_error absurd-config "absurd/config.json: the sizes make a model of ~.* parameters, above cpuft.s limit" train --model_name_or_path "$work/absurd" \
  --do_train "${files[@]}"
make_config deep "c['num_hidden_layers'] = 1000000000"
expect_error absurd-layers "field 'num_hidden_layers' (1000000000) is above cpuft.s limit of 10000" train --model_name_or_path "$work/deep" \
  --do_train "${files[@]}"
# A batch larger than the data set is the data set (as HF's loader): one step per epoch, no crash.
"$cpuft" "${base[@]}" "${files[@]}" --per_device_train_batch_size 1073741824 --max_steps 2 \
  --save_strategy no --output_dir "$work/huge_batch" >"$work/huge_batch.log" 2>&1 &&
  grep -q "320 examples, 2 epochs, 1 rank(s) x batch 1073741824" "$work/huge_batch.log" && pass ||
  fail "batch larger than the data: $(tail -2 "$work/huge_batch.log")"
mkfifo "$work/fifo.tsv"  # a FIFO (or a device) would block or never end
expect_error data-fifo "fifo.tsv: not a regular file" "${base[@]}" --train_file "$work/fifo.tsv"
# Labels pandas would read as NaN, and a single class, are refused naming the row or the file.
{ printf 'sentence\tlabel\n'; printf 'the movie\t0.5\nthe film\tnan\nthe plot\t1.5\n'; } >"$work/nan_label.tsv"
expect_error nan-label "nan_label.tsv.*label 'nan' is missing or not finite" "${base[@]}" \
  --train_file "$work/nan_label.tsv"
{ printf 'sentence\tlabel\n'; printf 'the movie\t1\nthe film\t1\n'; } >"$work/one_label.tsv"
expect_error one-label "every label is '1'; a classifier needs at least two classes" "${base[@]}" \
  --train_file "$work/one_label.tsv"
# Folders that could not be written are found before the run, not after it.
"$cpuft" "${base[@]}" "${files[@]}" --output_dir "$work/train.tsv/out" >/dev/null 2>"$work/stderr"
[ $? = 1 ] && [ "$(wc -l <"$work/stderr")" = 1 ] &&
  grep -q "^error: --output_dir .*train.tsv is not a folder" "$work/stderr" && pass ||
  fail "output folder under a file: $(cat "$work/stderr")"
expect_error timeline-not-folder "--timeline_dir .*train.tsv is not a folder" "${base[@]}" "${files[@]}" \
  --timeline_dir "$work/train.tsv/timeline"

# A diverging run stops at the first non-finite step, in one line, and writes no model.
"$cpuft" "${base[@]}" "${files[@]}" --learning_rate 1e30 --save_strategy no \
  --output_dir "$work/nan" >/dev/null 2>"$work/stderr"
[ $? = 1 ] && [ "$(wc -l <"$work/stderr")" = 1 ] &&
  grep -q "^error: step [0-9]*: the loss (.*) or gradient norm (.*) is not finite" "$work/stderr" &&
  [ ! -e "$work/nan/model.safetensors" ] && pass || fail "non-finite training: $(cat "$work/stderr")"
want_code=2 expect_error unknown-flag "unknown flag --learning_rte (did you mean --learning_rate?)" \
  "${base[@]}" "${files[@]}" --learning_rte 1
want_code=2 expect_error bad-value "--max_steps: expected an integer, got 'ten'" \
  "${base[@]}" "${files[@]}" --max_steps ten
want_code=2 expect_error refused-fp16 "use --bf16" "${base[@]}" "${files[@]}" --fp16 True

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
