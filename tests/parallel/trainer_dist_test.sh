#!/usr/bin/env bash
# cpuft train across ranks, end to end on a tiny dropout-free model:
#   1. 2 ranks x batch 8 give the same losses and weights as 1 rank x batch 16 (and 2 ranks x
#      batch 4 x 2 accumulation steps the same again); the same for DistilBERT, ELECTRA, RoBERTa;
#   2. the same job across two "hosts" (network namespaces, TCP) gives bit-identical weights to the
#      2-rank job on one host;
#   3. a rank killed with SIGKILL mid-training ends the whole job within 30 s, with a message;
#      ranks started with different arguments all stop, rank 0 naming the difference;
#   4. srun on a one-node Slurm cluster (tests/parallel/slurm_one_node.sh) gives the same weights, bit
#      for bit, as mpirun;
#   5. (WITH_CCL=1) the oneCCL backend, under mpirun and under torchrun-style variables (one host and
#      two network-namespace hosts), gives weights bit-identical to the MPI backend's;
#   6. with dropout on, the split of the global batch changes nothing either (dropout masks follow
#      each sequence's number in the step): 1 rank x 16 = 2 ranks x 8 = 2 x 4 x 2 accumulation,
#      and a checkpoint resumed on another world size with the same global batch (2 -> 1, 1 -> 2
#      ranks) ends with the weights of the unbroken run (1e-5, tests/parallel/same_weights.py).
# Usage: trainer_dist_test.sh CPUFT MAKE_TINY_MODEL MPIRUN NETNS_HOSTS_SCRIPT [WITH_CCL]
set -uo pipefail
cpuft="$1" make_tiny_model="$2" mpirun="$3" netns="$4" with_ccl="${5:-0}"
torchrun="$(dirname "$0")/torchrun_style.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

"$make_tiny_model" "$work/model" --no-head --no-dropout || exit 1
RANDOM=11
words=(the movie film is was very not and plot acting story good bad great dull fun long)
{
  printf 'sentence\tlabel\n'
  for ((r = 0; r < 96; r++)); do
    s=""
    for ((k = 0; k < 3 + RANDOM % 8; k++)); do s+="${words[RANDOM % ${#words[@]}]} "; done
    printf '%s\t%d\n' "$s" $((RANDOM % 2))
  done
} >"$work/data.tsv"

common=(--model_name_or_path "$work/model" --train_file "$work/data.tsv" --validation_file
        "$work/data.tsv" --do_train --do_eval --max_seq_length 16 --learning_rate 1e-3
        --logging_steps 1 --save_strategy no --weight_decay 0.01)
flags=("${common[@]}" --max_steps 5)
value() { sed -n "s/.*\"$2\": \\([-0-9.e]*\\).*/\\1/p" "$1/all_results.json"; }
close() {  # close A B: |A - B| <= 1e-5 |B|
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
                                   exit !(d <= 1e-5 * m && a != "") }'
}

OMP_NUM_THREADS=1 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 16 \
  --output_dir "$work/one" >"$work/one.log" 2>&1 || fail "1 rank: $(tail -2 "$work/one.log")"
"${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/two" >"$work/two.log" 2>&1 || fail "2 ranks: $(tail -2 "$work/two.log")"
"${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 4 \
  --gradient_accumulation_steps 2 --output_dir "$work/accum" >"$work/accum.log" 2>&1 ||
  fail "2 ranks with accumulation: $(tail -2 "$work/accum.log")"
for run in two accum; do
  for key in train_loss eval_loss; do
    a=$(value "$work/$run" $key) b=$(value "$work/one" $key)
    close "$a" "$b" && pass || fail "$run: $key $a differs from 1 rank's $b"
  done
done
grep -q "rank 1: openmpi: rank 1 of 2" "$work/two.log" && pass || fail "rank layout not printed"

# 1a. Every other encoder family (model/family.h) the same way: 2 ranks x batch 8 = 1 rank x 16.
fixtures="$(dirname "$0")/../fixtures"
for family in distilbert electra roberta; do
  extra=()
  [ "$family" = roberta ] && extra=(--tokenizer "$fixtures/tokenizers/roberta_bpe" --vocab_size 5001)
  "$make_tiny_model" "$work/model_$family" --family "$family" --no-head --no-dropout "${extra[@]}" \
    >/dev/null || { fail "$family: cannot make the model"; continue; }
  fam_flags=("${flags[@]}")
  fam_flags[1]="$work/model_$family"
  OMP_NUM_THREADS=1 "$cpuft" train "${fam_flags[@]}" --per_device_train_batch_size 16 \
    --output_dir "$work/one_$family" >"$work/one_$family.log" 2>&1 ||
    fail "$family 1 rank: $(tail -2 "$work/one_$family.log")"
  "${mpi[@]}" -np 2 "$cpuft" train "${fam_flags[@]}" --per_device_train_batch_size 8 \
    --output_dir "$work/two_$family" >"$work/two_$family.log" 2>&1 ||
    fail "$family 2 ranks: $(tail -2 "$work/two_$family.log")"
  for key in train_loss eval_loss; do
    a=$(value "$work/two_$family" $key) b=$(value "$work/one_$family" $key)
    close "$a" "$b" && pass || fail "$family 2 ranks: $key $a differs from 1 rank's $b"
  done
done

# 1b. --bf16 across ranks (where the CPU has bf16 products). The first step's gradients are the
#     same as one rank's up to the all-reduce's summation order: their norm within 1e-6 (measured
#     6.5e-9 on a Xeon with AMX), where bf16 against fp32 is 1.4e-3 apart. Later steps part:
#     AdamW turns last-bit differences of near-zero gradients into full-size updates and a
#     rounded weight copy turns a last-bit weight difference into a 2^-8 one, so after 5 steps
#     eval_loss differs by up to 2.4e-4 relative (measured there; bf16 against fp32: 2.6e-4), even
#     between 1 rank x 8 x 2 accumulation and 2 ranks x 8, whose products have the same shapes.
#     The end of training is then held to 1e-3: the same training, not the same last bits.
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  OMP_NUM_THREADS=1 "$cpuft" train "${flags[@]}" --bf16 --per_device_train_batch_size 16 \
    --output_dir "$work/one_bf16" >"$work/one_bf16.log" 2>&1 ||
    fail "1 rank --bf16: $(tail -2 "$work/one_bf16.log")"
  "${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --bf16 --per_device_train_batch_size 8 \
    --output_dir "$work/two_bf16" >"$work/two_bf16.log" 2>&1 ||
    fail "2 ranks --bf16: $(tail -2 "$work/two_bf16.log")"
  first_norm() { sed -n 's/.*"grad_norm": \([-0-9.e]*\).*/\1/p' "$1/trainer_state.json" | head -1; }
  a=$(first_norm "$work/two_bf16") b=$(first_norm "$work/one_bf16") c=$(first_norm "$work/one")
  awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { d = a - b; if (d < 0) d = -d; e = c - b; if (e < 0) e = -e;
                                             exit !(a != "" && d <= 1e-6 * b && e >= 1e-4 * b) }' &&
    pass || fail "--bf16 2 ranks: first grad_norm $a, 1 rank's $b (fp32's $c)"
  for key in train_loss eval_loss; do
    a=$(value "$work/two_bf16" $key) b=$(value "$work/one_bf16" $key)
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-3 * b) }' &&
      pass || fail "--bf16 2 ranks: $key $a differs from 1 rank's $b"
  done
fi

# 1c. --gradient_exchange_dtype bfloat16 (DDP's bf16 compression): the gradients travel rounded
#     to bf16, so the first step's gradient norm is near the fp32 exchange's but not equal to it
#     (measured 1.1e-5 relative apart on this tiny model; a bf16 rounding is at most 2^-8 of each
#     rank's share) and training ends the same (eval_loss measured 2e-7 apart).
"${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --gradient_exchange_dtype bfloat16 --output_dir "$work/two_bf16x" >"$work/two_bf16x.log" 2>&1 ||
  fail "2 ranks, bf16 exchange: $(tail -2 "$work/two_bf16x.log")"
norm1() { sed -n 's/.*"grad_norm": \([-0-9.e]*\).*/\1/p' "$1/trainer_state.json" | head -1; }
a=$(norm1 "$work/two_bf16x") b=$(norm1 "$work/two")
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-3 * b && d > 0) }' &&
  pass || fail "bf16 exchange: first grad_norm $a, fp32 exchange's $b (must be near, not equal)"
a=$(value "$work/two_bf16x" eval_loss) b=$(value "$work/two" eval_loss)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-3 * b) }' &&
  pass || fail "bf16 exchange: eval_loss $a, fp32 exchange's $b"

# 2. Two hosts over TCP: same result as two ranks on one host, bit for bit.
"$netns" "$mpirun" "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/hosts" >"$work/hosts.log" 2>&1
status=$?
if [ "$status" = 77 ]; then
  echo "SKIP: network namespaces unavailable: $(tail -1 "$work/hosts.log")"
elif [ "$status" = 0 ]; then
  cmp -s "$work/two/model.safetensors" "$work/hosts/model.safetensors" && pass ||
    fail "2-host weights differ from 2-rank weights"
else
  fail "2 hosts: $(tail -5 "$work/hosts.log")"
fi

# 2b. The exposed communication in every log entry (the share of a step spent waiting for the
#     all-reduce after backward), and one warning line when it passes 20%: on the two hosts with
#     their link shaped to 50 Mbit/s (tbf), the tiny model's compute is a small part of a step.
python3 - "$work/two/log.jsonl" <<'PY' && pass || fail "log.jsonl lacks exposed_communication: $(head -1 "$work/two/log.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert lines and all(0 <= e["exposed_communication"] <= 1 for e in lines), lines
PY
# The token bucket is 64 KiB, not the harness's default 256 KiB: the tiny model exchanges about 70 KB
# a step, so a 256 KiB bucket carried the measured steps 3-5 at veth speed (measured 4.8-7.5%
# waiting where the link needs 92%+).
LINK_RATE=50mbit LINK_BURST=64kb "$netns" "$mpirun" "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/slow_link" >"$work/slow_link.log" 2>&1
status=$?
if [ "$status" = 77 ]; then
  echo "SKIP: network namespaces unavailable: $(tail -1 "$work/slow_link.log")"
elif [ "$status" = 0 ]; then
  [ "$(grep -c '^warning: .*% of each step waits for the gradient all-reduce after backward (2 ranks, 8 sequences per rank per micro-batch, 1 micro-batches per exchange): more work per exchange hides it' "$work/slow_link.log")" = 1 ] &&
    pass || fail "no exposed-communication warning on a 50 Mbit/s link: $(grep -i warn "$work/slow_link.log")"
else
  fail "2 hosts on a 50 Mbit/s link: $(tail -5 "$work/slow_link.log")"
fi

# 2c. The exchange forecast (train/exchange_report.h) on every run with several ranks: the link
#     probe at start, the forecast after step 2, and at the end the forecast beside the share the
#     steps after it measured.
grep -q '^link probe: an all-reduce across 2 ranks (mpi) takes .* for 4096 bytes and .* MB/s); probed in' "$work/two.log" &&
  grep -q '^exchange forecast (step 2 on the probed link): .* per step in [0-9]* buckets, .* of each step waiting after it, .*% of the speed with a free exchange$' "$work/two.log" &&
  grep -q '^gradient exchange: forecast [0-9.]*% of each step waiting after backward, measured [0-9.]*%; buckets done during backward: forecast [0-9]* of [0-9]*, measured [0-9.]* (steps 3-5 of this run, means over the steps and ranks)$' "$work/two.log" &&
  pass || fail "2 ranks: no link probe, forecast or comparison: $(grep -E '^(link|exchange|gradient)' "$work/two.log")"
#     On the 50 Mbit/s link: the probe measures that link (2 ranks: each byte crosses once each
#     way, 6.25 MB/s; its 1 MB all-reduce measured 5.7 MB/s with the machine busy), the forecast
#     warns once, and forecast and measurement both put the wait above the 20% warning line (idle:
#     98.9% forecast, 96.7% measured; under ASan, whose compute is several times slower and
#     noisier, 27.6/68.1% and 68.7/41.9%: their agreement is documented, not asserted).
if [ "$status" = 0 ]; then
  probe_rate=$(sed -n 's/^link probe: .* (\([0-9.]*\) MB\/s); probed in .*/\1/p' "$work/slow_link.log")
  awk -v r="$probe_rate" 'BEGIN { exit !(r != "" && r >= 3 && r <= 12) }' && pass ||
    fail "link probe on a 50 Mbit/s link: '$probe_rate' MB/s (want 3-12)"
  [ "$(grep -c '^warning: the forecast expects .*% of each step to wait for the gradient all-reduce after backward (2 ranks' "$work/slow_link.log")" = 1 ] &&
    pass || fail "no forecast warning on a 50 Mbit/s link: $(grep -E '^(exchange|warning)' "$work/slow_link.log")"
  shares=$(sed -n 's/^gradient exchange: forecast \([0-9.]*\)% .* measured \([0-9.]*\)%; .*/\1 \2/p' "$work/slow_link.log")
  echo "$shares" | awk '{ exit !(NF == 2 && $1 > 20 && $2 > 20) }' &&
    pass || fail "50 Mbit/s link: forecast and measured exposed shares '$shares' (want both > 20%)"
fi

# 3. SIGKILL one rank mid-training: the job ends within 30 s, non-zero, saying what happened.
"${mpi[@]}" -np 2 "$cpuft" train "${common[@]}" --per_device_train_batch_size 8 --max_steps 100000 \
  --output_dir "$work/killed" >"$work/killed.log" 2>&1 &
launcher=$!
victim=""
for i in $(seq 100); do
  [ -n "$victim" ] && break
  sleep 0.2
  grep -q "^training:" "$work/killed.log" 2>/dev/null &&
    victim=$(pgrep -f "output_dir $work/killed" | grep -v "^$launcher\$" | tail -1)
done
if [ -z "$victim" ]; then
  fail "kill test: training never started: $(tail -3 "$work/killed.log")"
  kill -9 "$launcher" 2>/dev/null
else
  kill -9 "$victim"
  start=$SECONDS
  wait "$launcher"
  status=$? elapsed=$((SECONDS - start))
  [ "$status" != 0 ] && pass || fail "kill test: job exited 0"
  [ "$elapsed" -le 30 ] && pass || fail "kill test: took ${elapsed}s to end"
  grep -qiE "killed|signal 9|lost|died" "$work/killed.log" && pass ||
    fail "kill test: no message: $(tail -3 "$work/killed.log")"
fi

# 3b. Ranks started with different arguments (rank 1 with another --learning_rate, through a
#     wrapper: Open MPI 5.0.7's mpirun crashes on the MPMD form "-np 1 A : -np 1 B"): every rank
#     exits 1, rank 0 with the line naming the first difference, and the job ends without
#     MPI_Abort (which under load killed a rank before its line got out).
printf '%s\n' '#!/usr/bin/env bash' \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$@" --learning_rate 2e-3; fi' 'exec "$@"' \
  >"$work/rank1_lr.sh"
chmod +x "$work/rank1_lr.sh"
"${mpi[@]}" -np 2 "$work/rank1_lr.sh" "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/mpmd" >"$work/mpmd.log" 2>&1
status=$?
disagree="^error: ranks disagree: rank 0 has --learning_rate=0.001 but rank 1 has --learning_rate=0.002$"
[ "$status" = 1 ] && grep -q "$disagree" "$work/mpmd.log" &&
  [ "$(grep -c "error:" "$work/mpmd.log")" = 1 ] &&
  ! grep -q MPI_ABORT "$work/mpmd.log" && [ ! -e "$work/mpmd/.cpuft.lock" ] && pass ||
  fail "ranks with different arguments: exit $status: $(grep -v '^-*$' "$work/mpmd.log" | tail -8 | tr '\n' '|')"

# 3c. Bad input found while the ranks read their inputs: they agree on the outcome first
#     (agree_on_failure), so the job ends with one error line and no MPI_Abort, whether every rank
#     failed alike (a non-empty output folder) or one rank alone (rank 1's data file is missing:
#     the line names the rank). Nothing is created.
mkdir -p "$work/full" && touch "$work/full/keep"
"${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/full" >"$work/full.log" 2>&1
status=$?
[ "$status" = 1 ] && [ "$(grep -c "error:" "$work/full.log")" = 1 ] &&
  grep -q "^error: output directory $work/full already exists and is not empty" "$work/full.log" &&
  ! grep -q MPI_ABORT "$work/full.log" && [ "$(ls -A "$work/full")" = keep ] && pass ||
  fail "non-empty output folder on 2 ranks: exit $status: $(grep -v '^-*$' "$work/full.log" | tail -6 | tr '\n' '|')"
printf '%s\n' '#!/usr/bin/env bash' \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$@" --validation_file /nonexistent/dev.tsv; fi' \
  "exec \"\$@\" --validation_file $work/data.tsv" >"$work/rank1_data.sh"
chmod +x "$work/rank1_data.sh"
"${mpi[@]}" -np 2 "$work/rank1_data.sh" "$cpuft" train --model_name_or_path "$work/model" \
  --train_file "$work/data.tsv" --do_train --do_eval --max_seq_length 16 --max_steps 2 \
  --save_strategy no --output_dir "$work/rank1_data" >"$work/rank1_data.log" 2>&1
status=$?
[ "$status" = 1 ] && [ "$(grep -c "error:" "$work/rank1_data.log")" = 1 ] &&
  grep -q "^error: rank 1: /nonexistent/dev.tsv: " "$work/rank1_data.log" &&
  ! grep -q MPI_ABORT "$work/rank1_data.log" && [ ! -e "$work/rank1_data" ] && pass ||
  fail "rank 1's data missing: exit $status: $(grep -v '^-*$' "$work/rank1_data.log" | tail -6 | tr '\n' '|')"

# 4. Slurm: srun --mpi=pmix starts the ranks; weights identical to mpirun's.
"$(dirname "$0")/slurm_one_node.sh" srun -n 2 --mpi=pmix "$cpuft" train "${flags[@]}" \
  --per_device_train_batch_size 8 --output_dir "$work/slurm" >"$work/slurm.log" 2>&1
status=$?
if [ "$status" = 77 ]; then
  echo "SKIP: Slurm unavailable: $(head -1 "$work/slurm.log")"
elif [ "$status" = 0 ]; then
  grep -q "rank 1: slurm: rank 1 of 2" "$work/slurm.log" && pass || fail "srun: rank layout"
  cmp -s "$work/two/model.safetensors" "$work/slurm/model.safetensors" && pass ||
    fail "srun weights differ from mpirun's"
else
  fail "srun: $(tail -5 "$work/slurm.log")"
fi

# 5. oneCCL: two ranks under mpirun, two under torchrun-style variables, two torchrun-style hosts.
if [ "$with_ccl" = 1 ]; then
  "${mpi[@]}" -np 2 "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
    --dist_backend ccl --output_dir "$work/ccl" >"$work/ccl.log" 2>&1 ||
    fail "ccl under mpirun: $(tail -3 "$work/ccl.log")"
  OMP_NUM_THREADS=1 "$torchrun" --nproc_per_node 2 "$cpuft" train "${flags[@]}" \
    --per_device_train_batch_size 8 --output_dir "$work/ccl_torchrun" >"$work/ccl_torchrun.log" 2>&1 ||
    fail "ccl under torchrun-style launch: $(tail -3 "$work/ccl_torchrun.log")"
  grep -q "rank 1: torchrun: rank 1 of 2.*backend ccl" "$work/ccl_torchrun.log" && pass ||
    fail "torchrun-style launch did not pick the ccl backend: $(grep 'rank 1:' "$work/ccl_torchrun.log")"
  "$netns" --torchrun "$cpuft" train "${flags[@]}" --per_device_train_batch_size 8 \
    --output_dir "$work/ccl_hosts" >"$work/ccl_hosts.log" 2>&1
  status=$?
  runs="ccl ccl_torchrun"
  if [ "$status" = 0 ]; then runs+=" ccl_hosts"
  elif [ "$status" != 77 ]; then fail "ccl on 2 hosts: $(tail -5 "$work/ccl_hosts.log")"; fi
  for run in $runs; do
    cmp -s "$work/two/model.safetensors" "$work/$run/model.safetensors" && pass ||
      fail "$run: weights differ from the MPI backend's"
  done
fi

# 6. Dropout on (0.1 everywhere): 8 steps over 96 examples, global batch 16 (6 steps per epoch, so
#    the resumed runs cross an epoch boundary), checkpoints at steps 3 and 6.
same_weights="$(dirname "$0")/same_weights.py"
"$make_tiny_model" "$work/model_dropout" --no-head >/dev/null || fail "cannot make the dropout model"
drop_flags=("${common[@]}" --max_steps 8 --save_strategy steps --save_steps 3)
drop_flags[1]="$work/model_dropout"
OMP_NUM_THREADS=1 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 16 \
  --output_dir "$work/drop_one" >"$work/drop_one.log" 2>&1 ||
  fail "dropout 1 rank: $(tail -2 "$work/drop_one.log")"
"${mpi[@]}" -np 2 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 8 \
  --output_dir "$work/drop_two" >"$work/drop_two.log" 2>&1 ||
  fail "dropout 2 ranks: $(tail -2 "$work/drop_two.log")"
"${mpi[@]}" -np 2 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 4 \
  --gradient_accumulation_steps 2 --output_dir "$work/drop_accum" >"$work/drop_accum.log" 2>&1 ||
  fail "dropout 2 ranks with accumulation: $(tail -2 "$work/drop_accum.log")"
# Resumed from the other world size's step-3 checkpoint, into a fresh output folder.
"${mpi[@]}" -np 2 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 8 \
  --resume_from_checkpoint "$work/drop_one/checkpoint-3" --output_dir "$work/drop_1to2" \
  >"$work/drop_1to2.log" 2>&1 || fail "resume 1 -> 2 ranks: $(tail -2 "$work/drop_1to2.log")"
OMP_NUM_THREADS=1 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 16 \
  --resume_from_checkpoint "$work/drop_two/checkpoint-3" --output_dir "$work/drop_2to1" \
  >"$work/drop_2to1.log" 2>&1 || fail "resume 2 -> 1 rank: $(tail -2 "$work/drop_2to1.log")"
for run in drop_two drop_accum drop_1to2; do
  python3 "$same_weights" "$work/$run/model.safetensors" "$work/drop_one/model.safetensors" \
    --except attention.self.key.bias >"$work/$run.cmp" && pass || fail "$run: weights differ from 1 rank's: $(tail -3 "$work/$run.cmp")"
done
python3 "$same_weights" "$work/drop_2to1/model.safetensors" "$work/drop_two/model.safetensors" \
  --except attention.self.key.bias >"$work/drop_2to1.cmp" && pass ||
  fail "drop_2to1: weights differ from 2 ranks': $(tail -3 "$work/drop_2to1.cmp")"
grep -q "resumed from .*checkpoint-3 at step 3" "$work/drop_2to1.log" && pass ||
  fail "resume 2 -> 1 did not say where it resumed"
# Another global batch is refused, naming both; --ignore_data_skip accepts it.
OMP_NUM_THREADS=1 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 8 \
  --resume_from_checkpoint "$work/drop_two/checkpoint-3" --output_dir "$work/drop_other" \
  >"$work/drop_other.log" 2>&1
status=$?
[ "$status" != 0 ] && grep -q "8 sequences per device x 2 rank(s) x 1 accumulation; this run has 8 x 1 x 1: another global batch" \
  "$work/drop_other.log" && pass || fail "another global batch: exit $status: $(tail -2 "$work/drop_other.log")"
OMP_NUM_THREADS=1 "$cpuft" train "${drop_flags[@]}" --per_device_train_batch_size 8 --ignore_data_skip \
  --resume_from_checkpoint "$work/drop_two/checkpoint-3" --output_dir "$work/drop_skip" \
  >"$work/drop_skip.log" 2>&1 && pass || fail "--ignore_data_skip: $(tail -2 "$work/drop_skip.log")"

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
