#!/usr/bin/env bash
# torchrun_style.sh [--nnodes N] [--node_rank K] [--nproc_per_node P] [--master_addr A]
#                   [--master_port PORT] [--timeout S] PROGRAM [ARGS...]
#
# A minimal launcher with torchrun's variables, for tests of the torchrun-style launch path
# (cpuft's oneCCL backend rendezvous at MASTER_ADDR:MASTER_PORT): starts P copies of PROGRAM on
# this node with RANK = K*P + i, WORLD_SIZE = N*P, LOCAL_RANK = i, LOCAL_WORLD_SIZE = P,
# MASTER_ADDR, MASTER_PORT. Like torchrun's agent, when one process fails the others are stopped;
# every process that failed on its own is named ("rank 1 exited (signal 9)").
# Each rank's output is collected in a file and printed, prefixed "[rank R] ", when all have ended.
# Exit status: 0 when all succeed, else the first failure's (124 when --timeout, default 120 s,
# ran out).
set -uo pipefail
# The default port lies below Linux's ephemeral range (32768-60999 by default), from which the
# kernel picks the local ports of outgoing connections (other tests' MPI links among them).
nnodes=1 node_rank=0 nproc=2 master_addr=127.0.0.1 master_port=$((20000 + RANDOM % 12000))
timeout_s=120
while [ $# -gt 0 ]; do
  case "$1" in
    --nnodes) nnodes=$2; shift 2 ;;
    --node_rank) node_rank=$2; shift 2 ;;
    --nproc_per_node) nproc=$2; shift 2 ;;
    --master_addr) master_addr=$2; shift 2 ;;
    --master_port) master_port=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "torchrun_style: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "torchrun_style: no program given" >&2; exit 2; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
declare -A rank_of
for ((i = 0; i < nproc; i++)); do
  rank=$((node_rank * nproc + i))
  RANK=$rank WORLD_SIZE=$((nnodes * nproc)) LOCAL_RANK=$i LOCAL_WORLD_SIZE=$nproc \
    MASTER_ADDR=$master_addr MASTER_PORT=$master_port \
    timeout -k 5 "$timeout_s" "$@" >"$logs/$rank" 2>&1 &
  pids+=($!)
  rank_of[$!]=$rank
done

status=0 stopping=0
remaining=${#pids[@]}
while [ "$remaining" -gt 0 ]; do
  finished=
  wait -n -p finished
  rc=$?
  [ -z "${finished:-}" ] && break  # no children left
  remaining=$((remaining - 1))
  [ "$rc" -eq 0 ] && continue
  [ "$stopping" -eq 1 ] && [ "$rc" -eq 143 ] && continue  # our own SIGTERM
  [ "$status" -eq 0 ] && status=$rc
  how="status $rc"
  [ "$rc" -gt 128 ] && how="signal $((rc - 128))"
  [ "$rc" -eq 124 ] && how="timeout after $timeout_s s"
  echo "torchrun_style: rank ${rank_of[$finished]} exited ($how)" >&2
  if [ "$stopping" -eq 0 ]; then
    stopping=1
    sleep 1  # let simultaneous failures (a peer noticing the loss) report themselves
    kill "${pids[@]}" 2>/dev/null
  fi
done
wait
for ((i = 0; i < nproc; i++)); do
  rank=$((node_rank * nproc + i))
  sed "s/^/[rank $rank] /" "$logs/$rank"
done
exit "$status"
