#!/usr/bin/env python3
"""Generates src/data/composition_table.cc: the canonical compositions of NFC.

Usage (offline, in the golden venv, whose `tokenizers` is the reference):
    HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/make_composition_table.py [--fixture F]

NFC is NFD (unicode_tables.cc's decompositions, which follow `tokenizers`) followed by canonical
composition: a starter and a later character it is not blocked from combine into their primary
composite. The pairs come from Python's `unicodedata`: every character whose canonical
decomposition is two characters and that NFC keeps (so not a composition exclusion); Hangul
syllables compose in code. The script then composes every code point, every pair of the table
and a set of mixed strings with this table, in the C++ algorithm's order, and requires the result
to equal `tokenizers`' NFC normalizer; a pair `tokenizers` does not compose is left out and
counted in the header. --fixture writes those mixed strings and tokenizers' NFC of each as JSON
lines for the C++ test (tests/fixtures/nfc_cases.jsonl).
"""
import argparse
import json
import os
import random
import sys
import unicodedata as ud

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "data", "composition_table.cc")
SBASE, LBASE, VBASE, TBASE = 0xAC00, 0x1100, 0x1161, 0x11A7
LCOUNT, VCOUNT, TCOUNT = 19, 21, 28
NCOUNT, SCOUNT = VCOUNT * TCOUNT, 19 * 21 * 28
ALL = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def primary_composites():
    pairs = {}
    for c in ALL:
        d = ud.decomposition(chr(c))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) != 2:
            continue
        if ud.normalize("NFC", chr(c)) != chr(c):  # a composition exclusion
            continue
        pairs[(parts[0], parts[1])] = c
    return pairs


def compose(s: str, pairs) -> str:
    """Canonical composition of an NFD string (UAX #15's algorithm, as the C++ code does it)."""
    out = list(s)
    if not out:
        return s
    starter_pos, last_class = 0, ud.combining(out[0])
    if last_class != 0:
        last_class = 256  # no starter yet: nothing composes with it
    comp_pos = 1
    for i in range(1, len(out)):
        ch = out[i]
        ch_class = ud.combining(ch)
        composite = compose_pair(ord(out[starter_pos]), ord(ch), pairs)
        if composite is not None and (last_class < ch_class or last_class == 0):
            out[starter_pos] = chr(composite)
            continue
        if ch_class == 0:
            starter_pos = comp_pos
        last_class = ch_class
        out[comp_pos] = ch
        comp_pos += 1
    return "".join(out[:comp_pos])


def compose_pair(a: int, b: int, pairs):
    if LBASE <= a < LBASE + LCOUNT and VBASE <= b < VBASE + VCOUNT:
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT
    if SBASE <= a < SBASE + SCOUNT and (a - SBASE) % TCOUNT == 0 and TBASE < b < TBASE + TCOUNT:
        return a + (b - TBASE)
    return pairs.get((a, b))


def mixed_strings(pairs, rng):
    """Strings that exercise composition: pairs of the table, reordered marks, blocked marks,
    Hangul jamo, already composed text, and the ASCII around them."""
    marks = [c for c in range(0x300, 0x370)] + [0x5B0, 0x5B9, 0x64B, 0x93C, 0x9BC, 0x3099, 0x309A]
    keys = sorted(pairs)
    out = ["", "plain ASCII text.", "Café, naïve, résumé, Ångström, Việt Nam", "한국어 텍스트"]
    for _ in range(600):
        s = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.35:
                a, b = keys[rng.randrange(len(keys))]
                s += [chr(a), chr(b)]
            elif kind < 0.55:
                s.append(chr(rng.choice(keys)[0]))
                s += [chr(rng.choice(marks)) for _ in range(rng.randint(1, 3))]
            elif kind < 0.7:
                s += [chr(LBASE + rng.randrange(LCOUNT)), chr(VBASE + rng.randrange(VCOUNT))]
                if rng.random() < 0.5:
                    s.append(chr(TBASE + 1 + rng.randrange(TCOUNT - 1)))
            elif kind < 0.85:
                s.append(chr(rng.choice(list(pairs.values()))))
                if rng.random() < 0.5:
                    s.append(chr(rng.choice(marks)))
            else:
                s.append(rng.choice(" abcXYZ09.,"))
        out.append("".join(s))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", help="write the mixed strings and tokenizers' NFC (jsonl)")
    args = ap.parse_args()
    from tokenizers import __version__ as tok_version
    from tokenizers import normalizers

    nfc, nfd = normalizers.NFC(), normalizers.NFD()
    pairs = primary_composites()
    dropped = 0
    for (a, b), c in sorted(pairs.items()):
        if nfc.normalize_str(chr(a) + chr(b)) != chr(c):
            del pairs[(a, b)]
            dropped += 1
    ours = lambda s: compose(nfd.normalize_str(s), pairs)  # noqa: E731
    wrong = [c for c in ALL if ours(chr(c)) != nfc.normalize_str(chr(c))]
    if wrong:
        sys.exit(f"{len(wrong)} code points compose otherwise than tokenizers: "
                 + " ".join(f"U+{c:04X}" for c in wrong[:20]))
    cases = mixed_strings(pairs, random.Random(7))
    bad = [s for s in cases if ours(s) != nfc.normalize_str(s)]
    if bad:
        sys.exit(f"{len(bad)} mixed strings compose otherwise than tokenizers: {bad[:3]!r}")
    print(f"{len(pairs)} compositions ({dropped} left out as tokenizers does); every code point "
          f"and {len(cases)} mixed strings agree with tokenizers {tok_version}")

    lines = [
        "// Generated by tools/make_composition_table.py. Do not edit.",
        f"// Base data: Python {sys.version.split()[0]} unicodedata, Unicode {ud.unidata_version}:",
        "// every primary composite (two-character canonical decomposition, not excluded).",
        f"// Checked against tokenizers {tok_version}'s NFC on every code point and "
        f"{len(cases)} mixed strings;",
        f"// pairs it does not compose, left out: {dropped}. Hangul composes in code.",
        "// clang-format off",
        '#include "data/unicode_tables.h"',
        "",
        "namespace cpuft::unicode {",
        "",
        "const Composition kCompositions[] = {",
    ]
    row = []
    for (a, b), c in sorted(pairs.items()):
        row.append(f"{{0x{a:X},0x{b:X},0x{c:X}}}")
        if len(row) == 5:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines += ["};", "const std::size_t kCompositionCount = sizeof(kCompositions) / "
              "sizeof(kCompositions[0]);", "", "}  // namespace cpuft::unicode", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {os.path.normpath(OUT)}")
    if args.fixture:
        with open(args.fixture, "w") as f:
            for s in cases:
                f.write(json.dumps({"text": s, "nfc": nfc.normalize_str(s)}, ensure_ascii=True)
                        + "\n")
        print(f"wrote {args.fixture}")


if __name__ == "__main__":
    main()
