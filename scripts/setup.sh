#!/usr/bin/env bash
# Installs what cpuft needs to build and test, skipping what is there. Checked on fresh Debian 12
# (bookworm) and Debian 13 (trixie) machines by .ci/fresh_machine.sh. Run as root (or with sudo
# available). Idempotent.
set -euo pipefail

if [ -r /etc/os-release ]; then
  . /etc/os-release
  case "${ID:-}:${VERSION_ID:-}" in
    debian:12 | debian:13) ;;
    *) echo "setup: ${PRETTY_NAME:-this system} is not one cpuft is tested on (Debian 12, 13); trying anyway" >&2 ;;
  esac
fi

packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev            # oneDNN: every GEMM (Debian's: 2.6 on 12, 3.7 on 13; docs/gemm.md)
  ocl-icd-opencl-dev     # Debian's oneDNN CMake config asks for OpenCL (a Recommends of libdnnl-dev)
  nlohmann-json3-dev     # config.json, safetensors headers
  libyaml-cpp-dev        # YAML args files (cpuft train args.yaml, as HfArgumentParser)
  libprotobuf-dev protobuf-compiler  # TensorBoard event files: Event protos (3.21.12 on 12 and 13)
  libisal-dev            # ISA-L's crc32_iscsi: the CRC32C of TensorBoard's TFRecord framing
  libcli11-dev           # command line
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev libomp-dev  # libFuzzer smoke run: clang, its runtime and its OpenMP
                                    # (clang-format itself: scripts/fetch_clang_format.sh)
  openmpi-bin libopenmpi-dev iproute2    # src/parallel: MPI communicator, mpirun tests, netns hosts
  libfabric1             # oneCCL's OFI transport (oneCCL itself: scripts/fetch_oneccl.sh, PyPI)
  mpich libmpich-dev     # the second MPI the dist tests run against (Open MPI stays the default)
  slurmctld slurmd slurm-client munge    # srun tests on a one-node cluster (tests/parallel)
  python3 python3-pip unzip ca-certificates
  python3-numpy          # TensorBoard's reader imports it (tests/tensorboard, fetch_tensorboard.sh)
  qemu-user              # tests/portability: the binaries on an emulated CPU without AVX-512
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
