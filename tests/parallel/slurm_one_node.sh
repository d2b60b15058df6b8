#!/usr/bin/env bash
# slurm_one_node.sh COMMAND [ARGS...]
#
# Runs COMMAND (typically `srun -n 2 --mpi=pmix PROGRAM`) against a real one-node Slurm cluster
# made for the occasion: munged, slurmctld and slurmd from Debian's packages, every file in a
# temporary folder (its own munge key and socket, slurm.conf with this host as the only node,
# spool and state dirs, ports 16817/16818 on 127.0.0.1, so the host name need not resolve),
# SLURM_CONF exported for COMMAND. The daemons are
# stopped and the folder removed on exit, whatever happens.
#
# Exit status: COMMAND's; 77 (CTest SKIP) when the Slurm or munge programs are not installed or
# not run as root.
set -uo pipefail
for program in munged slurmctld slurmd srun sinfo; do
  if ! command -v "$program" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$program" ]; then
    echo "slurm_one_node: SKIP: $program is not installed (apt-get install slurmctld slurmd munge)"
    exit 77
  fi
done
[ "$(id -u)" -eq 0 ] || { echo "slurm_one_node: SKIP: needs root (daemons as root)"; exit 77; }
PATH=$PATH:/usr/sbin

work=$(mktemp -d /tmp/cpuft_slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  sleep 0.5
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

host=$(hostname -s)
cpus=$(nproc --all)
mkdir -p "$work/munge" "$work/spool" "$work/state"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/seed" || { echo "slurm_one_node: munged failed"; exit 1; }
pids+=("$(cat "$work/munge/munged.pid")")

cat > "$work/slurm.conf" <<EOF
ClusterName=cpuft
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$work/slurm.conf

slurmctld -f "$SLURM_CONF" || { echo "slurm_one_node: slurmctld failed"; cat "$work/slurmctld.log"; exit 1; }
slurmd -f "$SLURM_CONF" || { echo "slurm_one_node: slurmd failed"; cat "$work/slurmd.log"; exit 1; }
for i in $(seq 50); do
  [ -f "$work/slurmctld.pid" ] && [ -f "$work/slurmd.pid" ] && break
  sleep 0.1
done
pids+=("$(cat "$work/slurmctld.pid" 2>/dev/null)" "$(cat "$work/slurmd.pid" 2>/dev/null)")
for i in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = "idle" ] && break
  sleep 0.2
done
if [ "$state" != "idle" ]; then
  echo "slurm_one_node: FAILED: node state '$state' after 20 s"
  tail -n 5 "$work/slurmctld.log" "$work/slurmd.log"
  exit 1
fi
echo "slurm_one_node: cluster up ($host, $cpus CPUs)"
"$@"
status=$?
echo "slurm_one_node: command exited with $status"
exit $status
