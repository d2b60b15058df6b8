#!/usr/bin/env bash
# Durability of the output folder (the reliability issue: a killed run left .checkpoint-N.tmp
# folders; two runs on one folder both exited 0):
#   1. SIGKILL at random moments of a run that saves a checkpoint every step: after every kill the
#      newest checkpoint-N is whole and the next start resumes from it, and that start removes
#      what the killed run left half-written (and says so), so no .tmp debris survives it;
#   2. a second run on a folder in use exits 1 with the lock's one line (under mpirun, every rank
#      stops, rank 0 says why, no MPI_Abort) while the first trains on; SIGTERM then stops the
#      first cleanly and frees the folder.
# Usage: kill_during_save_test.sh CPUFT MAKE_TINY_MODEL [MPIRUN (Open MPI)]
#        (environment: KILLS=N kills instead of 24, KILL_TEST_SEED=S repeats a sequence of kills)
set -uo pipefail
cpuft="$1" make_tiny_model="$2" mpirun="${3:-}" kills="${KILLS:-24}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

"$make_tiny_model" "$work/model" --no-head || { echo "cannot make the tiny model"; exit 1; }
printf 'sentence\tlabel\n' >"$work/train.tsv"
for i in $(seq 100); do printf 'the movie is good %d\t1\nthe film is bad %d\t0\n' "$i" "$i" >>"$work/train.tsv"; done
flags=(train --model_name_or_path "$work/model" --train_file "$work/train.tsv" --do_train
       --max_steps 100000 --logging_steps 1 --save_steps 1 --save_total_limit 2 --max_seq_length 16
       --per_device_train_batch_size 4 --disable_tqdm)
out="$work/out"

# What an interrupted run may leave: .checkpoint-*.tmp folders and <file>.tmp-<pid> files.
debris() { ls -A "$out" 2>/dev/null | grep -E '^\.checkpoint-.*\.tmp$|\.tmp-[0-9]+$' | sort; }
newest_step() { ls "$out" 2>/dev/null | sed -n 's/^checkpoint-\([0-9]*\)$/\1/p' | sort -n | tail -1; }
# wait_for FILE PATTERN PID: until FILE has a line matching PATTERN (or PID ended, or 20 s).
wait_for() {
  local i
  for ((i = 0; i < 400; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.05
  done
  grep -q -- "$2" "$1" 2>/dev/null
}

# 1. The kill loop. Each run starts from the newest checkpoint (the first from scratch); once it
#    has resumed (or, the first, logged a step) and then saved a checkpoint of its own, it is
#    killed at a random moment within two of its save cycles, as long as the first took: with a
#    tiny model most of a step is its checkpoint, so most kills land in a save however slow the
#    disk's fsync is (a fixed 0-400 ms missed every save on a disk where one checkpoint's fsyncs
#    took longer than that, and no run ever resumed).
seed=${KILL_TEST_SEED:-$(($(date +%s) % 32768))}
RANDOM=$seed
start=$SECONDS
left_debris=0 removed_ok=0 resumed_ok=0 previous=""
for ((k = 1; k <= kills; k++)); do
  step=$(newest_step)
  log="$work/run$k.log"
  if [ -n "$step" ]; then
    "$cpuft" "${flags[@]}" --output_dir "$out" --resume_from_checkpoint "$out/checkpoint-$step" \
      >"$log" 2>&1 &
    ready="^resumed from $out/checkpoint-$step at step $step$"
  else
    "$cpuft" "${flags[@]}" --output_dir "$out" --overwrite_output_dir >"$log" 2>&1 &
    ready="^step "
  fi
  pid=$!
  if wait_for "$log" "$ready" "$pid"; then
    [ -n "$step" ] && resumed_ok=$((resumed_ok + 1))
  else
    fail "kill $k: the run did not start from checkpoint-${step:-none}: $(tail -3 "$log")"
  fi
  # The debris the previous kill left was removed by this start, and named in one line.
  if [ -n "$previous" ]; then
    said=$(sed -n "s|^removed what an interrupted run left half-written in $out: ||p" "$log")
    if [ "$said" = "$(tr '\n' ',' <<<"$previous" | sed 's/,$//; s/,/, /g')" ]; then
      removed_ok=$((removed_ok + 1))
    else
      fail "kill $k: the start removed '$said', the killed run had left: $(echo $previous)"
    fi
  fi
  # One save of this run's own: the cycle's length sets the range of the kill's moment.
  cycle_start=$(date +%s%N)
  for ((i = 0; i < 1200; i++)); do
    [ "$(newest_step)" != "$step" ] && [ -n "$(newest_step)" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  cycle_ms=$((($(date +%s%N) - cycle_start) / 1000000))
  [ "$(newest_step)" != "$step" ] && [ -n "$(newest_step)" ] ||
    fail "kill $k: no checkpoint after the start from checkpoint-${step:-none}: $(tail -3 "$log")"
  delay_ms=$((RANDOM % (2 * cycle_ms + 20)))
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  previous=$(debris)
  [ -n "$previous" ] && left_debris=$((left_debris + 1))
  # The newest checkpoint is whole: every file there and not empty, its own step recorded.
  step=$(newest_step)
  if [ -n "$step" ]; then
    for f in config.json model.safetensors optimizer.safetensors trainer_state.json vocab.txt \
             tokenizer_config.json special_tokens_map.json; do
      [ -s "$out/checkpoint-$step/$f" ] || fail "kill $k: checkpoint-$step/$f missing or empty"
    done
    grep -q "\"global_step\": $step," "$out/checkpoint-$step/trainer_state.json" ||
      fail "kill $k: checkpoint-$step/trainer_state.json is not step $step's"
  fi
done
# A last run resumes from the newest checkpoint and ends: nothing half-written, no lock left.
step=$(newest_step)
if [ -z "$step" ]; then
  fail "no checkpoint after $kills kills"
elif "$cpuft" "${flags[@]}" --output_dir "$out" --resume_from_checkpoint "$out/checkpoint-$step" \
     --max_steps $((step + 2)) >"$work/last.log" 2>&1 &&
     grep -q "^resumed from $out/checkpoint-$step at step $step$" "$work/last.log"; then
  pass
  [ -z "$(debris)" ] && [ ! -e "$out/.cpuft.lock" ] && [ -s "$out/model.safetensors" ] && pass ||
    fail "after the last run: $(ls -A "$out")"
  [ "$(ls -d "$out"/checkpoint-* | wc -l)" = 2 ] && pass || fail "save_total_limit 2: $(ls "$out")"
else
  fail "the last run: $(tail -3 "$work/last.log")"
fi
[ "$resumed_ok" = $((kills - 1)) ] && pass || fail "$resumed_ok of $((kills - 1)) restarts resumed"
echo "kill loop (seed $seed): $kills SIGKILLs in $((SECONDS - start)) s; $left_debris left debris" \
     "(.checkpoint-N.tmp or *.tmp-<pid>), removed by the next start $removed_ok times" \
     "(checked after every kill but the last; the last by the final run); every newest checkpoint" \
     "whole, $resumed_ok resumed"
[ "$left_debris" -gt 0 ] && pass || fail "no kill landed in a save: the loop tested nothing"

# 2. A second run on a folder in use: exit 1, one line naming the first's pid and host; under
#    mpirun -np 2 both ranks stop (rank 0 with the lock's line, rank 1 naming it). The first run
#    has steps for far longer than the test (a fixed step count finished before the refusals on a
#    fast machine: the tiny model trains thousands of steps a second), and is stopped by SIGTERM
#    once both refusals are checked: it saves its checkpoint, exits 0 and leaves no lock.
shared="$work/shared"
"$cpuft" "${flags[@]}" --save_strategy no --max_steps 1000000000 --logging_steps 1000 \
  --stop_exit_zero --output_dir "$shared" >"$work/first.log" 2>&1 &
first=$!
wait_for "$work/first.log" "^step " "$first" || fail "the first run did not start: $(tail -3 "$work/first.log")"
"$cpuft" "${flags[@]}" --save_strategy no --output_dir "$shared" --overwrite_output_dir \
  >/dev/null 2>"$work/second.err"
code=$?
line="--output_dir $shared is in use by pid $first on host $(hostname) (since [-0-9: ]* UTC); wait for it or choose another folder"
[ "$code" = 1 ] && [ "$(wc -l <"$work/second.err")" = 1 ] && grep -q "^error: $line$" "$work/second.err" &&
  pass || fail "second run: exit $code: $(cat "$work/second.err")"
if [ -n "$mpirun" ]; then
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 \
    "$cpuft" "${flags[@]}" --save_strategy no --output_dir "$shared" --overwrite_output_dir \
    >/dev/null 2>"$work/mpirun.err"
  code=$?
  # Both ranks end normally (AgreedError), rank 0 with the lock's line: no MPI_Abort, which under
  # load killed rank 1 before its line got out, and no second line, which Open MPI 5's mpirun
  # interleaved with the first mid-line.
  [ "$code" = 1 ] && grep -q "^error: $line$" "$work/mpirun.err" &&
    [ "$(grep -c "error:" "$work/mpirun.err")" = 1 ] && ! grep -q "MPI_ABORT" "$work/mpirun.err" &&
    pass || fail "second run under mpirun: exit $code: $(grep -v '^-*$' "$work/mpirun.err" | tr '\n' '|')"
fi
kill -0 "$first" 2>/dev/null && pass || fail "the first run ended before the second ones were refused"
kill -TERM "$first" 2>/dev/null
wait "$first" && grep -q "^stopped by SIGTERM after step [0-9]* of 1000000000: resume with" "$work/first.log" &&
  [ -n "$(ls -d "$shared"/checkpoint-* 2>/dev/null)" ] && [ -z "$(out=$shared debris)" ] &&
  [ ! -e "$shared/.cpuft.lock" ] && pass ||
  fail "the first run: $(tail -3 "$work/first.log"); $(ls -A "$shared")"

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
