#!/usr/bin/env bash
# Puts Intel oneCCL (CPU build) into a local prefix that CMake finds (CPUFT_CCL_ROOT):
#   include/oneapi/ccl.hpp ...   from the PyPI wheel oneccl-devel (headers only)
#   lib/libccl.so.1              from the PyPI wheel oneccl-cpu (the CPU-only library, 7 MB, no SYCL)
#   lib/libintlc.so.5            from the PyPI wheel intel-cmplr-lib-rt (Intel's libc helpers:
#                                libccl.so.1 calls _intel_fast_memcpy and the CPU-feature probe)
# Why these three and not `pip install oneccl-devel`: that pulls the SYCL build of libccl (231 MB,
# needs libsycl and libfabric >= 2.6, which no index here has). The CPU wheel loads Debian's
# libfabric1 at run time (OFI transport, tcp provider); see docs/distributed.md.
# Every wheel is pinned by version and sha256.
# Usage: scripts/fetch_oneccl.sh [DEST]   (default: $HOME/.cache/cpuft/oneccl-2022.2.0)
set -euo pipefail
source "$(dirname "$0")/pinned_wheel.sh"

dest="${1:-${CPUFT_CCL_ROOT:-$HOME/.cache/cpuft/oneccl-2022.2.0}}"
wheels=(
  "oneccl-cpu==2022.2.0 cc912935bd882b4328a569f70a475942e6e77994255775bde7de6452a982af54"
  "oneccl-devel==2022.2.0 6df69cc33962e48f401041bd788991bd47f82d3b1be3ed788aa184293c581cf2"
  "intel-cmplr-lib-rt==2026.2.0 9f713083073a820d2496a6da8e8d4f3482aba6640f74521d25ea48dcebe72748"
)

if [ -f "$dest/.complete" ]; then
  echo "fetch_oneccl: oneCCL present in $dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for entry in "${wheels[@]}"; do
  set -- $entry
  fetch_pinned_wheel fetch_oneccl "$1" "$2" "$work" >/dev/null
done

stage="$work/stage"
mkdir -p "$stage/lib" "$stage/licenses"
unzip -q "$work"/oneccl_devel-*.whl 'oneccl_devel-2022.2.0.data/data/include/*' -d "$work/devel"
mv "$work/devel/oneccl_devel-2022.2.0.data/data/include" "$stage/include"
unzip -q "$work"/oneccl_cpu-*.whl 'oneccl_cpu-2022.2.0.data/data/lib/libccl.so.1' \
  'oneccl_cpu-2022.2.0.data/data/share/doc/ccl/licensing/*' -d "$work/cpu"
mv "$work/cpu/oneccl_cpu-2022.2.0.data/data/lib/libccl.so.1" "$stage/lib/"
cp "$work"/cpu/oneccl_cpu-2022.2.0.data/data/share/doc/ccl/licensing/* "$stage/licenses/"
unzip -q "$work"/intel_cmplr_lib_rt-*.whl 'intel_cmplr_lib_rt-2026.2.0.data/data/lib/libintlc.so.5' \
  -d "$work/rt"
mv "$work/rt/intel_cmplr_lib_rt-2026.2.0.data/data/lib/libintlc.so.5" "$stage/lib/"
# libccl.so.1 lists itself again as NEEDED libccl.so.2; the loader recognises the same file (same
# inode) and maps it once. libccl.so is the link-time name.
ln -s libccl.so.1 "$stage/lib/libccl.so.2"
ln -s libccl.so.1 "$stage/lib/libccl.so"
printf '%s\n' "${wheels[@]}" > "$stage/.complete"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && mv "$stage" "$dest.tmp" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_oneccl: oneCCL in $dest"
