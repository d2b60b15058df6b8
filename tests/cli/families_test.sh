#!/usr/bin/env bash
# Each encoder family end to end through the command line, ModernBERT and DeBERTa included (tiny
# models made from the golden fixtures by make_tiny_model --family): fine-tuning learns a simple
# task, the output folder names the family's *ForSequenceClassification, predict reads it back, and
# a checkpoint resumes to the same final weights as an unbroken run.
# Usage: families_test.sh CPUFT MAKE_TINY_MODEL FIXTURES_DIR
set -uo pipefail
cpuft="$1"
make_tiny_model="$2"
fixtures="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

# A learnable task: label 1 when the sentence says "good" or "great", else 0.
RANDOM=11
words=(the movie film is was very not and plot acting story music fun long short funny sad
       dark cast scene ending i you we they loved watched saw made one two many few some)
make_data() {  # make_data FILE ROWS
  printf 'sentence\tlabel\n' >"$1"
  for ((r = 0; r < $2; r++)); do
    s=""
    for ((k = 0; k < 6; k++)); do s+="${words[RANDOM % ${#words[@]}]} "; done
    # RANDOM only in this shell: bash reseeds it in a $(...) subshell, which made the data (and
    # the accuracies) differ from run to run.
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

# family, architecture, extra make_tiny_model flags (EPOCHS=N run_family ...: N epochs, else 4;
# NAME=x run_family ...: x names the run's files and messages, else the family)
run_family() {
  local family="$1" architecture="$2" epochs="${EPOCHS:-4}" name="${NAME:-$1}"
  shift 2
  local model="$work/$name-model" out="$work/$name-run"
  "$make_tiny_model" "$model" --family "$family" --no-head "$@" >/dev/null ||
    { fail "$name: cannot make the tiny model"; return; }
  local flags=(--model_name_or_path "$model" --train_file "$work/train.tsv"
               --validation_file "$work/dev.tsv" --do_train --do_eval --max_seq_length 16
               --per_device_train_batch_size 16 --learning_rate 2e-3 --num_train_epochs "$epochs"
               --warmup_ratio 0.1 --logging_steps 10 --seed 3)
  if ! "$cpuft" train "${flags[@]}" --save_strategy steps --save_steps 40 \
      --output_dir "$out" >"$work/$name.log" 2>&1; then
    fail "$name: training failed"; tail -5 "$work/$name.log"; return
  fi
  pass
  accuracy=$(sed -n 's/.*"eval_accuracy": \([0-9.]*\).*/\1/p' "$out/eval_results.json")
  awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.9) }' && pass ||
    fail "$name: dev accuracy $accuracy < 0.9 after fine-tuning"
  grep -q "\"$architecture\"" "$out/config.json" && pass ||
    fail "$name: config.json does not name $architecture"
  if "$cpuft" predict --model_name_or_path "$out" --test_file "$work/dev.tsv" \
      --output_dir "$work/$name-pred" >"$work/$name-pred.log" 2>&1; then
    pass
  else
    fail "$name: predict failed"; tail -3 "$work/$name-pred.log"
  fi
  # Resume from the first checkpoint: the same final weights as the unbroken run.
  local resumed="$work/$name-resumed"
  cp -r "$out" "$resumed"
  if "$cpuft" train "${flags[@]}" --save_strategy steps --save_steps 40 --output_dir "$resumed" \
      --overwrite_output_dir --resume_from_checkpoint "$resumed/checkpoint-40" \
      >"$work/$name-resume.log" 2>&1; then
    cmp -s "$out/model.safetensors" "$resumed/model.safetensors" && pass ||
      fail "$name: resumed weights differ from the unbroken run's"
  else
    fail "$name: resume failed"; tail -3 "$work/$name-resume.log"
  fi
}

run_family distilbert DistilBertForSequenceClassification
run_family electra ElectraForSequenceClassification
# DeBERTa-v3's layout (no position or type table, relative attention with log buckets), with the
# WordPiece vocabulary of the other tiny models.
run_family deberta DebertaV2ForSequenceClassification
if [ -d "$fixtures/tokenizers/roberta_bpe" ]; then
  vocab=$(python3 -c 'import json,sys; print(max(json.load(open(sys.argv[1])).values()) + 1)' \
          "$fixtures/tokenizers/roberta_bpe/vocab.json")
  # Without dropout: this tiny random RoBERTa with dropout 0.1 learns the task slowly in any
  # engine (transformers, same data and schedule, seeds 1-3: dev accuracy 0.73-0.86). Without
  # dropout, on this data: 0.92 after 4 epochs, 0.98 after 6, 1.0 after 8.
  EPOCHS=8 run_family roberta RobertaForSequenceClassification \
    --tokenizer "$fixtures/tokenizers/roberta_bpe" --vocab_size "$vocab" --no-dropout
fi
if [ -d "$fixtures/tokenizers/nfc_bpe" ]; then
  # A tokenizer of ModernBERT's kind (byte-level BPE, NFC normalizer, [CLS] A [SEP]), 5006 ids.
  run_family modernbert ModernBertForSequenceClassification \
    --tokenizer "$fixtures/tokenizers/nfc_bpe" --vocab_size 5006 --no-dropout
fi
if [ -d "$fixtures/tokenizers/xlmr_unigram" ]; then
  # Its 9000-row word table (8901 small random rows beyond the fixture's) learns the task more
  # slowly: after 4 epochs seeds 1-7 reach dev accuracy 0.875-0.97, two of them under 0.9, so any
  # change of the trajectory failed the test (once on CI, where a rerun passed); after 8 epochs
  # seeds 1-8 reach 0.98-1.
  EPOCHS=8 run_family xlm_roberta XLMRobertaForSequenceClassification \
    --tokenizer "$fixtures/tokenizers/xlmr_unigram" --vocab_size 9000
fi
if [ -d "$fixtures/tokenizers/deberta_v3_unigram" ]; then
  # DeBERTa-v3 with its own kind of tokenizer: spm.model read as DebertaV2Tokenizer (8000 pieces,
  # [MASK] = 8000).
  NAME=deberta_spm run_family deberta DebertaV2ForSequenceClassification \
    --tokenizer "$fixtures/tokenizers/deberta_v3_unigram" --vocab_size 8001
fi

# DeBERTa with share_att_key false (HF's default): each layer's own pos_query_proj / pos_key_proj.
NAME=deberta_separate run_family deberta DebertaV2ForSequenceClassification \
  --fixture golden_tiny_deberta_separate.safetensors
grep -q '"share_att_key": false' "$work/deberta_separate-run/config.json" && pass ||
  fail "deberta_separate: the output config lost share_att_key false"

# DeBERTa-v2-xlarge's convolution after layer 0 (conv_kernel_size 3, conv_act gelu).
NAME=deberta_conv run_family deberta DebertaV2ForSequenceClassification \
  --fixture golden_tiny_deberta_conv.safetensors
grep -q '"conv_kernel_size": 3' "$work/deberta_conv-run/config.json" && pass ||
  fail "deberta_conv: the output config lost conv_kernel_size"

# DeBERTa with tables narrower than its layers (embedding_size 16 < 32: embed_proj), position and
# type tables.
NAME=deberta_proj run_family deberta DebertaV2ForSequenceClassification \
  --fixture golden_tiny_deberta_proj.safetensors

# A DeBERTa config with an option cpuft does not implement (a grouped convolution) is refused in
# one line naming the field, before anything is written.
"$make_tiny_model" "$work/deberta-groups" --family deberta --no-head \
  --fixture golden_tiny_deberta_conv.safetensors >/dev/null
sed -i 's/"conv_kernel_size": 3/"conv_kernel_size": 3, "conv_groups": 2/' \
  "$work/deberta-groups/config.json"
if "$cpuft" train --model_name_or_path "$work/deberta-groups" --train_file "$work/train.tsv" \
    --do_train --max_steps 1 --output_dir "$work/deberta-groups-run" >"$work/groups.log" 2>&1; then
  fail "a DeBERTa config with conv_groups 2 was accepted"
else
  [ "$(grep -c '^error:' "$work/groups.log")" = 1 ] && grep -q "conv_groups" "$work/groups.log" &&
    [ ! -e "$work/deberta-groups-run" ] && pass ||
    fail "conv_groups 2: $(cat "$work/groups.log")"
fi

# Weights as hubs ship them: a sharded checkpoint loads; a folder of pickles is refused in one line
# with the conversion command.
if "$cpuft" inspect "$fixtures/sharded_tiny" >"$work/sharded.log" 2>&1 &&
    grep -q "parameters: 5843 in 41 tensors" "$work/sharded.log"; then
  pass
else
  fail "sharded checkpoint: $(tail -1 "$work/sharded.log")"
fi
mkdir -p "$work/pickled"
cp "$fixtures/sharded_tiny/config.json" "$work/pickled/"
printf 'not a pickle' >"$work/pickled/pytorch_model.bin"
if "$cpuft" inspect "$work/pickled" >"$work/pickled.log" 2>&1; then
  fail "a pytorch_model.bin folder was accepted"
else
  [ "$(grep -c '^error:' "$work/pickled.log")" = 1 ] && grep -q "save_pretrained" "$work/pickled.log" &&
    pass || fail "pickle refusal: $(cat "$work/pickled.log")"
fi

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
