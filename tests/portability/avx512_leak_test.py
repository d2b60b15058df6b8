#!/usr/bin/env python3
"""No AVX-512 outside src/kernels/avx512: the portable build's promise, checked on its objects.

Everything but src/kernels/avx512/*.cc is compiled for the baseline (CPUFT_MARCH, x86-64-v3), and
kernels.cc calls those files only on a CPU that has AVX-512. An AVX-512 instruction anywhere else
(a stray -mavx512* or -march, a target attribute, an inline function of a header instantiated in an
AVX-512 file and picked by the linker for everyone) makes the binary die with SIGILL on a CPU
without AVX-512, on the first call and not before. This test disassembles every object of the
libraries, apps and tests (objdump -d) and fails naming the object, the function and the first
AVX-512 instruction of each object that has one. In the objects of src/kernels/avx512 only
functions of namespace cpuft::avx512 may have AVX-512: any other (an inline or template function
of a shared header, emitted there as a weak copy) may be the copy the linker keeps for every
caller (see src/kernels/avx512/avx512.h).

An instruction counts as AVX-512 when it is EVEX-encoded (first byte after the legacy prefixes is
0x62, which in 64-bit code is always EVEX: every AVX-512 instruction, whatever its vector width),
names a zmm register, xmm16-31/ymm16-31 or a mask register %k0-%k7 (kmov*, kand*, ...: VEX-encoded
but AVX-512), or is an AMX instruction. As a check that the scan sees what it looks for, the
objects of src/kernels/avx512 must contain such instructions.

usage: avx512_leak_test.py OBJECT_LIST [--objdump PATH] [--skip REASON]
  OBJECT_LIST  one object file per line (tests/CMakeLists.txt writes it when CMake generates)
  --skip       print REASON and exit 77 (ctest's skip): a build for -march=native or another
               -march that allows AVX-512 everywhere
Also skipped where objects of the list are not built (a build of some targets only).
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ALLOWED = "/src/kernels/CMakeFiles/cpuft_kernels.dir/avx512/"
LEGACY_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
AVX512_REGISTER = re.compile(r"%(zmm\d+|[xy]mm(1[6-9]|2\d|3[01])\b|k[0-7]\b|tmm\d)")
AMX = re.compile(r"^(ldtilecfg|sttilecfg|tilerelease|tilezero|tileloadd|tileloaddt1|tilestored|"
                 r"tdp)")
# "  1a:\t62 f1 7c 48 10 00 \tvmovups (%rax),%zmm0" (one line per instruction: --insn-width=15)
INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{2}(?: [0-9a-f]{2})*)\s*\t(.*)$")
FUNCTION = re.compile(r"[0-9a-f]+ <(.*)>:")
# Lines that may hold one of the above (avx512_reason decides). Objects reach a million lines:
# three plain searches are ten times faster than one alternation or a per-line loop.
CANDIDATES = [
    re.compile(r":\t(?:(?:26|2e|36|3e|64|65|66|67|f0|f2|f3) )*62 "),
    re.compile(r"%(?:zmm|[xy]mm(?:1[6-9]|2\d|3[01])\b|k[0-7]\b|tmm)"),
    re.compile(r"\t(?:ldtilecfg|sttilecfg|tilerelease|tilezero|tileloadd|tilestored|tdp)"),
]


def avx512_reason(raw, text):
    """Why the instruction is AVX-512, or None."""
    mnemonic = text.split()[0] if text.split() else ""
    if mnemonic == "(bad)":
        return None
    opcode = next((b for b in (int(x, 16) for x in raw.split()) if b not in LEGACY_PREFIXES), None)
    if opcode == 0x62:
        return "EVEX-encoded"
    if AVX512_REGISTER.search(text):
        return "AVX-512 register"
    if AMX.match(mnemonic):
        return "AMX"
    return None


def demangle(symbol):
    try:
        out = subprocess.run(["c++filt", symbol], capture_output=True, text=True)
        return out.stdout.strip() or symbol
    except OSError:
        return symbol


def in_namespace_avx512(symbol):
    """True for cpuft::avx512::* and for what is local to one of its functions (lambdas, OpenMP
    outlined bodies), from the mangled name."""
    return symbol.startswith(("_ZN5cpuft6avx512", "_ZZN5cpuft6avx512"))


def first_avx512(objdump, path, allowed_function):
    """(function, address, instruction, reason) of the first AVX-512 instruction of path outside
    the functions allowed_function accepts, and whether path has AVX-512 at all."""
    out = subprocess.run([objdump, "-d", "--insn-width=15", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{objdump} -d {path} failed: {out.stderr.strip()}")
    text = out.stdout
    hits = (m.start() for c in CANDIDATES for m in c.finditer(text))
    lines = sorted({text.rfind("\n", 0, hit) + 1 for hit in hits})
    seen = False
    for start in lines:
        end = text.find("\n", start)
        match = INSTRUCTION.match(text[start:end if end >= 0 else len(text)])
        if not match:
            continue
        reason = avx512_reason(match.group(2), match.group(3))
        if not reason:
            continue
        seen = True
        header = text.rfind(">:\n", 0, start)
        header = FUNCTION.match(text, text.rfind("\n", 0, header) + 1) if header >= 0 else None
        function = header.group(1) if header else "?"
        if not allowed_function(function):
            instruction = " ".join(match.group(3).split("#")[0].split())
            return (demangle(function), match.group(1), instruction, reason), seen
    return None, seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("object_list")
    parser.add_argument("--objdump", default="objdump")
    parser.add_argument("--skip")
    args = parser.parse_args()
    if args.skip:
        print(f"SKIP: {args.skip}")
        return 77

    with open(args.object_list) as f:
        objects = sorted({os.path.normpath(line.strip()) for line in f if line.strip()})
    missing = [o for o in objects if not os.path.isfile(o)]
    if missing:
        # scripts/test.sh builds only the distributed targets of the mpich preset, whose tests
        # labelled unit include this one.
        print(f"SKIP: {len(missing)} of {len(objects)} objects are not built (a build of some "
              f"targets only), first {missing[0]}")
        return 77

    def scan(o):
        if ALLOWED in o:
            return first_avx512(args.objdump, o, in_namespace_avx512)
        return first_avx512(args.objdump, o, lambda f: False)

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = dict(zip(objects, pool.map(scan, objects)))

    leaks = [(o, leak) for o, (leak, _) in found.items() if leak]
    kernels = [o for o in objects if ALLOWED in o]
    for o, (function, address, instruction, reason) in leaks:
        print(f"FAIL: {o}: {function} +0x{address}: {instruction} ({reason})")
    if not kernels or not any(found[o][1] for o in kernels):
        print(f"FAIL: no AVX-512 found in the {len(kernels)} objects of src/kernels/avx512, so the "
              "scan cannot see it elsewhere either")
        return 1
    if leaks:
        print(f"{len(leaks)} of {len(objects)} objects contain AVX-512 outside src/kernels/avx512: "
              "such a binary dies with SIGILL on a CPU without AVX-512")
        return 1
    print(f"OK: {len(objects)} objects, AVX-512 only in the {len(kernels)} of src/kernels/avx512")
    return 0


if __name__ == "__main__":
    sys.exit(main())
