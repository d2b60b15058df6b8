#!/usr/bin/env python3
"""Writes the DeBERTa-v3 SentencePiece Unigram tokenizer fixtures and Hugging Face's ids.

Run offline in the HF venv (transformers 5.24, tokenizers 0.23, plus `pip install sentencepiece
protobuf`, which transformers needs to read a .model file):
    HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/make_deberta_spm_fixture.py

There is no DeBERTa-v3 model on disk and no hub, so the script makes a folder laid out like
microsoft/deberta-v3-base's (spm.model + tokenizer_config.json, no tokenizer.json):
  1. trains a Unigram SentencePiece model (vocab 8000, nmt_nfkc as DeBERTa-v3's, [PAD]=0 [CLS]=1
     [SEP]=2 [UNK]=3 as in DeBERTa-v3's spm.model) on the text columns of data/glue, with the
     texts and settings of make_spm_fixture.py (one thread: the same bytes on every run);
  2. writes the hub's tokenizer_config.json (DebertaV2Tokenizer, do_lower_case false,
     split_by_punct false, vocab_type "spm", the seven special tokens);
  3. records AutoTokenizer's ids on it. transformers 5's DebertaV2Tokenizer keeps only the pieces
     and scores of spm.model (no id offset; [MASK] is not a piece, so it is added as id 8000, the
     number of pieces) and builds its own pipeline: Replace(\\s{2,}|[\\n\\r\\t] -> " "), NFC,
     Strip(right) (+ Lowercase first with do_lower_case; the charsmap is not used), [Punctuation
     isolated with split_by_punct], Metaspace (prepend "always", "first" without
     add_prefix_space), [CLS] A [SEP] / [CLS] A [SEP] B [SEP] with type ids 0 / 1.
Outputs (committed):
  tests/fixtures/tokenizers/deberta_v3_unigram/        spm.model, tokenizer_config.json
  tests/fixtures/tokenizers/deberta_v3_unigram_json/   what save_pretrained writes for it
      (tokenizer.json, re-serialized without indentation to keep it small; tokenizer_config.json)
  tests/fixtures/deberta_spm_hard_cases.jsonl   one JSON object per case: the text(s), max_length
      (null: no truncation), HF's input_ids / token_type_ids; single texts also the ids without
      special tokens ("tokens") and, for the options and the older file form, "tokens_lower"
      (do_lower_case true), "tokens_punct" (split_by_punct true), "tokens_first"
      (add_prefix_space false), "tokens_v4" / "tokens_v4_first" (tokenizers.Tokenizer on the
      tokenizer.json transformers 4.x's DebertaV2Converter wrote: Strip, charsmap, Replace(" {2,}"),
      Metaspace "always" / "first"; see v4_tokenizer_json()).
  tests/fixtures/deberta_spm_config_cases.json  how the class reads its files: for each of a few
      folders (FOLDER's spm.model or JSON_FOLDER's tokenizer.json, edited, with other config
      files: special_tokens_map.json winning over tokenizer_config.json, added_tokens_decoder,
      special tokens that are no pieces, added-token ids in the file that transformers
      renumbers, options that nothing reads, ...), HF's ids for a few texts.
  tests/fixtures/deberta_spm_glue_digest.json   FNV-1a 64 of HF's ids over every GLUE file in
      data/glue (per-1000-row hashes too), and over every code point in two contexts, for the
      hub's options ("codepoints") and for all three options on ("codepoints_options").
  tests/fixtures/fuzz_unigram_corpus/deberta_*  seeds of src/data/fuzz_unigram.cc: a tiny
      DeBERTa-layout model (mode byte 3 and 31: defaults / all options), its tokenizer.json as
      transformers 5 and 4.x write it (1), and texts (2).
The script stops unless the hub folder, the same folder with a minimal tokenizer_config.json and
config.json's model_type, the saved folder, its tokenizer.json alone and tokenizers.Tokenizer on it
give the same ids on every hard case.

--check-saved DIR: instead, load DIR (written by cpuft's UnigramTokenizer::save; the unit test
writes them under $CPUFT_TOKENIZER_SAVE_DIR: deberta_from_spm, deberta_from_json,
deberta_lower, deberta_punct, deberta_first, deberta_v4_always, deberta_v4_first) with
AutoTokenizer and with tokenizers.Tokenizer on its tokenizer.json, and check both give the
recorded ids (for a folder saved with an option on, the "tokens_lower" / "tokens_punct" /
"tokens_first" ids, as its tokenizer_config.json says; for one saved from the 4.x file, which
names the generic class, "tokens_v4" / "tokens_v4_first").
"""
import argparse
import base64
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_spm_fixture as xlmr  # noqa: E402  (texts, GLUE files, digest formula, trainer input)
import sentencepiece as spm  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from transformers.convert_slow_tokenizer import DebertaV2Converter, import_protobuf  # noqa: E402

transformers.logging.set_verbosity_error()

ROOT = xlmr.ROOT
FIXTURES = xlmr.FIXTURES
FOLDER = os.path.join(FIXTURES, "tokenizers", "deberta_v3_unigram")
JSON_FOLDER = os.path.join(FIXTURES, "tokenizers", "deberta_v3_unigram_json")
CASES = os.path.join(FIXTURES, "deberta_spm_hard_cases.jsonl")
CONFIG_CASES = os.path.join(FIXTURES, "deberta_spm_config_cases.json")
DIGEST = os.path.join(FIXTURES, "deberta_spm_glue_digest.json")
FUZZ_CORPUS = xlmr.FUZZ_CORPUS

# microsoft/deberta-v3-*'s tokenizer_config.json.
HUB_CONFIG = {
    "do_lower_case": False, "bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]",
    "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]",
    "split_by_punct": False, "sp_model_kwargs": {}, "vocab_type": "spm",
    "tokenizer_class": "DebertaV2Tokenizer",
}
# The options each "tokens_<name>" field is recorded with.
OPTIONS = {"lower": {"do_lower_case": True}, "punct": {"split_by_punct": True},
           "first": {"add_prefix_space": False}}

# XLM-R's hard texts, then DeBERTa's own: its special tokens written literally, the whitespace
# rule (runs of 2+ White_Space and single \t \n \r become one space, trailing ones go), NFC.
HARD_TEXTS = xlmr.HARD_TEXTS + [
    "[MASK]", "a [MASK] b", "x[MASK]y", "  [MASK]  ", "\t[MASK]\n", "[mask] [Mask] [MASK]",
    "[MASK", "[ MASK]", "[MASK][MASK]", "[CLS] hello [SEP]", "[CLS][SEP][PAD][UNK]", "[UNK]x",
    "a[PAD]b", "<mask> [MASK] <s>", "a\t\tb", "a \u3000 b", "a\u3000b", "trailing\u3000",
    "trailing\t", "a\u00a0b", "a \u00a0b", "x\u2028\u2029y", "\u0085x\u0085", " \t x", "x \n",
    "\n", "\r\n", "\u3000", "\u00a0 \u00a0", "\u0149 \u01f0 \u0390", "\u212b\u2126",
    "A\u030a\u0301", "\u1100\u1161\u11a8 \u1100\u1161", "\u0958\u0959", "e\u0301\u0327",
    "Hello, World! (Test) \"quoted\" -- well...", "a,b.c;d:e!f?g", "ÉCOLE İstanbul ΣΊΣΥΦΟΣ",
    "\u2581\u2581 \u2581x", "[MASK]\u2581", "x,[MASK],y",
]
PAIRS = xlmr.PAIRS + [("[SEP] x", "[CLS] y"), ("a [MASK]", "[MASK] b"), ("  ", "x"),
                      ("x\t", "\ty"), ("Hello, world!", "HELLO, WORLD?")]
MAX_LENGTHS = [3, 4, 5, 16, 32, 128]
SINGLE_MAX_LENGTHS = [2, 3, 16, 128]


def train_model(work, prefix="m", sentences=None, vocab_size=8000, **extra):
    # One thread, a fixed input order and a fixed model_prefix (the model records it): the same
    # bytes on every run. DeBERTa-v3's ids: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3.
    cwd = os.getcwd()
    os.chdir(work)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences or xlmr.glue_text()), model_prefix=prefix,
            vocab_size=vocab_size, model_type="unigram", character_coverage=0.9995,
            num_threads=1, input_sentence_size=0, pad_id=0, pad_piece="[PAD]", bos_id=1,
            bos_piece="[CLS]", eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]",
            minloglevel=2, **extra)
    finally:
        os.chdir(cwd)
    return os.path.join(work, prefix + ".model")


def write_json(path, obj, compact=False):
    with open(path, "w", encoding="utf-8") as f:
        if compact:
            json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        else:
            json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def make_folders(work):
    model = train_model(work, normalization_rule_name="nmt_nfkc")
    for d in (FOLDER, JSON_FOLDER):
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
    shutil.copy(model, os.path.join(FOLDER, "spm.model"))
    write_json(os.path.join(FOLDER, "tokenizer_config.json"), HUB_CONFIG)
    saved = os.path.join(work, "saved")
    AutoTokenizer.from_pretrained(FOLDER).save_pretrained(saved)
    print(f"  save_pretrained wrote {sorted(os.listdir(saved))}")
    with open(os.path.join(saved, "tokenizer.json"), encoding="utf-8") as f:
        write_json(os.path.join(JSON_FOLDER, "tokenizer.json"), json.load(f), compact=True)
    shutil.copy(os.path.join(saved, "tokenizer_config.json"), JSON_FOLDER)
    for d in (FOLDER, JSON_FOLDER):
        for name in sorted(os.listdir(d)):
            print(f"  {os.path.relpath(d, FIXTURES)}/{name}: "
                  f"{os.path.getsize(os.path.join(d, name))} bytes")


def folder_with(work, name, config, extra_files=None):
    """FOLDER's spm.model with another tokenizer_config.json (and more files)."""
    d = os.path.join(work, name)
    os.makedirs(d)
    shutil.copy(os.path.join(FOLDER, "spm.model"), d)
    write_json(os.path.join(d, "tokenizer_config.json"), config)
    for fname, obj in (extra_files or {}).items():
        write_json(os.path.join(d, fname), obj)
    return d


def charsmap_b64(model_path):
    proto = import_protobuf().ModelProto()
    with open(model_path, "rb") as f:
        proto.ParseFromString(f.read())
    return base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode()


class _SlowStandIn:
    """What DebertaV2Converter reads of the slow tokenizer of transformers 4.x."""

    def __init__(self, vocab_file, add_prefix_space=True, legacy=True):
        self.vocab_file = vocab_file
        self.do_lower_case = False
        self.split_by_punct = False
        self.add_prefix_space = add_prefix_space
        self.legacy = legacy

    def convert_tokens_to_ids(self, token):
        return {"[CLS]": 1, "[SEP]": 2}[token]


def converter_tokenizer(model_path, scheme):
    """tokenizers.Tokenizer as transformers 4.x saved DeBERTa-v3: its converter's output (the
    control pieces as added tokens), then the special tokens that are not yet added ones ([UNK],
    a piece, keeps its id; [MASK] gets the next)."""
    stand_in = _SlowStandIn(model_path, legacy=scheme == "always")
    tok = DebertaV2Converter(stand_in).converted()
    tok.add_special_tokens([tokenizers.AddedToken(t, normalized=False, special=True)
                            for t in ("[UNK]", "[MASK]")])
    return tok


def v4_tokenizer_json(hf_json, charsmap, scheme):
    """The 4.x converter's file, made from transformers 5's (what unigram_tokenizer_test builds)."""
    j = json.loads(json.dumps(hf_json))
    j["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Precompiled", "precompiled_charsmap": charsmap},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": True}]}
    return json.dumps(j, ensure_ascii=False)


# Folders that read their files differently: (name, base, files, edits of tokenizer.json).
# base "spm": FOLDER's spm.model; "json": JSON_FOLDER's tokenizer.json with `edits` ("added_tokens"
# appended, "unk_id" set in its model).
_MASK_LSTRIP = {"content": "[MASK]", "lstrip": True, "normalized": False, "rstrip": False,
                "single_word": False, "special": True}
CONFIG_FOLDERS = [
    ("special_tokens_map.json wins over tokenizer_config.json", "spm",
     {"tokenizer_config.json": HUB_CONFIG,
      "special_tokens_map.json": {"mask_token": "<mask2>", "cls_token": "[SEP]"}}, None),
    ("with added_tokens_decoder, special_tokens_map.json is not read", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "added_tokens_decoder": {"8000": _MASK_LSTRIP}},
      "special_tokens_map.json": {"mask_token": "<mask2>"}}, None),
    ("special tokens that are no pieces get the next ids; unk_id from the model", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "unk_token": "<unk>", "pad_token": "<pad>"}}, None),
    ("extra special tokens", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "extra_special_tokens": ["<e1>", "[CLS]"]}}, None),
    ("options transformers 5 does not read", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "vocab_type": "bpe",
                                "sp_model_kwargs": {"enable_sampling": True, "alpha": 0.1}}},
     None),
    ("a normalized [MASK] with do_lower_case", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "do_lower_case": True, "mask_token": {
         "__type": "AddedToken", "content": "[MASK]", "lstrip": False, "normalized": True,
         "rstrip": False, "single_word": False}}}, None),
    ("DebertaV2TokenizerFast", "spm",
     {"tokenizer_config.json": {**HUB_CONFIG, "tokenizer_class": "DebertaV2TokenizerFast"}}, None),
    ("added-token ids of tokenizer.json renumbered, its unk_id not read", "json",
     {"tokenizer_config.json": HUB_CONFIG},
     {"added_tokens": [{"id": 8005, "content": "<foo>", "single_word": False, "lstrip": False,
                        "rstrip": False, "normalized": True, "special": False}], "unk_id": 0}),
    ("tokenizer.json, an unknown token that is no piece and no unk_id: the class's 1", "json",
     {"tokenizer_config.json": {**HUB_CONFIG, "unk_token": "<unk>"}}, None),
    ("tokenizer.json with the options in tokenizer_config.json", "json",
     {"tokenizer_config.json": {**HUB_CONFIG, "do_lower_case": True, "split_by_punct": True,
                                "add_prefix_space": False}}, None),
]
CONFIG_TEXTS = ["a <mask2> [MASK] [mask] <foo>w", "a 中 <pad> [MASK] <unk> <e1>",
                "[CLS]x [SEP]", "Hello, World! [MASK]", ""]


def config_cases(work):
    with open(os.path.join(JSON_FOLDER, "tokenizer.json"), encoding="utf-8") as f:
        hf_json = json.load(f)
    out = []
    for k, (name, base, files, edits) in enumerate(CONFIG_FOLDERS):
        d = os.path.join(work, f"config_{k}")
        os.makedirs(d)
        if base == "spm":
            shutil.copy(os.path.join(FOLDER, "spm.model"), d)
        else:
            j = json.loads(json.dumps(hf_json))
            j["added_tokens"] += (edits or {}).get("added_tokens", [])
            j["model"]["unk_id"] = (edits or {}).get("unk_id", j["model"]["unk_id"])
            write_json(os.path.join(d, "tokenizer.json"), j, compact=True)
        for fname, obj in files.items():
            write_json(os.path.join(d, fname), obj)
        tok = AutoTokenizer.from_pretrained(d)
        cases = []
        for text in CONFIG_TEXTS:
            ids, types = encode(tok, text, None, None)
            cases.append({"a": text, "input_ids": ids, "token_type_ids": types})
        ids, types = encode(tok, CONFIG_TEXTS[0], CONFIG_TEXTS[1], None)
        cases.append({"a": CONFIG_TEXTS[0], "b": CONFIG_TEXTS[1], "input_ids": ids,
                      "token_type_ids": types})
        out.append({"name": name, "base": base, "files": files, "json_edits": edits,
                    "vocab_size": len(tok), "cases": cases})
        print(f"  {name}: {len(tok)} ids, {cases[0]['input_ids']}")
    return out


def encode(tok, a, b, max_length):
    return xlmr.encode(tok, a, b, max_length)


def hard_cases(tok, variants, raw_variants):
    cases = []
    for text in HARD_TEXTS:
        ids, types = encode(tok, text, None, None)
        c = {"a": text, "max_length": None, "input_ids": ids, "token_type_ids": types,
             "tokens": tok(text, add_special_tokens=False)["input_ids"]}
        for name, t in variants.items():
            c["tokens_" + name] = t(text, add_special_tokens=False)["input_ids"]
        for name, t in raw_variants.items():
            c["tokens_" + name] = t.encode(text, add_special_tokens=False).ids
        cases.append(c)
    for a, b in PAIRS:
        for m in [None] + MAX_LENGTHS:
            ids, types = encode(tok, a, b, m)
            cases.append({"a": a, "b": b, "max_length": m, "input_ids": ids,
                          "token_type_ids": types})
    for m in SINGLE_MAX_LENGTHS:
        ids, types = encode(tok, xlmr.LONG, None, m)
        cases.append({"a": xlmr.LONG, "max_length": m, "input_ids": ids, "token_type_ids": types})
    return cases


def compare_tokens(fn, cases, field, label):
    singles = [c for c in cases if field in c]
    bad = sum(fn(c["a"]) != c[field] for c in singles)
    print(f"{label}: {len(singles) - bad}/{len(singles)} hard texts identical ({field})")
    return bad


def check_variants(cases, work):
    """The same ids from every way a user might load the folder; returns the number of mismatches."""
    bad = 0
    minimal = folder_with(work, "minimal", {"do_lower_case": False, "vocab_type": "spm"},
                          {"config.json": {"model_type": "deberta-v2"}})
    bad += xlmr.compare(AutoTokenizer.from_pretrained(minimal), cases,
                        "minimal tokenizer_config.json + config.json")
    bad += xlmr.compare(AutoTokenizer.from_pretrained(JSON_FOLDER), cases, "saved folder")
    json_only = os.path.join(work, "json_only")
    os.makedirs(json_only)
    shutil.copy(os.path.join(JSON_FOLDER, "tokenizer.json"), json_only)
    bad += xlmr.compare(AutoTokenizer.from_pretrained(json_only), cases, "tokenizer.json alone")
    bad += xlmr.compare(xlmr.RawTokenizer(os.path.join(JSON_FOLDER, "tokenizer.json")), cases,
                        "tokenizers.Tokenizer")
    # The 4.x converter's files against the edited form the C++ test builds.
    with open(os.path.join(JSON_FOLDER, "tokenizer.json"), encoding="utf-8") as f:
        hf_json = json.load(f)
    charsmap = charsmap_b64(os.path.join(FOLDER, "spm.model"))
    for scheme, field in [("always", "tokens_v4"), ("first", "tokens_v4_first")]:
        edited = tokenizers.Tokenizer.from_str(v4_tokenizer_json(hf_json, charsmap, scheme))
        bad += compare_tokens(lambda t: edited.encode(t, add_special_tokens=False).ids, cases,
                              field, f"edited 4.x form ({scheme})")
    return bad


def glue_digest(tok):
    out = xlmr.glue_digest(tok)
    out["generator"] = (f"tools/make_deberta_spm_fixture.py, transformers "
                        f"{transformers.__version__}, tokenizers {tokenizers.__version__}")
    return out


# Every code point (surrogates excluded) in two texts: between letters, after one and doubled at
# the end (the whitespace rule, Strip), and with combining marks (NFC).
def codepoint_texts(c):
    ch = chr(c)
    return [ch + " a" + ch + "b" + ch, "e" + ch + "\u0301 " + ch + "\u0308x" + ch + ch]


def codepoint_digest(tok):
    out = {"texts": "for every c in [0, 0x110000) but surrogates: chr(c) + "
                    "' a' + chr(c) + 'b' + chr(c), then 'e' + chr(c) + U+0301 + ' ' + chr(c) + "
                    "U+0308 + 'x' + chr(c) + chr(c)",
           "hash": "FNV-1a 64 as for the files; each text's ids (no special tokens) then "
                   f"0xFFFFFFFF; block_hashes[k] covers code points [{xlmr.CODEPOINT_BLOCK}k, "
                   f"{xlmr.CODEPOINT_BLOCK}(k+1))",
           "block": xlmr.CODEPOINT_BLOCK}
    blocks, n_tokens = [], 0
    for start in range(0, 0x110000, xlmr.CODEPOINT_BLOCK):
        texts = []
        for c in range(start, start + xlmr.CODEPOINT_BLOCK):
            if not 0xD800 <= c <= 0xDFFF:
                texts += codepoint_texts(c)
        h = xlmr.FNV_OFFSET
        for ids in tok(texts, add_special_tokens=False)["input_ids"]:
            h = xlmr.fnv_update(h, ids + [xlmr.SEP_TEXT])
            n_tokens += len(ids)
        blocks.append(f"{h:016x}")
    out["tokens"] = n_tokens
    out["block_hashes"] = blocks
    print(f"  code points: {n_tokens} tokens")
    return out


def codepoint_digests(digest, tok, work):
    """The code point digests with the hub's options and with all of OPTIONS on."""
    digest["codepoints"] = codepoint_digest(tok)
    all_options = {k: v for o in OPTIONS.values() for k, v in o.items()}
    options = folder_with(work, "all_options", {**HUB_CONFIG, **all_options})
    digest["codepoints_options"] = codepoint_digest(AutoTokenizer.from_pretrained(options))
    digest["codepoints_options"]["options"] = all_options


def write_digest(digest):
    with open(DIGEST, "w", encoding="utf-8") as f:
        json.dump(digest, f, indent=1)
        f.write("\n")
    print(f"wrote {DIGEST}")


def write_fuzz_seeds():
    """Seeds of a tiny DeBERTa-layout model; the real one is too big to mutate usefully."""
    os.makedirs(FUZZ_CORPUS, exist_ok=True)
    for name in os.listdir(FUZZ_CORPUS):
        if name.startswith("deberta_"):
            os.remove(os.path.join(FUZZ_CORPUS, name))
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "rules.tsv"), "w") as f:
            f.write("41\t61\nFB01\t66 69\n3000\t20\n65 301\tE9\n")
        model = train_model(work, prefix="tiny", sentences=xlmr.glue_text()[:300], vocab_size=60,
                            normalization_rule_tsv="rules.tsv",  # relative: the model keeps it
                            hard_vocab_limit=False, user_defined_symbols=["[U]"])
        src = folder_with_model(work, model, {**HUB_CONFIG, "do_lower_case": True,
                                              "split_by_punct": True})
        out = os.path.join(work, "out")
        AutoTokenizer.from_pretrained(src).save_pretrained(out)
        with open(model, "rb") as f:
            model_bytes = f.read()
        with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
            hf_json = json.load(f)
        v4 = v4_tokenizer_json(hf_json, charsmap_b64(model), "first")
    seeds = {"deberta_model_tiny": b"\3" + model_bytes,
             "deberta_model_tiny_options": bytes([3 + 4 * 7]) + model_bytes,
             "deberta_json_tiny": b"\1" + json.dumps(hf_json, ensure_ascii=False).encode(),
             "deberta_json_v4_tiny": b"\1" + v4.encode()}
    for k, text in enumerate(HARD_TEXTS[len(xlmr.HARD_TEXTS)::6]):
        seeds[f"deberta_text_{k:02d}"] = b"\2" + text.encode()
    for name, data in seeds.items():
        with open(os.path.join(FUZZ_CORPUS, name), "wb") as f:
            f.write(data)
    print(f"wrote {FUZZ_CORPUS}: {len(seeds)} deberta_* seeds")


def folder_with_model(work, model, config):
    d = os.path.join(work, "src")
    os.makedirs(d)
    shutil.copy(model, os.path.join(d, "spm.model"))
    write_json(os.path.join(d, "tokenizer_config.json"), config)
    return d


def check_saved(saved_dir):
    with open(CASES, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    with open(os.path.join(saved_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    print(f"{saved_dir}: files {sorted(os.listdir(saved_dir))}, "
          f"tokenizer_class {config.get('tokenizer_class')}")
    auto = AutoTokenizer.from_pretrained(saved_dir)
    raw = tokenizers.Tokenizer.from_file(os.path.join(saved_dir, "tokenizer.json"))
    options = [name for name, o in OPTIONS.items()
               if all(config.get(k) == v for k, v in o.items())]
    if config.get("tokenizer_class") == "TokenizersBackend":
        # Saved from the 4.x converter's file: its own pipeline, "always" or "first".
        with open(os.path.join(saved_dir, "tokenizer.json"), encoding="utf-8") as f:
            scheme = json.dumps(json.load(f)["pre_tokenizer"])
        options = ["v4_first" if '"first"' in scheme else "v4"]
    if not options:
        return xlmr.compare(auto, cases, f"{saved_dir} (AutoTokenizer)") + xlmr.compare(
            xlmr.RawTokenizer(os.path.join(saved_dir, "tokenizer.json")), cases,
            f"{saved_dir} (tokenizers.Tokenizer)") == 0
    if len(options) > 1:
        sys.exit(f"{saved_dir}: more than one option set ({options}); no recorded ids")
    field = "tokens_" + options[0]
    bad = compare_tokens(lambda t: auto(t, add_special_tokens=False)["input_ids"], cases, field,
                         f"{saved_dir} ({type(auto).__name__})")
    bad += compare_tokens(lambda t: raw.encode(t, add_special_tokens=False).ids, cases, field,
                          f"{saved_dir} (tokenizers.Tokenizer)")
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-saved", metavar="DIR", nargs="+")
    ap.add_argument("--fuzz-seeds", action="store_true", help="only rewrite the deberta_* seeds")
    ap.add_argument("--codepoints", action="store_true",
                    help="only recompute the code point digests (the committed spm.model kept)")
    args = ap.parse_args()
    if args.check_saved:
        sys.exit(0 if all([check_saved(d) for d in args.check_saved]) else 1)
    if args.fuzz_seeds:
        write_fuzz_seeds()
        return
    if args.codepoints:
        with open(DIGEST, encoding="utf-8") as f:
            digest = json.load(f)
        with tempfile.TemporaryDirectory() as work:
            codepoint_digests(digest, AutoTokenizer.from_pretrained(FOLDER), work)
        write_digest(digest)
        return
    with tempfile.TemporaryDirectory() as work:
        print(f"training the Unigram model on data/glue; writing {FOLDER}")
        make_folders(work)
        tok = AutoTokenizer.from_pretrained(FOLDER)
        print(f"{type(tok).__name__}: {len(tok)} ids, [MASK] = {tok.mask_token_id}, "
              f"unk_id {json.loads(tok.backend_tokenizer.to_str())['model']['unk_id']}")
        variants = {name: AutoTokenizer.from_pretrained(
            folder_with(work, "options_" + name, {**HUB_CONFIG, **o}))
            for name, o in OPTIONS.items()}
        model = os.path.join(FOLDER, "spm.model")
        raw_variants = {"v4": converter_tokenizer(model, "always"),
                        "v4_first": converter_tokenizer(model, "first")}
        cases = hard_cases(tok, variants, raw_variants)
        with open(CASES, "w", encoding="utf-8") as f:
            for c in cases:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")
        print(f"wrote {CASES}: {len(cases)} cases")
        if check_variants(cases, work):
            sys.exit("the ways of loading the folder disagree: no single reference")
        with open(CONFIG_CASES, "w", encoding="utf-8") as f:
            json.dump(config_cases(work), f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"wrote {CONFIG_CASES}")
        digest = glue_digest(tok)
        codepoint_digests(digest, tok, work)
    write_digest(digest)
    write_fuzz_seeds()


if __name__ == "__main__":
    main()
