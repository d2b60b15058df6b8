#!/usr/bin/env python3
"""Writes the byte-level BPE (RoBERTa) tokenizer fixtures that cpuft's tests compare against HF.

Run offline in a venv with transformers 5 + tokenizers, from anywhere:
    HF_HUB_OFFLINE=1 /work/venv-hf/bin/python tools/make_bpe_fixture.py

There is no RoBERTa vocabulary in the repository, so the script first trains one: a byte-level BPE
(tokenizers' BpeTrainer, the full 256-symbol byte alphabet, 5000 tokens, RoBERTa's <s> <pad> </s>
<unk> first and <mask> last) on every text column of data/glue, saved RoBERTa-style in
tests/fixtures/tokenizers/roberta_bpe/ (vocab.json, merges.txt, tokenizer.json,
tokenizer_config.json, special_tokens_map.json; <mask> is lstrip as in roberta-base). A second,
small one trained without the full alphabet (so that some bytes have no symbol) is
tests/fixtures/tokenizers/bpe_partial/, whose tokenizer.json is a plain tokenizers pipeline (unk
token, fuse_unk, add_prefix_space, a TemplateProcessing with type ids) loaded as written.

Settings (tests/fixtures/tokenizers/bpe_settings.json): each names a fixture folder, the files
taken from it and, optionally, the tokenizer_config.json to write instead of the folder's and the
pre_tokenizer to put in its tokenizer.json; both
this script and the C++ tests build the same temporary folder for a setting, and the HF side loads
it as users do, AutoTokenizer.from_pretrained(folder).

Outputs (committed):
  tests/fixtures/tokenizers/...           the two trained tokenizers and bpe_settings.json
  tests/fixtures/bpe_hard_cases.jsonl     one JSON object per case: setting, text(s), max_length
      (null: none), input_ids, token_type_ids (left out when all 0) and, untruncated, HF's ids of
      each text without special tokens (ids_a, ids_b)
  tests/fixtures/bpe_glue_digest.json     FNV-1a 64 hashes of HF's ids over every row of every
      GLUE TSV in data/glue (per-1000-row block hashes name failing rows), and over every code point
  tests/fixtures/bpe_gpt2_digest.json     the same GLUE hashes and one hash per hard text for
      GPT-2's real vocabulary and 50,000 merges (scripts/fetch_gpt2_bpe.sh) under RobertaTokenizer

--check-saved DIR [--setting NAME]: instead, load DIR (written by cpuft's ByteLevelBpeTokenizer::
save) with AutoTokenizer and check that it gives the hard-case ids recorded for the setting.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

transformers.logging.set_verbosity_error()

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
TOK_DIR = os.path.join(FIXTURES, "tokenizers")
MAIN, PARTIAL = "roberta_bpe", "bpe_partial"

SETTINGS = {
    # The committed RoBERTa folder as it is (AutoTokenizer reads its tokenizer.json).
    "roberta": {"folder": MAIN, "files": ["vocab.json", "merges.txt", "tokenizer.json",
                                          "tokenizer_config.json", "special_tokens_map.json"]},
    # vocab.json + merges.txt only, add_prefix_space true, <mask> lstrip from added_tokens_decoder.
    "roberta_prefix": {"folder": MAIN, "files": ["vocab.json", "merges.txt"],
                       "tokenizer_config": {
                           "tokenizer_class": "RobertaTokenizer", "add_prefix_space": True,
                           "added_tokens_decoder": {"5000": {
                               "content": "<mask>", "lstrip": True, "normalized": False,
                               "rstrip": False, "single_word": False, "special": True}}}},
    # A vocabulary without every byte: RobertaTokenizer drops the bytes it has no symbol for; no
    # added_tokens_decoder, so <mask> is not lstrip.
    "partial_roberta": {"folder": PARTIAL, "files": ["vocab.json", "merges.txt"],
                        "tokenizer_config": {"tokenizer_class": "RobertaTokenizer"}},
    # The same vocabulary's tokenizer.json used as written (PreTrainedTokenizerFast): unk token,
    # fuse_unk, add_prefix_space, TemplateProcessing with type ids, an added non-special token.
    "partial_generic": {"folder": PARTIAL, "files": ["tokenizer.json", "tokenizer_config.json"]},
    # The same with the pre-tokenizer replaced: ByteLevel without the split pattern (each piece
    # between added tokens is one word) and without add_prefix_space.
    "partial_no_regex": {"folder": PARTIAL, "files": ["tokenizer.json", "tokenizer_config.json"],
                         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                           "trim_offsets": True, "use_regex": False}},
    # The RoBERTa tokenizer.json used as written (PreTrainedTokenizerFast): its RobertaProcessing
    # and added tokens, no named special tokens in the configuration.
    "roberta_as_written": {"folder": MAIN, "files": ["tokenizer.json"],
                           "tokenizer_config": {"tokenizer_class": "PreTrainedTokenizerFast"}},
}
GLUE_SETTINGS = ["roberta", "roberta_prefix"]

LONG_WORD = "pneumonoultramicroscopicsilicovolcanoconiosis" * 3
HARD_TEXTS = [
    # plain text, leading/trailing/multiple whitespace
    "Hello world", " Hello world", "Hello world ", "  Hello   world  ", "Hello\tworld",
    "Hello\nworld", "Hello \n world", "a \t b", "a\n\n\nb", "a\r\nb", "\t\tindented", "end\n",
    "", " ", "  ", "\t", "\n", " \t\n\r\u3000\u00a0", "x" + " " * 20 + "y", "tab\t\t\tsep",
    "a\u00a0b c\u2003d\u3000e\u2028f\u0085g\u000bh\u000ci", "\u200bzero width\u200b",
    # contractions in several cases
    "it's I'm you're we've they'll she'd don't", "IT'S I'M YOU'RE WE'VE THEY'LL SHE'D DON'T",
    "It'S 'll 'LL 'Ll 'lL ''s '''", "!'s ?'re 1's 's 't", "rock 'n' roll 'tis", "the dogs' toys",
    "He said 'hello'", "l'homme d'état", "x's", "'", "''", "'s", " 's", "'ve'", "'re're",
    # accents, combining marks, other scripts
    "café naïve Ångström résumé Zürich façade", "e\u0301 a\u0300\u0323 o\u0323\u0302",
    "\u0300\u0301 leading marks", "x\u20dd enclosing", "\u0915\u093f \u0915\u094d\u0937",
    "Ελληνικά ΑΘΗΝΑ σοφός", "Русский ТЕКСТ ёЁ", "İstanbul IŞIK ıi", "straße ẞ", "ﬁnance ﬂow ﬀ",
    "עברית ‏mixed", "العربية النص", "हिन्दी पाठ", "ไทย ภาษา", "Tiếng Việt có dấu",
    "中文字符", "我爱北京天安门。", "日本語のテキスト、カタカナ", "한국어 문장입니다", "𠀀𠀁 𪜀 丽",
    "ＦＵＬＬＷＩＤＴＨ ｆｏｒｍｓ　１２３！？", "𐐀𐐨 Deseret", "Ⓐⓑ 🄰",
    # letters and numbers newer than Python's Unicode data (Oniguruma knows them)
    "\U00011f04\U00011f05 \U0001e030x \U00031350 \U0001e4d0\U0001e4eb 1\U0001e4f0",
    "a\u0870b \u0cf3 \U00011241 \U0001133b",
    # emoji, ZWJ sequences, flags, keycaps, modifiers
    "I love it 😀😂🤣!", "👨‍👩‍👧‍👦 family", "👍🏽 👍🏿 thumbs", "🏳️‍🌈 flag ❤️ ✨", "1️⃣ #️⃣",
    "🇺🇸🇫🇷", "😀x😀", "☃ ★ ♥", "a😀b", "😀😀😀😀😀",
    # control and format characters, invalid-looking but valid UTF-8
    "nul\x00byte", "del\x7fchar", "\x01\x02\x1f\x1c", "soft\u00adhyphen", "a\u200eb\u200fc",
    "rep\ufffdlacement", "private\ue000use \U000f0000", "tag\U000e0041chars", "\ufeffbom",
    "\U0010ffff max", "\uffff\ufffe nonchars", "\u0080\u0081\u009f c1", "\u00ff\u0100 edge",
    "Ã© mojibake Ã¼", "\\xff\\xfe literal", "ĠĊ ġ byte symbols",
    # numbers with separators
    "1,000,000 1.000.000 1 000 000", "3.14159 -2.5e-3 +7", "$2.5 billion, 3.14%, #1",
    "10:30 a.m. 2024-01-31", "٣٤٥ ۱۲۳ १२३ ½ ² Ⅻ ⅷ", "1st 2nd 3rd 4th", "0x1F 0b1010 1_000",
    "12345678901234567890", "a1b2c3",
    # punctuation runs
    "Hello, world! How's it going?", "...!!!???---___", "a/b\\c|d~e`f^g", "—dash– ‐hyphen‑",
    "\"quoted\" «guillemets» „German“", "(parens) [brackets] {braces} <angles>", "@user #tag",
    "e-mail: foo@bar.com https://example.com/a?b=c&d=e", "C++ C# .NET", "::: ;;; ,,,",
    # special tokens written in the text
    "<s>", "</s>", "<mask>", "<pad><unk>", "Hello <mask> world", "Hello  <mask>  world",
    "Hello<mask>world", "<mask><mask>", " <mask>", "\t<mask>", "x\u3000<mask>", "<s> a </s>",
    "</s></s>", "<s", "< mask>", "<MASK>", "<mask", "mask>", "<<mask>>", "a<s>b</s>c",
    "<unk> unknown", "<pad>", "[CLS] <s> [SEP]", "<|endoftext|>",
    # long words and long texts
    "a" * 500, "é" * 300, "ab" * 400, LONG_WORD, "short " + LONG_WORD + " tail", "😀" * 100,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "The quick brown fox jumps over the lazy dog. " * 20,
]

MEDIUM = "The quick brown fox jumps over the lazy dog near the riverbank."
LONG = ("In the beginning of the experiment, researchers measured the temperature, pressure "
        "and humidity of every sample several times a day; the results were inconsistent. ") * 4
PAIRS = [
    (MEDIUM, "A fox jumped."), ("Short.", LONG), (LONG, "Short."), (LONG, LONG), (MEDIUM, MEDIUM),
    ("", LONG), (LONG, ""), ("", ""), ("café 中文 😀", "naïve ﬁ İ"), ("a " * 7, "b " * 7),
    ("a " * 6, "b " * 7), ("a " * 7, "b " * 6), ("a " * 13, "b " * 1), ("a " * 1, "b " * 13),
    ("a " * 40, "b " * 40), ("a " * 41, "b " * 40), ("a " * 40, "b " * 41),
    ("<s> x", "</s> y"), ("Hello <mask>", "<mask> world"), ("it's", "IT'S"),
]
MAX_LENGTHS = [4, 5, 8, 16, 32, 128]  # setting "roberta"; the others: SHORT_MAX_LENGTHS
SHORT_MAX_LENGTHS = [5, 16, 128]


# ---------------------------------------------------------------------------------------------
# Training the fixture tokenizers.

def glue_texts():
    texts = []
    for path in sorted(glob.glob(os.path.join(ROOT, "data", "glue", "*", "*.tsv"))):
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8").split("\n")
        for line in lines[1:]:
            texts.extend(t for t in line.split("\t") if t)
    return texts


def write_json(path, obj, indent=2):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def train(texts, vocab_size, full_alphabet):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if full_alphabet else [])
    tok.train_from_iterator(texts, trainer)
    return tok


def vocab_and_merges(tok):
    model = json.loads(tok.to_str())["model"]
    vocab = dict(sorted(model["vocab"].items(), key=lambda kv: kv[1]))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return vocab, merges


def write_vocab_merges(d, vocab, merges):
    with open(os.path.join(d, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(d, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")


def make_main(texts):
    d = os.path.join(TOK_DIR, MAIN)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    vocab, merges = vocab_and_merges(train(texts, 5000, True))
    vocab["<mask>"] = len(vocab)  # roberta-base: <mask> is the last id
    write_vocab_merges(d, vocab, merges)
    # tokenizer.json as transformers 5 builds it for RobertaTokenizer, <mask> lstrip as in
    # roberta-base's tokenizer.json.
    mask = {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
            "single_word": False, "special": True}
    write_json(os.path.join(d, "tokenizer_config.json"), {
        "tokenizer_class": "RobertaTokenizer", "add_prefix_space": False, "trim_offsets": True,
        "errors": "replace", "model_max_length": 512, "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "sep_token": "</s>", "pad_token": "<pad>", "cls_token": "<s>",
        "mask_token": "<mask>"})
    write_json(os.path.join(d, "special_tokens_map.json"), {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": mask})
    tok = AutoTokenizer.from_pretrained(d)  # vocab.json + merges.txt + the two files above
    tj = json.loads(tok.backend_tokenizer.to_str())
    assert any(t["content"] == "<mask>" and t["lstrip"] for t in tj["added_tokens"]), tj["added_tokens"]
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(tj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return d


def make_partial(texts):
    d = os.path.join(TOK_DIR, PARTIAL)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # Trained on MRPC's first lines only, without the full byte alphabet: bytes of characters
    # that never occur there (most of Unicode, many controls) have no symbol.
    tok = train(texts[:400], 600, False)
    vocab, merges = vocab_and_merges(tok)
    vocab["<mask>"] = len(vocab)
    write_vocab_merges(d, vocab, merges)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
        special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])])
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    tok.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True, rstrip=True,
                                                  normalized=False, special=True)])
    tok.add_tokens([tokenizers.AddedToken("the dog", normalized=True)])  # new id, not special
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok.to_str() + "\n")
    write_json(os.path.join(d, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": "<mask>"})
    return d


# ---------------------------------------------------------------------------------------------
# HF ids.

def setting_folder(name):
    """A temporary folder holding what setting `name` loads (as the C++ tests build it)."""
    s = SETTINGS[name]
    d = tempfile.mkdtemp(prefix=f"cpuft_bpe_{name}_")
    for f in s["files"]:
        shutil.copy(os.path.join(TOK_DIR, s["folder"], f), os.path.join(d, f))
    if "tokenizer_config" in s:
        write_json(os.path.join(d, "tokenizer_config.json"), s["tokenizer_config"])
    if "pre_tokenizer" in s:
        path = os.path.join(d, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        tj["pre_tokenizer"] = s["pre_tokenizer"]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False)
    return d


def load_setting(name):
    d = setting_folder(name)
    tok = AutoTokenizer.from_pretrained(d)
    shutil.rmtree(d)
    return tok


def encode(tok, a, b, max_length):
    # Batched, as run_glue.py's dataset.map(batched=True) calls it (an empty second text stays a
    # pair); token_type_ids asked for, since RoBERTa's model_input_names leave them out.
    kw = {"truncation": True, "max_length": max_length} if max_length else {"truncation": False}
    kw["return_token_type_ids"] = True
    e = tok([a], [b], **kw) if b is not None else tok([a], **kw)
    return e["input_ids"][0], e["token_type_ids"][0]


def plain_ids(tok, text):
    return tok([text], add_special_tokens=False)["input_ids"][0]


def hard_cases():
    cases = []
    for name in SETTINGS:
        tok = load_setting(name)
        for text in HARD_TEXTS:
            if name != "roberta" and len(text) > 200:  # the long texts once, to keep the file small
                continue
            ids, types = encode(tok, text, None, None)
            cases.append({"setting": name, "a": text, "max_length": None,
                          "ids_a": plain_ids(tok, text), "input_ids": ids,
                          "token_type_ids": types})
        max_lengths = MAX_LENGTHS if name == "roberta" else SHORT_MAX_LENGTHS
        for a, b in PAIRS:
            for m in max_lengths + [None]:
                if m is not None and m < tok.num_special_tokens_to_add(pair=True):
                    continue
                ids, types = encode(tok, a, b, m)
                case = {"setting": name, "a": a, "b": b, "max_length": m}
                if m is None:  # the texts' own ids once per pair
                    case.update({"ids_a": plain_ids(tok, a), "ids_b": plain_ids(tok, b)})
                cases.append({**case, "input_ids": ids, "token_type_ids": types})
        for m in max_lengths:
            ids, types = encode(tok, LONG, None, m)
            cases.append({"setting": name, "a": LONG, "max_length": m, "input_ids": ids,
                          "token_type_ids": types})
    for c in cases:  # all-zero token_type_ids are left out (the tests read absent as zeros)
        if not any(c["token_type_ids"]):
            del c["token_type_ids"]
    return cases


# GLUE files in data/glue: path, header line or not, text columns.
GLUE_FILES = [
    ("CoLA/train.tsv", False, [3]), ("CoLA/dev.tsv", False, [3]), ("CoLA/test.tsv", True, [1]),
    ("SST-2/train.tsv", True, [0]), ("SST-2/dev.tsv", True, [0]), ("SST-2/test.tsv", True, [1]),
    ("MRPC/train.tsv", True, [3, 4]), ("MRPC/dev.tsv", True, [3, 4]),
    ("MRPC/test.tsv", True, [3, 4]),
    ("RTE/train.tsv", True, [1, 2]), ("RTE/dev.tsv", True, [1, 2]), ("RTE/test.tsv", True, [1, 2]),
    ("STS-B/train.tsv", True, [7, 8]), ("STS-B/dev.tsv", True, [7, 8]),
    ("STS-B/test.tsv", True, [7, 8]),
]
BLOCK_ROWS = 1000
GLUE_MAX_LENGTH = 128
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
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


def glue_digest(toks=None):
    out = {"hash": "FNV-1a 64 over uint32 little-endian: per row, for each text column its ids "
                   "(no special tokens, no truncation) then 0xFFFFFFFF; then the encoding's "
                   f"input_ids (max_length {GLUE_MAX_LENGTH}) then 0xFFFFFFFE; then its "
                   "token_type_ids then 0xFFFFFFFD. 'hash' chains all rows; block_hashes[k] "
                   f"restarts at rows {BLOCK_ROWS}k..",
           "max_length": GLUE_MAX_LENGTH, "block_rows": BLOCK_ROWS, "files": []}
    if toks is None:
        toks = {name: load_setting(name) for name in GLUE_SETTINGS}
    total_rows = 0
    for rel, header, columns in GLUE_FILES:
        rows = read_rows(os.path.join(ROOT, "data", "glue", rel), header, columns)
        total_rows += len(rows)
        entry = {"path": rel, "header": header, "columns": columns, "rows": len(rows),
                 "settings": {}}
        for name, tok in toks.items():
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
            entry["settings"][name] = {"tokens": n_tokens, "hash": f"{h:016x}",
                                       "block_hashes": blocks}
        out["files"].append(entry)
        print(f"{rel}: {len(rows)} rows")
    out["total_rows"] = total_rows
    return out


CODEPOINT_BLOCK = 0x1000


def codepoint_digest():
    """Every code point (surrogates excluded) through the whole pipeline of setting 'roberta'."""
    out = {"setting": "roberta",
           "text": "chr(c) + ' a' + chr(c) + 'b 1' + chr(c) + ' ' + chr(c) + chr(c) + '!' for "
                   "every c in [0, 0x110000) but surrogates",
           "hash": "FNV-1a 64 as for the files; each text's ids (no special tokens) then "
                   f"0xFFFFFFFF; block_hashes[k] covers [{CODEPOINT_BLOCK}k, {CODEPOINT_BLOCK}(k+1))",
           "block": CODEPOINT_BLOCK}
    tok = load_setting("roberta")
    blocks, n_tokens = [], 0
    for start in range(0, 0x110000, CODEPOINT_BLOCK):
        texts = [chr(c) + " a" + chr(c) + "b 1" + chr(c) + " " + chr(c) + chr(c) + "!"
                 for c in range(start, start + CODEPOINT_BLOCK) if not 0xD800 <= c <= 0xDFFF]
        h = FNV_OFFSET
        for ids in tok(texts, add_special_tokens=False)["input_ids"]:
            h = fnv_update(h, ids + [SEP_TEXT])
            n_tokens += len(ids)
        blocks.append(f"{h:016x}")
    out["tokens"] = n_tokens
    out["block_hashes"] = blocks
    print(f"code points: {n_tokens} tokens")
    return out


# GPT-2's real vocabulary and merges (scripts/fetch_gpt2_bpe.sh) under RobertaTokenizer, every
# named special token being GPT-2's only one.
GPT2_CONFIG = {"tokenizer_class": "RobertaTokenizer", "add_prefix_space": False,
               **{k: "<|endoftext|>" for k in ("bos_token", "eos_token", "unk_token", "sep_token",
                                                "pad_token", "cls_token", "mask_token")}}


def gpt2_digest(gpt2_dir):
    d = tempfile.mkdtemp(prefix="cpuft_bpe_gpt2_")
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(gpt2_dir, f), os.path.join(d, f))
    write_json(os.path.join(d, "tokenizer_config.json"), GPT2_CONFIG)
    tok = AutoTokenizer.from_pretrained(d)
    shutil.rmtree(d)
    out = glue_digest({"gpt2": tok})
    out["tokenizer_config"] = GPT2_CONFIG
    out["note"] = ("vocab.json and merges.txt from scripts/fetch_gpt2_bpe.sh; hard_texts: "
                   "FNV-1a 64 of each hard text's ids (no special tokens), in the order of "
                   "the list 'texts'")
    out["texts"] = HARD_TEXTS
    out["hard_text_hashes"] = [f"{fnv_update(FNV_OFFSET, plain_ids(tok, t)):016x}"
                               for t in HARD_TEXTS]
    return out


def check_saved(saved_dir, setting):
    tok = AutoTokenizer.from_pretrained(saved_dir)
    n = bad = 0
    with open(os.path.join(FIXTURES, "bpe_hard_cases.jsonl"), encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            if case["setting"] != setting:
                continue
            n += 1
            ids, types = encode(tok, case["a"], case.get("b"), case["max_length"])
            if ids != case["input_ids"] or types != case.get("token_type_ids", [0] * len(ids)):
                bad += 1
                print(f"MISMATCH {case['a'][:40]!r}: {ids} != {case['input_ids']}")
    print(f"{saved_dir}: {type(tok).__name__}, {n} cases of '{setting}', {bad} mismatches")
    return n > 0 and bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-saved", metavar="DIR")
    ap.add_argument("--setting", default="roberta")
    ap.add_argument("--no-train", action="store_true", help="keep the committed tokenizers")
    ap.add_argument("--no-digest", action="store_true", help="keep the committed GLUE digest")
    ap.add_argument("--gpt2-dir", default=os.path.expanduser("~/.cache/cpuft/models/gpt2-bpe"),
                    help="GPT-2's vocab.json + merges.txt (scripts/fetch_gpt2_bpe.sh)")
    ap.add_argument("--gpt2-only", action="store_true", help="write only bpe_gpt2_digest.json")
    args = ap.parse_args()
    if args.check_saved:
        sys.exit(0 if check_saved(args.check_saved, args.setting) else 1)
    if args.no_digest and not args.gpt2_only:
        pass
    elif os.path.exists(os.path.join(args.gpt2_dir, "merges.txt")):
        write_json(os.path.join(FIXTURES, "bpe_gpt2_digest.json"), gpt2_digest(args.gpt2_dir),
                   indent=1)
        print("wrote bpe_gpt2_digest.json")
    else:
        print(f"no GPT-2 vocabulary in {args.gpt2_dir} (scripts/fetch_gpt2_bpe.sh): "
              "bpe_gpt2_digest.json left as it is")
    if args.gpt2_only:
        return
    if not args.no_train:
        os.makedirs(TOK_DIR, exist_ok=True)
        texts = glue_texts()
        print(f"training on {len(texts)} GLUE texts")
        make_main(texts)
        make_partial(texts)
    write_json(os.path.join(TOK_DIR, "bpe_settings.json"), SETTINGS)
    cases = hard_cases()
    path = os.path.join(FIXTURES, "bpe_hard_cases.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"wrote {path}: {len(cases)} cases")
    if args.no_digest:
        return
    digest = glue_digest()
    digest["codepoints"] = codepoint_digest()
    digest["generator"] = (f"tools/make_bpe_fixture.py, transformers {transformers.__version__}, "
                           f"tokenizers {tokenizers.__version__}")
    write_json(os.path.join(FIXTURES, "bpe_glue_digest.json"), digest, indent=1)
    print("wrote bpe_glue_digest.json")


if __name__ == "__main__":
    main()
