#!/usr/bin/env bash
# Puts clang-format 14.0.6 (the PyPI wheel, pinned by sha256) into ~/.cache/cpuft and prints its
# path. One formatter on every system: Debian 12 ships clang-format 14 and Debian 13 ships 19, and
# the two format the same code differently, so the format check would depend on the machine.
# Usage: scripts/fetch_clang_format.sh   (prints the binary's path on the last line)
set -euo pipefail
cd "$(dirname "$0")"
. ./pinned_wheel.sh

version=14.0.6
sha=d7c1c5e404c58e55f0170f01b3c5611dce6c119e62b5d1020347e0ad97d5a047
prefix="${CPUFT_CACHE_DIR:-$HOME/.cache/cpuft}/clang-format-$version"
binary="$prefix/bin/clang-format"
if [ -x "$binary" ] && "$binary" --version | grep -q "version $version"; then
  echo "$binary"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wheel=$(fetch_pinned_wheel fetch_clang_format "clang-format==$version" "$sha" "$work")
unzip -q "$wheel" 'clang_format/data/bin/clang-format' -d "$work/x"
mkdir -p "$prefix/bin"
install -m 755 "$work/x/clang_format/data/bin/clang-format" "$binary.tmp"
mv "$binary.tmp" "$binary"
echo "fetch_clang_format: clang-format $version in $prefix" >&2
echo "$binary"
