#!/usr/bin/env python3
"""Writes the SentencePiece Unigram (XLM-RoBERTa style) tokenizer fixtures and Hugging Face's ids.

Run offline in the HF venv (transformers 5.24, tokenizers 0.23, plus `pip install sentencepiece
protobuf`, which transformers needs to convert a .model file):
    HF_HUB_OFFLINE=1 /work/venv-hf/bin/python tools/make_spm_fixture.py

There is no XLM-R model on disk and no hub, so the script makes an XLM-R style folder itself:
  1. trains a Unigram SentencePiece model (vocab 8000, nmt_nfkc normalization as XLM-R's, <unk>=0
     <s>=1 </s>=2 as XLM-R's sentencepiece.bpe.model) on the text columns of data/glue;
  2. loads it with AutoTokenizer (tokenizer_class XLMRobertaTokenizer: transformers converts the
     spm model into a tokenizers Unigram with the fairseq id offset: <s>=0 <pad>=1 </s>=2 <unk>=3,
     piece i -> i + 1, <mask> last, <mask> with lstrip as XLM-R's) and save_pretrained()s it.
Outputs (committed):
  tests/fixtures/tokenizers/xlmr_unigram/   sentencepiece.bpe.model, tokenizer.json,
      tokenizer_config.json, special_tokens_map.json
  tests/fixtures/spm_hard_cases.jsonl       one JSON object per case: the text(s), max_length (null:
      no truncation), HF's input_ids / token_type_ids and the ids without special tokens.
  tests/fixtures/spm_glue_digest.json       FNV-1a 64 of HF's ids over every GLUE file in
      data/glue (per-1000-row hashes too), and over every code point in two contexts.
  tests/fixtures/fuzz_unigram_corpus/       seeds of src/data/fuzz_unigram.cc: a tiny Unigram
      model with a hand-written normalization rule table (mode byte 0), its tokenizer.json in
      both forms (1), and some hard texts (2).
HF's ids are those of AutoTokenizer.from_pretrained(fixture folder); the script checks that the
folder without tokenizer.json, the folder with only tokenizer.json and tokenizers.Tokenizer on the
bare tokenizer.json give the same ids on every hard case (and stops if not).
Each single-text case also records "legacy_tokens": the ids of tokenizers.Tokenizer on the
fixture's tokenizer.json rewritten as transformers 4.x's converter wrote XLM-R's (normalizer
Precompiled + Replace(" {2,}" -> " "), pre-tokenizer Metaspace alone, so spaces are not dropped),
the form of tokenizer.json files on the hub; see legacy_tokenizer_json().

--check-saved DIR: instead, load DIR (written by cpuft's UnigramTokenizer::save) with
AutoTokenizer and with tokenizers.Tokenizer on its tokenizer.json, and check both give the
recorded hard-case ids ("legacy_tokens" with --legacy: DIR was saved from the legacy form).
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import sentencepiece as spm  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import AddedToken, AutoTokenizer  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FOLDER = os.path.join(FIXTURES, "tokenizers", "xlmr_unigram")
FUZZ_CORPUS = os.path.join(FIXTURES, "fuzz_unigram_corpus")
CASES = os.path.join(FIXTURES, "spm_hard_cases.jsonl")
DIGEST = os.path.join(FIXTURES, "spm_glue_digest.json")

# GLUE files in data/glue: path, header line or not, text columns (as tools/make_tokenizer_fixture).
GLUE_FILES = [
    ("CoLA/train.tsv", False, [3]), ("CoLA/dev.tsv", False, [3]), ("CoLA/test.tsv", True, [1]),
    ("SST-2/train.tsv", True, [0]), ("SST-2/dev.tsv", True, [0]), ("SST-2/test.tsv", True, [1]),
    ("MRPC/train.tsv", True, [3, 4]), ("MRPC/dev.tsv", True, [3, 4]),
    ("MRPC/test.tsv", True, [3, 4]),
    ("RTE/train.tsv", True, [1, 2]), ("RTE/dev.tsv", True, [1, 2]), ("RTE/test.tsv", True, [1, 2]),
    ("STS-B/train.tsv", True, [7, 8]), ("STS-B/dev.tsv", True, [7, 8]),
    ("STS-B/test.tsv", True, [7, 8]),
]

LONG_WORD = "pneumonoultramicroscopicsilicovolcanoconiosis" * 3
HARD_TEXTS = [
    # plain text, casing, numbers, punctuation
    "Hello world", "The quick brown fox jumps over the lazy dog.", "HELLO WORLD hello World",
    "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
    "$2.5 billion, 3.14%, #1, 10:30 a.m.", "don't can't won't", "U.S.A. e.g. i.e.",
    "e-mail: foo@bar.com (test) [x] {y} <z>", "...!!!???---___", "a/b\\c|d~e`f^g",
    "\"quoted\" 'single' «guillemets» „German“ ``tex'' quotes", "3,000,000 1.5e-3 0x1F",
    # accents (composed and decomposed), ligatures, NFKC-sensitive compatibility forms
    "café naïve Ångström résumé Zürich façade", "Crème brûlée à la carte", "señor jalapeño",
    "e\u0301 a\u0300\u0323 o\u0323\u0302 q\u0307\u0323", "\u0041\u030a vs \u00c5 vs \u212b",
    "cafe\u0301 nai\u0308ve", "ﬁnance ﬂow ﬀ ﬃ ﬆ", "Ⅻ ½ ² ³ ㎏ ™ ℃ № ℡", "x² H₂O 10⁻³ ⁿ",
    "ＦＵＬＬＷＩＤＴＨ ｆｏｒｍｓ　１２３！？", "ｶﾀｶﾅ ﾊﾝｶｸ", "① ⑩ ⑴ ⒜ ㊀ ㈱", "Ⓐⓑ 🄰 𝐀𝐁𝐂 𝒳 𝕏",
    "ǅ ǈ ǋ ǲ", "ΐ ΰ ᾼ ῼ", "İstanbul IŞIK ıi Iı", "straße STRASSE ẞ", "…‥ ‼ ⁇ ︰ ﹏",
    "\u2126 \u212a \u00b5 \u03bc", "\u1e9b\u0323 \u0344 \u0958", "\uac00\u11a8 \u1100\u1161\u11a8",
    # CJK and other scripts
    "中文字符", "我爱北京天安门。", "日本語のテキスト、カタカナ", "한국어 문장입니다", "漢字かな混じり文",
    "𠀀𠀁 𪜀 丽", "Ελληνικά ΑΘΗΝΑ ΟΔΟΣ σοφός", "Русский ТЕКСТ ёЁ", "עברית ‏mixed",
    "العربية النص", "हिन्दी पाठ \u0915\u093f \u0915\u094d\u0937", "ไทย ภาษา", "Tiếng Việt có dấu",
    "ᏣᎳᎩ ꭰ", "𐐀𐐨 Deseret",
    # emoji, ZWJ sequences, skin tones, flags, keycaps, variation selectors
    "I love it 😀😂🤣!", "👨‍👩‍👧‍👦 family", "👍🏽 👍🏿 thumbs", "🏳️‍🌈 flag ❤️ ✨", "1️⃣ #️⃣ *️⃣",
    "🇺🇸🇫🇷🇩", "😀x😀", "☃ ★ ♥ ☺︎ ☺️", "🧑🏻‍💻 🫶🏾",
    # control, format and zero-width characters
    "zero\u200bwidth", "zw\u200djoiner zw\u200cnon", "\ufeffbom start", "nul\x00byte",
    "del\x7fchar", "soft\u00adhyphen", "a\u200eb\u200fc", "x\u2028y\u2029z",
    "vt\x0bff\x0cnel\x85end", "rep\ufffdlacement", "private\ue000use",
    "\u0600\u061c\u06dd arabic format", "\u0600a \u0601\u0661", "tag\U000e0041chars",
    "\x01\x02\x1f\x1c", "nb\u00a0sp em\u2003sp ideo\u3000sp thin\u2009sp \u1680ogham",
    "\u180e mongolian \u2060wj \u2061f", "a\u034fb c\ufe00d",
    # combining marks
    "\u0300\u0301 leading marks", "x\u20dd enclosing", "\U0001d165\U0001d16d\U0001d165",
    "a\u0345b", "e\u0301\u0301\u0301\u0301", "ȩ\u0306 ḝ", "\u0915\u0951 \u0930\u094d\u200d",
    # whitespace runs, leading/trailing spaces, tabs, newlines
    "tab\tseparated\twords", "new\nline\r\nand\rcarriage", "  leading and trailing  ",
    "many     spaces   here", "\t\tindented\n\n\nlines", "", " ", "\t\n\r ", "\u3000\u2003",
    "a", "▁", "▁▁x", "a▁b", "x ▁ y", "a  ", "  a",
    # special tokens written literally in the text
    "<s> hello </s>", "ab<mask>cd", "a <mask> b", "a   <mask>  b", "<mask>", " <mask>",
    "\t<mask>x", "<unk><pad>", "<mask> lowercase <MASK>", "</s></s>x</s", "<s><s>", "x<mask>",
    "<mask", "< mask>", "<s>\u200b</s>", "a<pad>b", "<unk>x",
    # long words, repetitions
    LONG_WORD, "short " + LONG_WORD + " tail", "a" * 300, "é" * 100, "ab" * 200,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "unaffable unbelievably tokenization hyperparameterization",
]

MEDIUM = "The quick brown fox jumps over the lazy dog near the riverbank."
LONG = ("In the beginning of the experiment, researchers measured the temperature, pressure "
        "and humidity of every sample several times a day; the results were inconsistent. ") * 4
PAIRS = [
    (MEDIUM, "A fox jumped."), ("Short.", LONG), (LONG, "Short."), (LONG, LONG), (MEDIUM, MEDIUM),
    ("", LONG), (LONG, ""), ("", ""), ("café 中文 😀", "naïve ﬁ İ"), ("a " * 7, "b " * 7),
    ("a " * 6, "b " * 7), ("a " * 7, "b " * 6), ("a " * 13, "b " * 1), ("a " * 1, "b " * 13),
    ("a " * 40, "b " * 40), ("a " * 41, "b " * 40), ("a " * 40, "b " * 41),
    ("</s> x", "<s> y"), ("a <mask>", "<mask> b"),
]
MAX_LENGTHS = [4, 5, 16, 32, 128]
SINGLE_MAX_LENGTHS = [2, 3, 16, 128]

FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
SEP_TEXT, SEP_IDS, SEP_TYPES = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
BLOCK_ROWS = 1000
GLUE_MAX_LENGTH = 128
CODEPOINT_BLOCK = 0x1000


def glue_text():
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "data", "glue", "*", "*.tsv"))):
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i == 0:
                    continue
                lines += [c for c in line.rstrip("\n").split("\t") if len(c.split()) >= 3]
    return lines


def train_model(work):
    # One thread, a fixed input order and a fixed model_prefix (the model records it): the same
    # bytes on every run.
    cwd = os.getcwd()
    os.chdir(work)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(glue_text()), model_prefix="m", vocab_size=8000,
            model_type="unigram", normalization_rule_name="nmt_nfkc", character_coverage=0.9995,
            num_threads=1, input_sentence_size=0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            minloglevel=2)
    finally:
        os.chdir(cwd)


def make_folder(work):
    train_model(work)
    src = os.path.join(work, "src")
    os.makedirs(src)
    shutil.copy(os.path.join(work, "m.model"), os.path.join(src, "sentencepiece.bpe.model"))
    with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512}, f)
    # XLM-R's <mask> strips the spaces on its left (its special_tokens_map.json says so).
    mask = AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)
    tok = AutoTokenizer.from_pretrained(src, mask_token=mask)
    if os.path.exists(FOLDER):
        shutil.rmtree(FOLDER)
    tok.save_pretrained(FOLDER)
    shutil.copy(os.path.join(src, "sentencepiece.bpe.model"),
                os.path.join(FOLDER, "sentencepiece.bpe.model"))
    special = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
               "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False,
                              "rstrip": False, "single_word": False},
               "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}
    with open(os.path.join(FOLDER, "special_tokens_map.json"), "w") as f:
        json.dump(special, f, indent=2)
        f.write("\n")
    for name in sorted(os.listdir(FOLDER)):
        print(f"  {name}: {os.path.getsize(os.path.join(FOLDER, name))} bytes")


def encode(tok, a, b, max_length):
    # Batched, as run_glue.py's dataset.map(batched=True) calls it (an empty b stays a pair).
    kw = {"truncation": True, "max_length": max_length} if max_length else {"truncation": False}
    kw["return_token_type_ids"] = True  # XLM-R's model_input_names leave them out; all 0
    e = tok([a], [b], **kw) if b is not None else tok([a], **kw)
    return e["input_ids"][0], e["token_type_ids"][0]


def legacy_tokenizer_json(path):
    """The fixture's tokenizer.json in the form transformers 4.x wrote for XLM-R."""
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    j["normalizer"] = {"type": "Sequence", "normalizers": [
        j["normalizer"], {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    return json.dumps(j, ensure_ascii=False)


def hard_cases(tok):
    legacy = tokenizers.Tokenizer.from_str(
        legacy_tokenizer_json(os.path.join(FOLDER, "tokenizer.json")))
    cases = []
    for text in HARD_TEXTS:
        ids, types = encode(tok, text, None, None)
        cases.append({"a": text, "max_length": None, "input_ids": ids, "token_type_ids": types,
                      "tokens": tok(text, add_special_tokens=False)["input_ids"],
                      "legacy_tokens": legacy.encode(text, add_special_tokens=False).ids})
    for a, b in PAIRS:
        for m in [None] + MAX_LENGTHS:
            ids, types = encode(tok, a, b, m)
            cases.append({"a": a, "b": b, "max_length": m, "input_ids": ids,
                          "token_type_ids": types})
    for m in SINGLE_MAX_LENGTHS:
        ids, types = encode(tok, LONG, None, m)
        cases.append({"a": LONG, "max_length": m, "input_ids": ids, "token_type_ids": types})
    return cases


def compare(tok, cases, label):
    bad = 0
    for c in cases:
        ids, types = encode(tok, c["a"], c.get("b"), c["max_length"])
        if ids != c["input_ids"] or types != c["token_type_ids"]:
            bad += 1
            if bad <= 5:
                print(f"  MISMATCH ({label}) {c['a'][:40]!r}: {ids} != {c['input_ids']}")
    print(f"{label}: {type(tok).__name__}, {len(cases) - bad}/{len(cases)} hard cases identical")
    return bad


class RawTokenizer:
    """tokenizers.Tokenizer on the bare tokenizer.json, called like a transformers tokenizer."""

    def __init__(self, path):
        self.tok = tokenizers.Tokenizer.from_file(path)

    def __call__(self, a, b=None, truncation=False, max_length=None, return_token_type_ids=True):
        t = self.tok
        if truncation:
            t.enable_truncation(max_length, strategy="longest_first")
        else:
            t.no_truncation()
        enc = t.encode_batch(list(zip(a, b)) if b is not None else a)
        return {"input_ids": [e.ids for e in enc], "token_type_ids": [e.type_ids for e in enc]}


def check_variants(cases):
    """The same ids from every way a user might load the folder; returns the number of mismatches."""
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        spm_only = os.path.join(d, "spm_only")
        json_only = os.path.join(d, "json_only")
        os.makedirs(spm_only)
        os.makedirs(json_only)
        for f in ["sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json"]:
            shutil.copy(os.path.join(FOLDER, f), spm_only)
        shutil.copy(os.path.join(FOLDER, "tokenizer.json"), json_only)
        bad += compare(AutoTokenizer.from_pretrained(spm_only), cases, "sentencepiece.bpe.model")
        bad += compare(AutoTokenizer.from_pretrained(json_only), cases, "tokenizer.json only")
    bad += compare(RawTokenizer(os.path.join(FOLDER, "tokenizer.json")), cases,
                   "tokenizers.Tokenizer")
    return bad


def fnv_update(h, values):
    for v in values:
        for byte in (v & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def read_rows(path, header, columns):
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if header:
        lines = lines[1:]
    return [[line.split("\t")[c] for c in columns] for line in lines]


def glue_digest(tok):
    out = {"hash": "FNV-1a 64 over uint32 little-endian: per row, for each text column its ids "
                   "(no special tokens, no truncation) then 0xFFFFFFFF; then the encoding's "
                   f"input_ids (max_length {GLUE_MAX_LENGTH}) then 0xFFFFFFFE; then its "
                   "token_type_ids then 0xFFFFFFFD. 'hash' chains all rows; block_hashes[k] "
                   f"restarts at rows {BLOCK_ROWS}k..",
           "generator": f"tools/make_spm_fixture.py, transformers {transformers.__version__}, "
                        f"tokenizers {tokenizers.__version__}",
           "max_length": GLUE_MAX_LENGTH, "block_rows": BLOCK_ROWS, "files": []}
    for rel, header, columns in GLUE_FILES:
        rows = read_rows(os.path.join(ROOT, "data", "glue", rel), header, columns)
        per_col = [tok([r[k] for r in rows], add_special_tokens=False)["input_ids"]
                   for k in range(len(columns))]
        a = [r[0] for r in rows]
        kw = {"truncation": True, "max_length": GLUE_MAX_LENGTH, "return_token_type_ids": True}
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
        out["files"].append({"path": rel, "header": header, "columns": columns, "rows": len(rows),
                             "tokens": n_tokens, "hash": f"{h:016x}", "block_hashes": blocks})
        print(f"  {rel}: {len(rows)} rows, {n_tokens} tokens")
    return out


# Every code point (surrogates excluded) in two texts: alone and next to letters, and inside
# grapheme clusters with combining marks (the Precompiled normalizer looks graphemes up whole).
def codepoint_texts(c):
    ch = chr(c)
    return [ch + " a" + ch + "b", "e" + ch + "\u0301 " + ch + "\u0308x"]


def codepoint_digest(tok):
    out = {"texts": "for every c in [0, 0x110000) but surrogates: chr(c) + ' a' + chr(c) + 'b', "
                    "then 'e' + chr(c) + U+0301 + ' ' + chr(c) + U+0308 + 'x'",
           "hash": "FNV-1a 64 as for the files; each text's ids (no special tokens) then "
                   f"0xFFFFFFFF; block_hashes[k] covers code points [{CODEPOINT_BLOCK}k, "
                   f"{CODEPOINT_BLOCK}(k+1))",
           "block": CODEPOINT_BLOCK}
    blocks, n_tokens = [], 0
    for start in range(0, 0x110000, CODEPOINT_BLOCK):
        texts = []
        for c in range(start, start + CODEPOINT_BLOCK):
            if not 0xD800 <= c <= 0xDFFF:
                texts += codepoint_texts(c)
        h = FNV_OFFSET
        for ids in tok(texts, add_special_tokens=False)["input_ids"]:
            h = fnv_update(h, ids + [SEP_TEXT])
            n_tokens += len(ids)
        blocks.append(f"{h:016x}")
    out["tokens"] = n_tokens
    out["block_hashes"] = blocks
    print(f"  code points: {n_tokens} tokens")
    return out


def write_fuzz_seeds():
    """Small seeds for the fuzz target: the real model is too big to mutate usefully."""
    # The deberta_* seeds are make_deberta_spm_fixture.py's.
    os.makedirs(FUZZ_CORPUS, exist_ok=True)
    for name in os.listdir(FUZZ_CORPUS):
        if not name.startswith("deberta_"):
            os.remove(os.path.join(FUZZ_CORPUS, name))
    with tempfile.TemporaryDirectory() as work:
        cwd = os.getcwd()
        os.chdir(work)
        try:
            # A charsmap of four rules: a letter, a ligature, a space and a composition.
            with open("rules.tsv", "w") as f:
                f.write("41\t61\nFB01\t66 69\n3000\t20\n65 301\tE9\n")
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(glue_text()[:300]), model_prefix="tiny", vocab_size=60,
                model_type="unigram", normalization_rule_tsv="rules.tsv", num_threads=1,
                hard_vocab_limit=False, minloglevel=2)
            os.makedirs("src")
            shutil.copy("tiny.model", "src/sentencepiece.bpe.model")
            with open("src/tokenizer_config.json", "w") as f:
                json.dump({"tokenizer_class": "XLMRobertaTokenizer"}, f)
            AutoTokenizer.from_pretrained("src").save_pretrained("out")
            with open("tiny.model", "rb") as f:
                model = f.read()
            with open("out/tokenizer.json", encoding="utf-8") as f:
                tj = json.dumps(json.load(f), ensure_ascii=False)
            legacy = legacy_tokenizer_json("out/tokenizer.json")
        finally:
            os.chdir(cwd)
    seeds = {"model_tiny": b"\0" + model, "json_tiny": b"\1" + tj.encode(),
             "json_legacy_tiny": b"\1" + legacy.encode()}
    for k, text in enumerate(HARD_TEXTS[::8]):
        seeds[f"text_{k:02d}"] = b"\2" + text.encode()
    for name, data in seeds.items():
        with open(os.path.join(FUZZ_CORPUS, name), "wb") as f:
            f.write(data)
    print(f"wrote {FUZZ_CORPUS}: {len(seeds)} seeds")


def check_saved(saved_dir, legacy):
    with open(CASES, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    print(f"{saved_dir}: files {sorted(os.listdir(saved_dir))}")
    auto = AutoTokenizer.from_pretrained(saved_dir)
    raw = tokenizers.Tokenizer.from_file(os.path.join(saved_dir, "tokenizer.json"))
    if not legacy:
        return compare(auto, cases, f"{saved_dir} (AutoTokenizer)") + compare(
            RawTokenizer(os.path.join(saved_dir, "tokenizer.json")), cases,
            f"{saved_dir} (tokenizers.Tokenizer)") == 0
    bad = 0
    singles = [c for c in cases if "legacy_tokens" in c]
    for label, fn in [("AutoTokenizer", lambda t: auto(t, add_special_tokens=False)["input_ids"]),
                      ("tokenizers.Tokenizer",
                       lambda t: raw.encode(t, add_special_tokens=False).ids)]:
        n_bad = sum(fn(c["a"]) != c["legacy_tokens"] for c in singles)
        print(f"{saved_dir} ({label}, {type(auto).__name__}): "
              f"{len(singles) - n_bad}/{len(singles)} legacy hard texts identical")
        bad += n_bad
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-saved", metavar="DIR")
    ap.add_argument("--legacy", action="store_true")
    ap.add_argument("--fuzz-seeds", action="store_true", help="only rewrite the fuzz seeds")
    ap.add_argument("--write-legacy", metavar="DIR",
                    help="write the legacy form of the fixture's tokenizer.json into DIR")
    args = ap.parse_args()
    if args.check_saved:
        sys.exit(0 if check_saved(args.check_saved, args.legacy) else 1)
    if args.fuzz_seeds:
        write_fuzz_seeds()
        return
    if args.write_legacy:
        os.makedirs(args.write_legacy, exist_ok=True)
        with open(os.path.join(args.write_legacy, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(legacy_tokenizer_json(os.path.join(FOLDER, "tokenizer.json")))
        return
    with tempfile.TemporaryDirectory() as work:
        print(f"training the Unigram model on data/glue; writing {FOLDER}")
        make_folder(work)
    tok = AutoTokenizer.from_pretrained(FOLDER)
    cases = hard_cases(tok)
    with open(CASES, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"wrote {CASES}: {len(cases)} cases")
    if check_variants(cases):
        sys.exit("the ways of loading the folder disagree: no single reference")
    digest = glue_digest(tok)
    digest["codepoints"] = codepoint_digest(tok)
    with open(DIGEST, "w", encoding="utf-8") as f:
        json.dump(digest, f, indent=1)
        f.write("\n")
    print(f"wrote {DIGEST}")
    write_fuzz_seeds()


if __name__ == "__main__":
    main()
