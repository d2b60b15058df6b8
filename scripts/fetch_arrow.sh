#!/usr/bin/env bash
# Puts Apache Arrow and Parquet C++ (the libraries and their headers) into a local prefix that
# CMake finds (CPUFT_ARROW_ROOT), for reading the Hugging Face hub's GLUE parquet files
# (src/data/glue_parquet.h):
#   include/arrow/... include/parquet/...   the C++ headers
#   lib/libarrow.so.2600 lib/libparquet.so.2600 (+ libarrow.so, libparquet.so for the linker)
# Debian 12 and 13 package no libarrow-dev; the PyPI wheel pyarrow ships Arrow's own release build
# of both libraries with the headers. One wheel is pinned, whatever Python runs this script
# (cp311, manylinux_2_28 x86-64; 55 MB): libarrow and libparquet do not depend on Python (only
# libarrow_python does, which is left out), need nothing but glibc >= 2.28 and libstdc++
# (GLIBCXX_3.4.22), and use the C++11 std::string ABI of Debian's g++.
# Usage: scripts/fetch_arrow.sh [DEST]   (default: $HOME/.cache/cpuft/arrow-26.0.1)
# Prints the prefix on its last line.
set -euo pipefail
source "$(dirname "$0")/pinned_wheel.sh"

version=26.0.1
so=2600
dest="${1:-${CPUFT_ARROW_ROOT:-$HOME/.cache/cpuft/arrow-$version}}"
wheel_sha256=39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c

if [ -f "$dest/.complete" ]; then
  echo "fetch_arrow: Arrow $version present in $dest" >&2
  echo "$dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wheel=$(fetch_pinned_wheel fetch_arrow "pyarrow==$version" "$wheel_sha256" "$work" \
  --only-binary=:all: --implementation cp --python-version 311 --abi cp311 \
  --platform manylinux_2_28_x86_64)

stage="$work/stage"
unzip -q "$wheel" "pyarrow/libarrow.so.$so" "pyarrow/libparquet.so.$so" 'pyarrow/include/arrow/*' \
  'pyarrow/include/parquet/*' "pyarrow-$version.dist-info/licenses/*" -d "$work/x"
mkdir -p "$stage/lib" "$stage/licenses"
mv "$work/x/pyarrow/include" "$stage/include"
mv "$work/x/pyarrow/libarrow.so.$so" "$work/x/pyarrow/libparquet.so.$so" "$stage/lib/"
cp "$work/x/pyarrow-$version.dist-info/licenses/"* "$stage/licenses/"
# libparquet finds libarrow through its RUNPATH $ORIGIN; the unversioned names are for the linker.
ln -s "libarrow.so.$so" "$stage/lib/libarrow.so"
ln -s "libparquet.so.$so" "$stage/lib/libparquet.so"
echo "pyarrow==$version $wheel_sha256" > "$stage/.complete"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && mv "$stage" "$dest.tmp" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_arrow: Arrow $version in $dest" >&2
echo "$dest"
