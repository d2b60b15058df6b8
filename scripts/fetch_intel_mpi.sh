#!/usr/bin/env bash
# Puts Intel MPI (the library and its Hydra launcher, from PyPI) into a local prefix for the
# `intelmpi` CMake preset: scripts/test.sh builds the distributed tests against it and runs them
# with its mpiexec.hydra, as the third MPI beside Open MPI (the default) and MPICH.
#   impi-devel 2021.19.0: include/mpi.h and the compiler wrappers (bin/mpicxx, using g++)
#   impi-rt    2021.19.0: lib/libmpi.so.12, bin/mpiexec.hydra and its proxies
# The wheels ask for libfabric >= 2.6, which no index here has; Intel MPI runs on Debian's
# libfabric1 1.17 (tcp;ofi_rxm provider, shared memory within a host), so they are unpacked rather
# than pip-installed. Both are pinned by version and sha256. The wrappers carry a placeholder for
# the install folder, replaced here as Intel's installer does.
# Usage: scripts/fetch_intel_mpi.sh [DEST]   (default: $HOME/.cache/cpuft/impi-2021.19.0)
set -euo pipefail
source "$(dirname "$0")/pinned_wheel.sh"

dest="${1:-${CPUFT_IMPI_ROOT:-$HOME/.cache/cpuft/impi-2021.19.0}}"
wheels=(
  "impi-devel==2021.19.0 50efbbc6eb3c41681fac95d2e9443af128d73b6bfbb61d827d894f93bab4b6ad"
  "impi-rt==2021.19.0 708b4336c9d303a3d807b58054c502ed4f716dfb074dfa48904180b46d14bb40"
)

if [ -f "$dest/.complete" ]; then
  echo "fetch_intel_mpi: Intel MPI present in $dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
mkdir -p "$stage"
for entry in "${wheels[@]}"; do
  set -- $entry
  wheel=$(fetch_pinned_wheel fetch_intel_mpi "$1" "$2" "$work")
  name="${1%%==*}"
  unzip -q "$wheel" -d "$work/x"
  cp -a "$work"/x/"${name//-/_}"-2021.19.0.data/data/. "$stage/"
done
for wrapper in "$stage"/bin/mpi*; do
  grep -q I_MPI_SUBSTITUTE_INSTALLDIR "$wrapper" 2>/dev/null &&
    sed -i "s|I_MPI_SUBSTITUTE_INSTALLDIR|$dest|g" "$wrapper"
done
printf '%s\n' "${wheels[@]}" > "$stage/.complete"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && mv "$stage" "$dest.tmp" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_intel_mpi: Intel MPI in $dest"
