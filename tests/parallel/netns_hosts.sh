#!/usr/bin/env bash
# netns_hosts.sh MPIRUN PROGRAM [ARGS...]
# netns_hosts.sh --torchrun PROGRAM [ARGS...]
#
# Runs PROGRAM on 2 "hosts" of one machine: two network namespaces joined by a veth pair
# (198.18.0.1/24 and 198.18.0.2/24, the benchmarking range 198.18.0.0/15), so that the ranks talk
# real TCP over a real interface. The namespaces have no other route, so no traffic leaves them;
# they are removed on exit, whatever happens.
#   MPIRUN       mpirun starts inside the first namespace with a hostfile of the two addresses; its
#                launch agent (in place of ssh) maps an address to `ip netns exec NS`. Open MPI's
#                out-of-band and byte-transfer layers are restricted to 198.18.0.0/15.
#   --torchrun   as torchrun on two nodes: tests/parallel/torchrun_style.sh runs in each namespace
#                (--nnodes 2 --node_rank 0|1) with MASTER_ADDR=198.18.0.1, the first host (the
#                rendezvous of the oneCCL backend).
#
# Exit status: PROGRAM's (through mpirun), 77 (CTest SKIP) when network namespaces cannot be made
# here (not root, or no CAP_SYS_ADMIN in a container).
# Each host gets its own half of this machine's cores (taskset; the first host the first half), as
# two real hosts would: a rank that owns its host pins its threads from the first core it may use,
# so two hosts sharing every core would both compute on core 0.
# Link speed emulation for scaling runs: NETEM_RATE=1gbit adds `tc qdisc ... netem rate` on both
# veth ends; LINK_RATE=50mbit a token bucket (`tc qdisc ... tbf`) instead, for kernels without
# netem (sch_netem is a module some kernels lack; sch_tbf is more often there). LINK_BURST sets the
# token bucket's size [256kb]: tbf cuts a packet larger than its bucket into MTU-size packets on the
# sending core, and the veth's GSO packets are up to 64 KiB plus headers. With a 64kb bucket that
# cut every packet of the exchange in 1500-byte pieces, on the core the one-thread rank computes
# on: backward took 717 ms instead of 581 (MiniLM, batch 32, 1600mbit, 2026-12-07), and the link
# probe read 145 MB/s of the 200 configured. A real NIC segments in hardware (TSO).
# TCP_BUFFER_MAX (bytes) raises both hosts' TCP socket buffer limits (tcp_wmem, tcp_rmem and
# net.core's maxima), to test whether they bound a run.
set -euo pipefail
mpirun=$1
shift
program=("$@")
id=$$
ns1=cpuft_h1_$id ns2=cpuft_h2_$id
veth1=cpva$id veth2=cpvb$id
work=$(mktemp -d /tmp/cpuft_netns.XXXXXX)

cleanup() {
  set +e
  for ns in "$ns1" "$ns2"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -n "$pids" ] && kill -9 $pids 2>/dev/null
      ip netns del "$ns"
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

if ! ip netns add "$ns1" 2>"$work/netns.err"; then
  echo "netns_hosts: SKIP: cannot create a network namespace here ($(cat "$work/netns.err"));" \
       "this test needs root with CAP_SYS_ADMIN"
  exit 77
fi
ip netns add "$ns2"
ip link add "$veth1" type veth peer name "$veth2"
ip link set "$veth1" netns "$ns1"
ip link set "$veth2" netns "$ns2"
ip -n "$ns1" addr add 198.18.0.1/24 dev "$veth1"
ip -n "$ns2" addr add 198.18.0.2/24 dev "$veth2"
for pair in "$ns1 $veth1" "$ns2 $veth2"; do
  set -- $pair
  ip -n "$1" link set lo up
  ip -n "$1" link set "$2" up
  if [ -n "${TCP_BUFFER_MAX:-}" ]; then
    case $TCP_BUFFER_MAX in
      *[!0-9]*) echo "netns_hosts: TCP_BUFFER_MAX must be a byte count" >&2; exit 2 ;;
    esac
    if [ "$TCP_BUFFER_MAX" -lt 131072 ]; then
      echo "netns_hosts: TCP_BUFFER_MAX below tcp_rmem's default 131072" >&2; exit 2
    fi
    ip netns exec "$1" sysctl -q -w net.ipv4.tcp_wmem="4096 16384 $TCP_BUFFER_MAX" \
      net.ipv4.tcp_rmem="4096 131072 $TCP_BUFFER_MAX"
    # net.core's maxima are per namespace only on recent kernels; elsewhere they are the host's.
    if ip netns exec "$1" test -e /proc/sys/net/core/wmem_max; then
      ip netns exec "$1" sysctl -q -e -w net.core.wmem_max="$TCP_BUFFER_MAX" \
        net.core.rmem_max="$TCP_BUFFER_MAX" || true
    fi
  fi
  if [ -n "${NETEM_RATE:-}" ]; then
    ip netns exec "$1" tc qdisc add dev "$2" root netem rate "$NETEM_RATE"
  elif [ -n "${LINK_RATE:-}" ]; then
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$LINK_RATE" burst "${LINK_BURST:-256kb}" latency 400ms
  fi
done

# The CPUs this script may run on (its affinity list, e.g. "0-3,8-11"), one per line: the hosts
# split these, whatever their numbers (a container may be limited to any set).
allowed_cpus() {
  local part
  for part in $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' ' '); do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}
mapfile -t cpus < <(allowed_cpus)
half=$((${#cpus[@]} / 2))
if [ "$half" -ge 1 ]; then
  cpus1=$(IFS=,; echo "${cpus[*]:0:half}") cpus2=$(IFS=,; echo "${cpus[*]:half:half}")
else
  cpus1=${cpus[0]:-0} cpus2=${cpus[0]:-0}
fi

# Launch agent: Open MPI runs "AGENT [options] HOST COMMAND..." as it would run ssh.
cat > "$work/agent.sh" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done   # ssh-style options, if any
host=\$1
shift
case "\$host" in
  198.18.0.1) ns=$ns1 cpus=$cpus1 ;;
  198.18.0.2) ns=$ns2 cpus=$cpus2 ;;
  *) echo "netns agent: unknown host '\$host' (only 198.18.0.1 and 198.18.0.2 exist)" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" taskset -c "\$cpus" sh -c "\$*"
AGENT
chmod +x "$work/agent.sh"
printf '198.18.0.1 slots=1\n198.18.0.2 slots=1\n' > "$work/hostfile"

echo "netns_hosts: hosts 198.18.0.1 ($ns1, cores $cpus1) and 198.18.0.2 ($ns2, cores $cpus2) joined by $veth1-$veth2"
status=0
if [ "$mpirun" = "--torchrun" ]; then
  launcher="$(dirname "$0")/torchrun_style.sh"
  port=$((20000 + RANDOM % 12000))  # below the ephemeral ports, as torchrun_style.sh's
  for node in 0 1; do
    ns=$ns1 cpus=$cpus1
    [ "$node" -eq 1 ] && ns=$ns2 cpus=$cpus2
    ip netns exec "$ns" taskset -c "$cpus" env OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$launcher" --nnodes 2 \
      --node_rank "$node" --nproc_per_node 1 --master_addr 198.18.0.1 --master_port "$port" \
      --timeout 60 "${program[@]}" > "$work/output.$node" 2>&1 &
    eval "pid$node=\$!"
  done
  wait "$pid0" || status=$?
  wait "$pid1" || { s=$?; [ "$status" -ne 0 ] || status=$s; }
  cat "$work/output.0" "$work/output.1" | tee "$work/output"
  [ "$status" -eq 0 ] || { echo "netns_hosts: FAILED: a node exited with $status"; exit 1; }
else
timeout -k 5 60 ip netns exec "$ns1" taskset -c "$cpus1" "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
  -np 2 --hostfile "$work/hostfile" --mca plm_rsh_agent "$work/agent.sh" \
  --mca btl tcp,self --mca btl_tcp_if_include 198.18.0.0/15 \
  --mca oob_tcp_if_include 198.18.0.0/15 \
  -x OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "${program[@]}" 2>&1 | tee "$work/output" || status=$?
[ "$status" -eq 0 ] || { echo "netns_hosts: FAILED: mpirun exited with $status"; exit 1; }
fi
# One rank per host: each must see itself as local rank 0 of 1.
hosts=$(grep -c "local rank 0 of 1" "$work/output" || true)
[ "$hosts" -eq 2 ] || { echo "netns_hosts: FAILED: expected 2 ranks on separate hosts, saw $hosts"; exit 1; }
echo "netns_hosts: OK"
