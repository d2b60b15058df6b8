#!/usr/bin/env bash
# torchrun_style.sh [--nnodes N] [--node_rank K] [--nproc_per_node P] [--master_addr A]
#                   [--master_port PORT] [--timeout S] PROGRAM [ARGS...]
#
# A minimal launcher with torchrun's variables, for tests of the torchrun-style launch path
# (cpuft's oneCCL backend rendezvous at MASTER_ADDR:MASTER_PORT): starts P copies of PROGRAM on
# this node with RANK = K*P + i, WORLD_SIZE = N*P, LOCAL_RANK = i, LOCAL_WORLD_SIZE = P,
# MASTER_ADDR, MASTER_PORT. Like torchrun's agent, when one process fails the others are killed.
# Output lines are prefixed "[rank R] ". Exit status: 0 when all succeed, else the first failure's
# status (124 when --timeout, default 120 s, ran out), and the failed rank is named.
set -uo pipefail
nnodes=1 node_rank=0 nproc=2 master_addr=127.0.0.1 master_port=$((20000 + RANDOM % 20000))
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

pids=()
declare -A rank_of
for ((i = 0; i < nproc; i++)); do
  rank=$((node_rank * nproc + i))
  RANK=$rank WORLD_SIZE=$((nnodes * nproc)) LOCAL_RANK=$i LOCAL_WORLD_SIZE=$nproc \
    MASTER_ADDR=$master_addr MASTER_PORT=$master_port \
    timeout -k 5 "$timeout_s" "$@" > >(sed -u "s/^/[rank $rank] /") 2>&1 &
  pids+=($!)
  rank_of[$!]=$rank
done

status=0
remaining=${#pids[@]}
while [ "$remaining" -gt 0 ]; do
  finished=
  wait -n -p finished
  rc=$?
  [ -z "$finished" ] && break  # no children left
  remaining=$((remaining - 1))
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$rc
    how="status $rc"
    [ "$rc" -gt 128 ] && how="signal $((rc - 128))"
    [ "$rc" -eq 124 ] && how="timeout after $timeout_s s"
    echo "torchrun_style: rank ${rank_of[$finished]} exited ($how); stopping the others" >&2
    kill "${pids[@]}" 2>/dev/null
  fi
done
wait
exit "$status"
