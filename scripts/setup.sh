#!/usr/bin/env bash
# Installs what cpuft needs to build and test on Debian 12 / Ubuntu 22.04+, skipping what is there.
# Run as root (or with sudo available). Idempotent.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev            # oneDNN: every GEMM (see docs/gemm.md for why this build)
  nlohmann-json3-dev     # config.json, safetensors headers
  libcli11-dev           # command line
  libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format libclang-rt-14-dev   # format check, libFuzzer smoke run
  openmpi-bin libopenmpi-dev iproute2    # src/dist: MPI communicator, mpirun tests, netns hosts
  libfabric1             # oneCCL's OFI transport (oneCCL itself: scripts/fetch_oneccl.sh, PyPI)
  mpich libmpich-dev     # the second MPI the dist tests run against (Open MPI stays the default)
  slurmctld slurmd slurm-client munge    # srun tests on a one-node cluster (tests/dist)
  python3 python3-pip unzip ca-certificates
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all build dependencies present"
fi
