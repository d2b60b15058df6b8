#!/usr/bin/env bash
# Signals during training (issue: a Slurm time limit, Ctrl-C, `srun --signal=USR1`): the run
# finishes its step, saves a checkpoint, says in one line where to resume, and exits 128 + signal
# (0 with --stop_exit_zero); the resumed run ends with an unbroken run's weights, bit for bit;
# under mpirun every rank stops after the same step and names the same signal. The step lines
# reach a redirected stdout as they are printed (line-buffered).
# Usage: signals_test.sh CPUFT MAKE_TINY_MODEL MPIRUN
set -uo pipefail
cpuft="$1" make_tiny_model="$2" mpirun="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

"$make_tiny_model" "$work/model" --no-head || { echo "cannot make the tiny model"; exit 1; }
printf 'sentence\tlabel\n' >"$work/train.tsv"
for i in $(seq 200); do printf 'the movie is good %d\t1\nthe film is bad %d\t0\n' "$i" "$i" >>"$work/train.tsv"; done
flags=(train --model_name_or_path "$work/model" --train_file "$work/train.tsv" --do_train
       --num_train_epochs 1000 --logging_steps 1 --save_strategy no --max_seq_length 16
       --lr_scheduler_type constant)  # constant: a resumed run with fewer steps is comparable

# run_until_step3 NAME SIGNAL [LAUNCHER...]: starts a long run, sends SIGNAL once step 3 is logged.
run_and_signal() {
  local name="$1" signal="$2"
  shift 2
  "$@" "$cpuft" "${flags[@]}" --output_dir "$work/$name" >"$work/$name.log" 2>"$work/$name.err" &
  local pid=$! i
  for ((i = 0; i < 300; i++)); do
    grep -q "^step 3/" "$work/$name.log" 2>/dev/null && break
    sleep 0.2
  done
  grep -q "^step 3/" "$work/$name.log" && pass || fail "$name: no step line reached the log file"
  kill "-$signal" "$pid"
  wait "$pid"
  code=$?
}

# 1. SIGTERM: exit 143, one line naming the checkpoint, which resumes.
run_and_signal term TERM
[ "$code" = 143 ] && pass || fail "SIGTERM: exit $code (want 143): $(cat "$work/term.err")"
line=$(grep "^stopped by SIGTERM after step" "$work/term.err")
step=$(sed -n 's/^stopped by SIGTERM after step \([0-9]*\) of .*/\1/p' <<<"$line")
checkpoint="$work/term/checkpoint-$step"
[ "$(wc -l <"$work/term.err")" = 1 ] && [ -n "$step" ] && [ -d "$checkpoint" ] &&
  grep -q -- "--resume_from_checkpoint $checkpoint$" <<<"$line" && pass ||
  fail "SIGTERM: $(cat "$work/term.err"); $(ls "$work/term")"
"$cpuft" "${flags[@]}" --output_dir "$work/term" --max_steps $((step + 2)) \
  --resume_from_checkpoint "$checkpoint" >"$work/resume.log" 2>&1 &&
  grep -q "resumed from $checkpoint at step $step" "$work/resume.log" && pass ||
  fail "resume after SIGTERM: $(tail -3 "$work/resume.log")"
# ... to the weights of a run never stopped, bit for bit.
"$cpuft" "${flags[@]}" --output_dir "$work/unbroken" --max_steps $((step + 2)) \
  >"$work/unbroken.log" 2>&1 && cmp -s "$work/term/model.safetensors" "$work/unbroken/model.safetensors" &&
  pass || fail "resumed after SIGTERM: weights differ from an unbroken run's"

# 1b. --stop_exit_zero: the same stop, exit 0 (for job scripts that requeue on success).
flags+=(--stop_exit_zero)
run_and_signal term0 TERM
[ "$code" = 0 ] && grep -q "^stopped by SIGTERM after step" "$work/term0.err" && pass ||
  fail "--stop_exit_zero: exit $code: $(cat "$work/term0.err")"
unset 'flags[${#flags[@]}-1]'

# 2. SIGINT (Ctrl-C): exit 130.
run_and_signal int INT
[ "$code" = 130 ] && grep -q "^stopped by SIGINT" "$work/int.err" && pass ||
  fail "SIGINT: exit $code: $(cat "$work/int.err")"

# 3. mpirun -np 2, SIGUSR1 to mpirun (it forwards the signal): both ranks stop after the same
#    step, one checkpoint, one line.
run_and_signal usr1 USR1 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
  -x OMP_NUM_THREADS=1
[ "$code" = 138 ] && pass || fail "SIGUSR1 under mpirun: exit $code (want 138): $(cat "$work/usr1.err")"
[ "$(grep -c "^stopped by SIGUSR1 after step" "$work/usr1.err")" = 1 ] &&
  [ "$(ls -d "$work/usr1"/checkpoint-* | wc -l)" = 1 ] && pass ||
  fail "SIGUSR1 under mpirun: $(cat "$work/usr1.err"); $(ls "$work/usr1")"

# 4. SIGUSR1 to rank 1 alone (as a launcher's forwarded signal reaches the ranks at different
#    moments): every rank stops after the same step and names SIGUSR1, the signal some rank got.
"$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 \
  "$cpuft" "${flags[@]}" --output_dir "$work/usr1_rank1" >"$work/usr1_rank1.log" \
  2>"$work/usr1_rank1.err" &
launcher=$! rank1=""
for ((i = 0; i < 300; i++)); do
  if grep -q "^step 3/" "$work/usr1_rank1.log" 2>/dev/null; then
    for pid in $(pgrep -f -- "--output_dir $work/usr1_rank1"); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$pid
    done
    [ -n "$rank1" ] && break
  fi
  sleep 0.2
done
if [ -z "$rank1" ]; then
  fail "SIGUSR1 to rank 1: rank 1 not found: $(tail -3 "$work/usr1_rank1.err")"
  kill -KILL "$launcher"
else
  kill -USR1 "$rank1"
  wait "$launcher"
  code=$?
  [ "$code" = 138 ] && [ "$(grep -c "^stopped by SIGUSR1 after step" "$work/usr1_rank1.err")" = 1 ] &&
    [ "$(ls -d "$work/usr1_rank1"/checkpoint-* | wc -l)" = 1 ] && pass ||
    fail "SIGUSR1 to rank 1: exit $code (want 138): $(grep -v '^-*$' "$work/usr1_rank1.err" | tr '\n' '|')"
fi

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
