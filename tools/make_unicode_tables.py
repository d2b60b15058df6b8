#!/usr/bin/env python3
"""Generates src/data/unicode_tables.cc, the character data of cpuft's WordPiece tokenizer.

Usage (offline, in the golden venv so that the check against `tokenizers` runs):
    HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/make_unicode_tables.py

The tables start from Python's `unicodedata` (general categories, lowercase mapping, canonical
decomposition, canonical combining class). Hugging Face's `tokenizers` does not use one Unicode
version: its category tests come from the `unicode_categories` crate (about Unicode 8-10), its NFD
from `unicode-normalization-alignments`, and its lowercase from Rust's `char::to_lowercase` (Unicode
16 in current Rust). Since cpuft must give the same ids as BertTokenizerFast, the script asks the
installed `tokenizers` about every code point, stage by stage, and where it disagrees with
`unicodedata` the table follows `tokenizers`; each such correction is counted in the file header.
Without `tokenizers` (--no-hf) the tables are pure `unicodedata`.
"""
import argparse
import os
import sys
import unicodedata as ud

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "data", "unicode_tables.cc")

# Flags of the range table (must match unicode_tables.h).
DROP, SPACE, PUNCT, MN, WHITE, CMARK, WORD = 1, 2, 4, 8, 16, 32, 64

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
ALL = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def py_tables():
    flags, lower, nfd, ccc = {}, {}, {}, {}
    for c in ALL:
        ch = chr(c)
        cat = ud.category(ch)
        f = 0
        # BertNormalizer's clean_text: removes NUL, U+FFFD and "other" characters except \t \n \r
        # (which count as whitespace). The crate's is_other() is Cc|Cf|Co|Cn, but unassigned (Cn)
        # characters are kept in practice (verified below against tokenizers).
        if c in (0, 0xFFFD) or (cat in ("Cc", "Cf", "Co") and ch not in "\t\n\r"):
            f |= DROP
        # Rust's char::is_whitespace is the White_Space property: Zs, Zl, Zp and 9-13, 0x85.
        elif cat in ("Zs", "Zl", "Zp") or c in (9, 10, 11, 12, 13, 0x85):
            f |= SPACE
        if 33 <= c <= 47 or 58 <= c <= 64 or 91 <= c <= 96 or 123 <= c <= 126 or cat[0] == "P":
            f |= PUNCT
        if cat == "Mn":
            f |= MN
        # Rust's char::is_whitespace (WhitespaceSplit, BertPreTokenizer), before any clean_text.
        if cat in ("Zs", "Zl", "Zp") or c in (9, 10, 11, 12, 13, 0x85):
            f |= WHITE
        # unicode-normalization's is_combining_mark (the StripAccents normalizer): category M*.
        if cat[0] == "M":
            f |= CMARK
        # The regex crate's Unicode \w (the Whitespace pre-tokenizer, single_word added tokens):
        # Alphabetic, marks, decimal digits, connector punctuation, joiners.
        if cat[0] in "LM" or cat in ("Nd", "Nl", "Pc") or c in (0x200C, 0x200D):
            f |= WORD
        if f:
            flags[c] = f
        lo = ch.lower()  # one char alone: no final-sigma context, like char::to_lowercase
        if lo != ch:
            lower[c] = [ord(x) for x in lo]
        if not HANGUL_FIRST <= c <= HANGUL_LAST:
            d = ud.normalize("NFD", ch)
            if d != ch:
                nfd[c] = [ord(x) for x in d]
        if ud.combining(ch):
            ccc[c] = ud.combining(ch)
    return flags, lower, nfd, ccc


def strip_with(flags, nfd, c):
    seq = nfd.get(c, [c]) if not HANGUL_FIRST <= c <= HANGUL_LAST else [
        ord(x) for x in ud.normalize("NFD", chr(c))]
    return [x for x in seq if not flags.get(x, 0) & MN]


def apply_hf(flags, lower, nfd, ccc, notes):
    from tokenizers import __version__ as tok_version
    from tokenizers import normalizers, pre_tokenizers

    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                       strip_accents=False, lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                       strip_accents=True, lowercase=False)
    low = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                     strip_accents=False, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    white_split = pre_tokenizers.WhitespaceSplit()
    word_split = pre_tokenizers.Whitespace()
    strip_marks = normalizers.StripAccents()
    counts = {"clean": 0, "punct": 0, "mn": 0, "nfd": 0, "lower": 0, "white": 0, "cmark": 0,
              "word": 0}
    hf_strip = {}
    for c in ALL:
        ch = chr(c)
        f = flags.get(c, 0)
        out = clean.normalize_str(ch)
        hf = DROP if out == "" else SPACE if (out == " " and c != 0x20) or c == 0x20 else 0
        if hf != f & (DROP | SPACE):
            counts["clean"] += 1
            f = (f & ~(DROP | SPACE)) | hf
        # The pre-tokenizers see the text as the normalizer left it, which need not have been
        # cleaned (clean_text false, or no BertNormalizer): every code point is checked.
        hw = len(white_split.pre_tokenize_str("a" + ch + "a")) == 2
        if hw != bool(f & WHITE):
            counts["white"] += 1
            f ^= WHITE
        if not f & WHITE:
            hp = len(pre.pre_tokenize_str("a" + ch + "a")) == 3
            if hp != bool(f & PUNCT):
                counts["punct"] += 1
                f ^= PUNCT
        n_words = len(word_split.pre_tokenize_str("a" + ch + "a"))
        if (n_words == 2) != bool(f & WHITE):
            sys.exit(f"U+{c:04X}: the regex \\s of Whitespace and char::is_whitespace disagree")
        if (n_words == 1) != bool(f & WORD):
            counts["word"] += 1
            f ^= WORD
        hc = strip_marks.normalize_str(ch) == ""
        if hc != bool(f & CMARK):
            counts["cmark"] += 1
            f ^= CMARK
        s = strip.normalize_str(ch)
        hf_strip[c] = [ord(x) for x in s]
        if c not in nfd and not HANGUL_FIRST <= c <= HANGUL_LAST:
            hm = s == ""
            if hm != bool(f & MN):
                counts["mn"] += 1
                f ^= MN
                # A mark the crate does not know is unassigned to it: no combining class either.
                ccc.pop(c, None)
        if f:
            flags[c] = f
        else:
            flags.pop(c, None)
        lo = low.normalize_str(ch)
        if lo != ch.lower():
            counts["lower"] += 1
        if lo != ch:
            lower[c] = [ord(x) for x in lo]
        else:
            lower.pop(c, None)
    # Decompositions: the stripped form must now agree; where it does not, store HF's output
    # (marks already removed) as the decomposition.
    for c in ALL:
        if strip_with(flags, nfd, c) != hf_strip[c]:
            if HANGUL_FIRST <= c <= HANGUL_LAST:
                sys.exit(f"Hangul U+{c:04X} disagrees with tokenizers; fix the algorithm")
            counts["nfd"] += 1
            nfd[c] = hf_strip[c]
    notes.append(f"Checked against tokenizers {tok_version}; code points corrected to its behaviour:")
    notes.append("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts


def probe_ccc(flags, nfd, ccc, notes):
    """Makes the combining classes those of tokenizers' NFD, which may differ from unicodedata's:
    a class that changed between Unicode versions (U+1734 was 0 before Unicode 14), or a mark newer
    than the crate's data. NFD orders adjacent marks x, y as x y unless ccc(x) > ccc(y) > 0, so the
    class of c shows in "a" + c + r and "a" + r + c for reference marks r of every class: the
    lowest code point of each class, with no decomposition, that tokenizers orders against U+0301
    as its class says. Only code
    points that may carry a class are probed: marks (M*) and those with a class in unicodedata."""
    from tokenizers import normalizers
    nfd_hf = normalizers.NFD()

    def swaps(c, r):  # whether NFD reorders "a" + c + r, and "a" + r + c
        a, b = "a" + chr(c) + chr(r), "a" + chr(r) + chr(c)
        return nfd_hf.normalize_str(a) != a, nfd_hf.normalize_str(b) != b

    classes = sorted(set(ccc.values()))
    refs = {}
    for v in classes:
        for c in sorted(k for k, w in ccc.items() if w == v and k not in nfd):
            if swaps(c, 0x301) == (v > 230, 230 > v):  # U+0301's class is 230
                refs[v] = c
                break
    known = sorted(refs)

    def expected(m):
        return [(m > v > 0, v > m > 0) for v in known]

    def observed(c):
        return [swaps(c, refs[v]) for v in known]

    changed = []
    for c in ALL:
        if c in nfd or HANGUL_FIRST <= c <= HANGUL_LAST:
            continue
        if not (ccc.get(c, 0) or flags.get(c, 0) & CMARK or ud.category(chr(c))[0] == "M"):
            continue
        seen = observed(c)
        if seen == expected(ccc.get(c, 0)):
            continue
        fits = [m for m in [0] + classes if expected(m) == seen]
        if not fits:
            sys.exit(f"U+{c:04X}: tokenizers' NFD orders it as no combining class would")
        if fits[0]:
            ccc[c] = fits[0]
        else:
            ccc.pop(c, None)
        changed.append(c)
    runs = []  # consecutive code points as one range
    for c in changed:
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    names = [f"U+{a:04X}" if a == b else f"U+{a:04X}-{b:04X}" for a, b in runs]
    notes.append(f"  combining classes probed through NFD ({len(known)} reference marks), "
                 f"{len(changed)} changed:")
    line = " "
    for n in names:
        if len(line) + len(n) + 2 > 94:
            notes.append(line)
            line = " "
        line += " " + n
    if names:
        notes.append(line)


def ranges(flags):
    out, start, cur = [], None, 0
    for c in range(0x110001):
        f = flags.get(c, 0) if c < 0x110000 else -1
        if f != cur:
            if cur:
                out.append((start, c - 1, cur))
            start, cur = c, f
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-hf", action="store_true", help="pure unicodedata, no tokenizers check")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    flags, lower, nfd, ccc = py_tables()
    notes = [f"Base data: Python {sys.version.split()[0]} unicodedata, Unicode {ud.unidata_version}."]
    if not args.no_hf:
        apply_hf(flags, lower, nfd, ccc, notes)
        probe_ccc(flags, nfd, ccc, notes)

    pool, pool_index = [], {}

    def intern(seq):
        key = tuple(seq)
        if key not in pool_index:
            pool_index[key] = len(pool)
            pool.extend(seq)
        return pool_index[key]

    def mapping(table):
        rows = []
        for c in sorted(table):
            seq = table[c]
            assert len(seq) < 256
            rows.append(f"{{0x{c:X},{intern(seq)},{len(seq)}}}")
        return rows

    flag_rows = [f"{{0x{a:X},0x{b:X},{f}}}" for a, b, f in ranges(flags)]
    ccc_ranges = []
    for c in sorted(ccc):
        if ccc_ranges and ccc_ranges[-1][1] == c - 1 and ccc_ranges[-1][2] == ccc[c]:
            ccc_ranges[-1][1] = c
        else:
            ccc_ranges.append([c, c, ccc[c]])
    ccc_rows = [f"{{0x{a:X},0x{b:X},{v}}}" for a, b, v in ccc_ranges]
    lower_rows = mapping(lower)
    nfd_rows = mapping(nfd)
    assert len(pool) < 65536

    def block(rows, _unused=None):
        # Greedy packing into lines of at most 100 columns (the repository's limit).
        lines, cur = [], "   "
        for r in rows:
            if len(cur) + 1 + len(r) + 1 > 100:
                lines.append(cur)
                cur = "   "
            cur += " " + r + ","
        if cur.strip():
            lines.append(cur)
        return "\n".join(lines)

    version = ud.unidata_version
    text = f"""// Generated by tools/make_unicode_tables.py. Do not edit.
// {chr(10).join('// ' + n for n in notes)[3:]}
// Hangul syllables are decomposed in code (unicode_tables.h), not listed here.
// clang-format off
#include "data/unicode_tables.h"

namespace cpuft::unicode {{

const char* const kUnicodeVersion = "{version}";

const FlagRange kFlagRanges[] = {{
{block(flag_rows)}
}};
const std::size_t kFlagRangeCount = sizeof(kFlagRanges) / sizeof(kFlagRanges[0]);

const CccRange kCccRanges[] = {{
{block(ccc_rows)}
}};
const std::size_t kCccRangeCount = sizeof(kCccRanges) / sizeof(kCccRanges[0]);

const Mapping kLowercase[] = {{
{block(lower_rows, 7)}
}};
const std::size_t kLowercaseCount = sizeof(kLowercase) / sizeof(kLowercase[0]);

const Mapping kDecomposition[] = {{
{block(nfd_rows, 7)}
}};
const std::size_t kDecompositionCount = sizeof(kDecomposition) / sizeof(kDecomposition[0]);

const char32_t kMappingPool[] = {{
{block([f"0x{x:X}" for x in pool], 12)}
}};

}}  // namespace cpuft::unicode
// clang-format on
"""
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}: {len(flag_rows)} flag ranges, {len(ccc_rows)} ccc ranges, "
          f"{len(lower_rows)} lowercase, {len(nfd_rows)} decompositions, pool {len(pool)}, "
          f"{len(text)} bytes")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
