#!/usr/bin/env bash
# The release binaries on a CPU without AVX-512: qemu-user (Debian's qemu-user, QEMU 7.2, whose
# TCG has AVX2 and FMA but no AVX-512) emulating a Haswell without TSX, the oldest CPU of the
# x86-64-v3 baseline. `cpuft env` must pick the reference kernels, CPUFT_FORCE_ISA=avx512 must be
# refused in one line, and a unit test binary must pass: an AVX-512 instruction on any path they
# run is SIGILL under the emulator. Skipped (77) without qemu-x86_64.
#
# usage: qemu_test.sh CPUFT KERNELS_TEST GTEST_FILTER
set -euo pipefail

cpuft=$1
kernels_test=$2
filter=$3
cpu=Haswell-noTSX

qemu=$(command -v qemu-x86_64 || true)
if [ -z "$qemu" ]; then
  echo "SKIP: qemu-x86_64 not installed (Debian package qemu-user; scripts/setup.sh installs it)"
  exit 77
fi
run() { "$qemu" -cpu "$cpu" "$@"; }

fail() {
  echo "FAIL: $*"
  exit 1
}

# The emulated CPU really lacks AVX-512 (a model QEMU does not know would fall back to the host's).
out=$(run "$cpuft" env 2>&1) || fail "cpuft env under qemu -cpu $cpu exited $?: $out"
echo "$out"
grep -q "reference" <<<"$out" || fail "cpuft env under qemu -cpu $cpu did not pick the reference kernels"
grep -q "avx512" <<<"$out" && fail "cpuft env under qemu -cpu $cpu names avx512"

if out=$(CPUFT_FORCE_ISA=avx512 run "$cpuft" env 2>&1); then
  fail "CPUFT_FORCE_ISA=avx512 accepted on a CPU without AVX-512: $out"
fi
grep -q "lacks AVX-512" <<<"$out" || fail "CPUFT_FORCE_ISA=avx512 refused without the reason: $out"

run "$kernels_test" --gtest_filter="$filter" --gtest_brief=1 ||
  fail "kernels_test --gtest_filter=$filter under qemu -cpu $cpu exited $?"
echo "OK: cpuft env and kernels_test ($filter) ran under qemu-x86_64 -cpu $cpu"
