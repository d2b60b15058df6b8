#!/usr/bin/env bash
# The release binaries on a CPU without AVX-512: qemu-user (Debian's qemu-user, QEMU 7.2, whose
# TCG has AVX2 and FMA but no AVX-512) emulating a Haswell without TSX, the oldest CPU of the
# x86-64-v3 baseline. `cpuft env` must pick the reference kernels, CPUFT_FORCE_ISA=avx512 must be
# refused in one line, and the unit test binaries given must pass: an AVX-512 instruction on any
# path they run is SIGILL under the emulator, whatever CPU the host has. Under a Westmere (no AVX)
# cpuft must refuse in one line (apps/cpu_level_check.cc), not die with SIGILL. Skipped (77) without
# qemu-x86_64 or the binaries.
#
# usage: qemu_test.sh [--skip REASON] CPUFT TEST[:GTEST_FILTER]...
#   --skip: print REASON and exit 77 (a build not for the baseline, a sanitizer build)
set -euo pipefail

if [ "${1:-}" = --skip ]; then
  echo "SKIP: $2"
  exit 77
fi
cpuft=$1
shift
cpu=Haswell-noTSX

for binary in "$cpuft" "${@%%:*}"; do
  if [ ! -x "$binary" ]; then  # the mpich preset builds the distributed targets only
    echo "SKIP: $binary is not built"
    exit 77
  fi
done
qemu=$(command -v qemu-x86_64 || true)
if [ -z "$qemu" ]; then
  echo "SKIP: qemu-x86_64 not installed (Debian package qemu-user; scripts/setup.sh installs it)"
  exit 77
fi
# The model asks for pcid, x2apic, tsc-deadline and invpcid, which TCG lacks (one warning each,
# harmless to a user-mode process).
run() { "$qemu" -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2); }

fail() {
  echo "FAIL: $*"
  exit 1
}

# The emulated CPU really lacks AVX-512 (the host may have it).
out=$(run "$cpuft" env 2>&1) || fail "cpuft env under qemu -cpu $cpu exited $?: $out"
echo "$out"
grep -qx "kernels: reference" <<<"$out" ||
  fail "cpuft env under qemu -cpu $cpu did not pick the reference kernels"

if out=$(CPUFT_FORCE_ISA=avx512 run "$cpuft" env 2>&1); then
  fail "CPUFT_FORCE_ISA=avx512 accepted on a CPU without AVX-512: $out"
fi
grep -q "lacks AVX-512" <<<"$out" || fail "CPUFT_FORCE_ISA=avx512 refused without the reason: $out"

# A CPU below the baseline (Westmere: SSE4.2, no AVX) gets one line and exit 1, not SIGILL.
code=0
out=$("$qemu" -cpu Westmere "$cpuft" env 2>&1) || code=$?
out=$(grep -v "TCG doesn't support requested feature" <<<"$out" || true)
[ "$code" = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
  grep -q "^error: this cpuft binary was built for x86-64-v3 CPUs and this CPU is older" <<<"$out" ||
  fail "cpuft env under qemu -cpu Westmere: exit $code: $out"

for test in "$@"; do
  binary=${test%%:*}
  filter='*'
  [ "$binary" = "$test" ] || filter=${test#*:}
  echo "== $(basename "$binary") --gtest_filter=$filter under qemu-x86_64 -cpu $cpu"
  run "$binary" --gtest_filter="$filter" --gtest_brief=1 ||
    fail "$(basename "$binary") --gtest_filter=$filter under qemu -cpu $cpu exited $?"
done
echo "OK: cpuft env and $# unit test binaries ran under qemu-x86_64 -cpu $cpu"
