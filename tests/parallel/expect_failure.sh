#!/usr/bin/env bash
# expect_failure.sh MAX_SECONDS REGEX COMMAND...
# Passes when COMMAND exits non-zero within MAX_SECONDS and its output (stdout + stderr) matches the
# extended regular expression REGEX. Used by the dist tests for lost and stalled peers.
set -u
max_seconds=$1 pattern=$2
shift 2
start_ms=$(($(date +%s%N) / 1000000))
output=$(timeout -k 5 $((max_seconds * 3)) "$@" 2>&1)
status=$?
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
printf '%s\n' "$output"
echo "expect_failure: exit status $status after ${elapsed_ms} ms"
fail() { echo "expect_failure: FAILED: $*"; exit 1; }
[ "$status" -ne 0 ] || fail "the command succeeded, a failure was expected"
[ "$elapsed_ms" -le $((max_seconds * 1000)) ] || fail "took ${elapsed_ms} ms, more than ${max_seconds} s (a hang?)"
# Matched with line breaks folded into spaces: launchers wrap their messages (Open MPI 5's prterun
# breaks "exited on" / "signal 9" over two lines).
printf '%s\n' "$output" | tr '\n' ' ' | grep -Eq -- "$pattern" || fail "output does not match: $pattern"
echo "expect_failure: OK"
