#!/usr/bin/env python3
"""Writes the tokenizer fixtures that cpuft's WordPiece tests compare against Hugging Face.

Run offline in the golden venv (transformers + tokenizers), from anywhere:
    HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/make_tokenizer_fixture.py [--shared DIR]

Outputs (committed):
  tests/fixtures/tokenizer_hard_cases.jsonl  one JSON object per case: the tokenizer settings, the
      input text(s), max_length (null: no truncation) and HF's input_ids / token_type_ids.
  tests/fixtures/tokenizer_glue_digest.json  for every GLUE TSV and tokenizer setting, an FNV-1a 64
      hash of HF's ids over all rows, plus per-1000-row hashes so that a failure names the rows.

The HF tokenizer is loaded as users load it: AutoTokenizer.from_pretrained on a folder holding
vocab.txt and a tokenizer_config.json with the setting (tokenizer_class BertTokenizer).

--check-saved DIR: instead, load DIR (written by cpuft's WordPieceTokenizer::save) with
AutoTokenizer and check that it gives the hard-case ids recorded for setting --config.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import AutoTokenizer  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# Tokenizer settings: name -> (vocab file under shared/data/vocab, tokenizer_config fields).
CONFIGS = {
    "uncased": ("bert-base-uncased-vocab.txt", {"do_lower_case": True}),
    "cased": ("bert-base-cased-vocab.txt", {"do_lower_case": False}),
    "uncased_keep_accents": ("bert-base-uncased-vocab.txt",
                             {"do_lower_case": True, "strip_accents": False}),
    "cased_strip_accents": ("bert-base-cased-vocab.txt",
                            {"do_lower_case": False, "strip_accents": True}),
    "uncased_no_cjk": ("bert-base-uncased-vocab.txt",
                       {"do_lower_case": True, "tokenize_chinese_chars": False}),
}
GLUE_CONFIGS = ["uncased", "cased"]

LONG_WORD = "pneumonoultramicroscopicsilicovolcanoconiosis" * 3  # 135 characters
HARD_TEXTS = [
    # accents, ligatures, compatibility characters
    "café naïve Ångström résumé Zürich façade", "ﬁnance ﬂow ﬀ ﬃ", "Ⅻ ½ ² ㎏ ™ ℃",
    "e\u0301 a\u0300\u0323 o\u0323\u0302 q\u0307\u0323", "\u0041\u030a vs \u00c5 vs \u212b",
    "Crème brûlée à la carte", "señor jalapeño", "Ωmega ﬆ",
    # CJK and other scripts
    "中文字符", "我爱北京天安门。", "日本語のテキスト、カタカナ", "한국어 문장입니다", "漢字かな混じり文",
    "𠀀𠀁 𪜀 丽", "ＦＵＬＬＷＩＤＴＨ ｆｏｒｍｓ　１２３！？", "Ελληνικά ΑΘΗΝΑ ΟΔΟΣ σοφός",
    "Русский ТЕКСТ ёЁ", "İstanbul IŞIK ıi Iı", "straße STRASSE ẞ", "ǅ ǈ ǋ ǲ", "ΐ ΰ ᾼ ῼ",
    "עברית ‏mixed", "العربية النص", "हिन्दी पाठ", "ไทย ภาษา", "Tiếng Việt có dấu",
    "ᏣᎳᎩ ꭰ", "𐐀𐐨 Deseret", "Ⓐⓑ 🄰",
    # emoji
    "I love it 😀😂🤣!", "👨‍👩‍👧‍👦 family", "👍🏽 👍🏿 thumbs", "🏳️‍🌈 flag ❤️ ✨", "1️⃣ #️⃣",
    "🇺🇸🇫🇷", "😀x😀", "☃ ★ ♥",
    # control, format and zero-width characters
    "zero\u200bwidth", "zw\u200djoiner", "\ufeffbom start", "nul\x00byte", "del\x7fchar",
    "soft\u00adhyphen", "a\u200eb\u200fc", "x\u2028y\u2029z", "vt\x0bff\x0cnel\x85end",
    "rep\ufffdlacement", "private\ue000use", "\u0600\u061c\u06dd arabic format",
    "tag\U000e0041chars", "\x01\x02\x1f\x1c", "nb\u00a0sp em\u2003sp ideo\u3000sp",
    # combining marks and marks that are not nonspacing
    "\u0300\u0301 leading marks", "x\u20dd enclosing", "\u0915\u093f \u0915\u094d\u0937",
    "\U0001d165\U0001d16d\U0001d165", "a\u0345b",
    # characters where tokenizers' Unicode data differ from Python 3.11's Unicode 14 (see
    # tools/make_unicode_tables.py): new punctuation, format and nonspacing-mark characters that
    # tokenizers treats as ordinary letters, and lowercase mappings newer than Unicode 14.
    "x\u2e43y z\u08e2w a\u07fdb \u166d \U00011660 \u1c89 \ua7cb \U00010d50",
    # punctuation, symbols, numbers
    "Hello, world! How's it going?", "e-mail: foo@bar.com (test) [x] {y} <z>",
    "\"quoted\" 'single' «guillemets» „German“", "...!!!???---___", "a/b\\c|d~e`f^g",
    "$2.5 billion, 3.14%, #1, 10:30 a.m.", "¿Qué? ¡Sí!", "—dash– ‐hyphen‑", "§ ¶ † ‡ • ‣ ※",
    "don't can't won't", "U.S.A. e.g. i.e.", "3,000,000 1.5e-3 0x1F",
    # whitespace
    "tab\tseparated\twords", "new\nline\r\nand\rcarriage", "  leading and trailing  ",
    "", " ", "\t\n\r ", "\u3000\u2003", "a", "[", "##", "##ing",
    # special tokens inside text
    "[CLS] hello [SEP]", "ab[MASK]cd", "[UNK][PAD]", "[mask] lowercase", "[SEP][SEP]x[SEP",
    "[CLS][CLS]", "x[MASK]", "[MASK", "[MA SK]",
    # words near and over max_input_chars_per_word
    "a" * 100, "a" * 101, "é" * 100, "é" * 101, LONG_WORD, "short " + LONG_WORD + " tail",
    "x" * 99 + "é", "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "unaffable unbelievably tokenization hyperparameterization",
]

MEDIUM = "The quick brown fox jumps over the lazy dog near the riverbank."
LONG = ("In the beginning of the experiment, researchers measured the temperature, pressure "
        "and humidity of every sample several times a day; the results were inconsistent. ") * 4
PAIRS = [
    (MEDIUM, "A fox jumped."), ("Short.", LONG), (LONG, "Short."), (LONG, LONG), (MEDIUM, MEDIUM),
    ("", LONG), (LONG, ""), ("", ""), ("café 中文 😀", "naïve ﬁ İ"), ("a " * 7, "b " * 7),
    ("a " * 6, "b " * 7), ("a " * 7, "b " * 6), ("a " * 13, "b " * 1), ("a " * 1, "b " * 13),
    ("a " * 40, "b " * 40), ("a " * 41, "b " * 40), ("a " * 40, "b " * 41), ("[SEP] x", "[CLS] y"),
]
MAX_LENGTHS = [16, 32, 128]


def make_tokenizer(shared, name):
    vocab, fields = CONFIGS[name]
    d = tempfile.mkdtemp(prefix=f"cpuft_tok_{name}_")
    shutil.copy(os.path.join(shared, "data", "vocab", vocab), os.path.join(d, "vocab.txt"))
    config = {"tokenizer_class": "BertTokenizer", "model_max_length": 512}
    config.update(fields)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    tok = AutoTokenizer.from_pretrained(d)
    shutil.rmtree(d)
    return tok


def encode(tok, a, b, max_length):
    # Batched call, as run_glue.py's dataset.map(batched=True) makes it: a one-text call treats
    # an empty second text as no pair at all ([CLS] a [SEP]), a batched one keeps the pair
    # ([CLS] a [SEP] [SEP]); cpuft follows the batched form.
    kw = {"truncation": True, "max_length": max_length} if max_length else {"truncation": False}
    e = tok([a], [b], **kw) if b is not None else tok([a], **kw)
    return e["input_ids"][0], e["token_type_ids"][0]


def hard_cases(shared):
    cases = []
    for name in CONFIGS:
        tok = make_tokenizer(shared, name)
        vocab, fields = CONFIGS[name]
        setting = {"config": name, "vocab": vocab, **fields}
        for text in HARD_TEXTS:
            ids, types = encode(tok, text, None, None)
            cases.append({**setting, "a": text, "max_length": None, "input_ids": ids,
                          "token_type_ids": types})
        if name not in GLUE_CONFIGS:
            continue
        for a, b in PAIRS:
            for m in MAX_LENGTHS:
                ids, types = encode(tok, a, b, m)
                cases.append({**setting, "a": a, "b": b, "max_length": m, "input_ids": ids,
                              "token_type_ids": types})
        for m in MAX_LENGTHS:
            ids, types = encode(tok, LONG, None, m)
            cases.append({**setting, "a": LONG, "max_length": m, "input_ids": ids,
                          "token_type_ids": types})
    return cases


# GLUE files: path under shared/data, header line or not, text columns (PROVENANCE.md).
GLUE_FILES = [
    ("glue/CoLA/train.tsv", False, [3]), ("glue/CoLA/dev.tsv", False, [3]),
    ("glue/CoLA/test.tsv", True, [1]),
    ("glue/SST-2/train.tsv", True, [0]), ("glue/SST-2/dev.tsv", True, [0]),
    ("glue/SST-2/test.tsv", True, [1]),
    ("glue/MRPC/train.tsv", True, [3, 4]), ("glue/MRPC/dev.tsv", True, [3, 4]),
    ("glue/MRPC/test.tsv", True, [3, 4]),
    ("glue/RTE/train.tsv", True, [1, 2]), ("glue/RTE/dev.tsv", True, [1, 2]),
    ("glue/RTE/test.tsv", True, [1, 2]),
    ("glue/STS-B/train.tsv", True, [7, 8]), ("glue/STS-B/dev.tsv", True, [7, 8]),
    ("glue/STS-B/test.tsv", True, [7, 8]),
    ("glue/QNLI/dev.tsv", True, [1, 2]), ("glue/QNLI/test.tsv", True, [1, 2]),
    ("glue/WNLI/train.tsv", True, [1, 2]), ("glue/WNLI/dev.tsv", True, [1, 2]),
    ("glue/WNLI/test.tsv", True, [1, 2]), ("glue/diagnostic/diagnostic.tsv", True, [1, 2]),
    ("glue_variants/MRPC_untokenized_msr/train.tsv", True, [3, 4]),
    ("glue_variants/MRPC_untokenized_msr/dev.tsv", True, [3, 4]),
    ("glue_variants/MRPC_untokenized_msr/test.tsv", True, [3, 4]),
]
BLOCK_ROWS = 1000
GLUE_MAX_LENGTH = 128
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
# Separators in the hashed stream (as uint32): after each text's ids, after the encoding's
# input_ids, after its token_type_ids.
SEP_TEXT, SEP_IDS, SEP_TYPES = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD


def fnv_update(h, values):
    for v in values:
        for byte in (v & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def read_rows(path, header, columns):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if header:
        lines = lines[1:]
    return [[line.split("\t")[c] for c in columns] for line in lines]


def glue_digest(shared):
    out = {"hash": "FNV-1a 64 over uint32 little-endian: per row, for each text column its ids "
                   "(no special tokens, no truncation) then 0xFFFFFFFF; then the encoding's "
                   f"input_ids (max_length {GLUE_MAX_LENGTH}) then 0xFFFFFFFE; then its "
                   "token_type_ids then 0xFFFFFFFD. 'hash' chains all rows; block_hashes[k] "
                   f"restarts at rows {BLOCK_ROWS}k..",
           "max_length": GLUE_MAX_LENGTH, "block_rows": BLOCK_ROWS, "files": []}
    toks = {name: make_tokenizer(shared, name) for name in GLUE_CONFIGS}
    for rel, header, columns in GLUE_FILES:
        path = os.path.join(shared, "data", rel)
        if not os.path.exists(path):
            print(f"skip (absent): {rel}")
            continue
        rows = read_rows(path, header, columns)
        entry = {"path": rel, "header": header, "columns": columns, "rows": len(rows),
                 "configs": {}}
        for name, tok in toks.items():
            per_col = [tok([r[k] for r in rows], add_special_tokens=False)["input_ids"]
                       for k in range(len(columns))]
            a = [r[0] for r in rows]
            kw = {"truncation": True, "max_length": GLUE_MAX_LENGTH}
            enc = tok(a, [r[1] for r in rows], **kw) if len(columns) == 2 else tok(a, **kw)
            h, blocks, bh, n_tokens = FNV_OFFSET, [], FNV_OFFSET, 0
            for i in range(len(rows)):
                stream = []
                for k in range(len(columns)):
                    stream += per_col[k][i] + [SEP_TEXT]
                    n_tokens += len(per_col[k][i])
                stream += enc["input_ids"][i] + [SEP_IDS] + enc["token_type_ids"][i] + [SEP_TYPES]
                h = fnv_update(h, stream)
                bh = fnv_update(bh, stream)
                if (i + 1) % BLOCK_ROWS == 0 or i + 1 == len(rows):
                    blocks.append(f"{bh:016x}")
                    bh = FNV_OFFSET
            entry["configs"][name] = {"tokens": n_tokens, "hash": f"{h:016x}",
                                      "block_hashes": blocks}
        out["files"].append(entry)
        print(f"{rel}: {len(rows)} rows")
    return out


# Every code point (surrogates excluded), as "<c> a<c>b", tokenized without special tokens.
CODEPOINT_CONFIGS = ["uncased", "cased", "uncased_keep_accents"]
CODEPOINT_BLOCK = 0x1000


def codepoint_digest(shared):
    out = {"text": "chr(c) + ' a' + chr(c) + 'b' for every c in [0, 0x110000) but surrogates",
           "hash": "FNV-1a 64 as for the files; each text's ids then 0xFFFFFFFF; block_hashes[k] "
                   f"covers code points [{CODEPOINT_BLOCK}k, {CODEPOINT_BLOCK}(k+1))",
           "block": CODEPOINT_BLOCK, "configs": {}}
    for name in CODEPOINT_CONFIGS:
        tok = make_tokenizer(shared, name)
        blocks, n_tokens = [], 0
        for start in range(0, 0x110000, CODEPOINT_BLOCK):
            texts = [chr(c) + " a" + chr(c) + "b" for c in range(start, start + CODEPOINT_BLOCK)
                     if not 0xD800 <= c <= 0xDFFF]
            h = FNV_OFFSET
            for ids in tok(texts, add_special_tokens=False)["input_ids"]:
                h = fnv_update(h, ids + [SEP_TEXT])
                n_tokens += len(ids)
            blocks.append(f"{h:016x}")
        out["configs"][name] = {"tokens": n_tokens, "block_hashes": blocks}
        print(f"code points ({name}): {n_tokens} tokens")
    return out


def check_saved(saved_dir, config):
    tok = AutoTokenizer.from_pretrained(saved_dir)
    n = bad = 0
    with open(os.path.join(FIXTURES, "tokenizer_hard_cases.jsonl"), encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            if case["config"] != config:
                continue
            n += 1
            ids, types = encode(tok, case["a"], case.get("b"), case["max_length"])
            if ids != case["input_ids"] or types != case["token_type_ids"]:
                bad += 1
                print(f"MISMATCH {case['a'][:40]!r}: {ids} != {case['input_ids']}")
    print(f"{saved_dir}: {type(tok).__name__}, {n} cases of '{config}', {bad} mismatches")
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--check-saved", metavar="DIR")
    ap.add_argument("--config", default="uncased")
    args = ap.parse_args()
    if args.check_saved:
        sys.exit(0 if check_saved(args.check_saved, args.config) else 1)
    cases = hard_cases(args.shared)
    path = os.path.join(FIXTURES, "tokenizer_hard_cases.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"wrote {path}: {len(cases)} cases")
    digest = glue_digest(args.shared)
    digest["codepoints"] = codepoint_digest(args.shared)
    path = os.path.join(FIXTURES, "tokenizer_glue_digest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(digest, f, indent=1)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
