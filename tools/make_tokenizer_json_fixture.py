#!/usr/bin/env python3
"""Writes the tokenizer.json fixtures of cpuft's WordPiece tests, and checks which file
transformers follows when tokenizer.json and tokenizer_config.json disagree.

Run offline in the venv with transformers 5.24 and tokenizers 0.23:
    HF_HUB_OFFLINE=1 /work/venv-hf/bin/python tools/make_tokenizer_json_fixture.py

Outputs (committed), all under tests/fixtures/tokenizers/:
  bert_json_cased/, bert_json_uncased/   BertTokenizer over the bert-base cased / uncased
      vocabularies of tests/fixtures/vocab, written by transformers' save_pretrained (which writes
      tokenizer.json and tokenizer_config.json, no vocab.txt and no special_tokens_map.json).
  bert_json_strip_accents/               the same for cased text with strip_accents true, over a
      trimmed vocabulary (ids < 2500 and every token of at most 2 characters besides "##").
  json_*/                                pipelines only a tokenizer.json can describe (Sequence
      normalizers, other pre-tokenizers, another subword prefix, added tokens with lstrip/rstrip/
      normalized/single_word, other templates), written by TokenizersBackend's save_pretrained
      over trimmed vocabularies; transformers reads them as the tokenizers library does.
  hard_cases.jsonl    per folder, the hard texts and pairs of make_tokenizer_fixture.py (and a few
      for added tokens) with the ids and token_type_ids run_glue's model gets from AutoTokenizer
      (zeros when the tokenizer does not return token_type_ids); the script asserts that the
      tokenizers library (Tokenizer.from_file) gives the same input_ids.
  digest.json         per folder, FNV-1a hashes of those ids for every GLUE file in data/ and for
      every code point (format of tests/fixtures/tokenizer_glue_digest.json).
  precedence.json     the disagreement cases: edits of bert_json_cased/ (tokenizer_config.json,
      special_tokens_map.json, JSON-pointer edits of tokenizer.json), what AutoTokenizer and the
      tokenizers library give, and which of the two cpuft follows.

--check-saved DIR --folder NAME: load DIR (written by WordPieceTokenizer::save) with AutoTokenizer
and compare with the hard-case ids of folder NAME.
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformers  # noqa: E402
from tokenizers import AddedToken, Tokenizer, normalizers, pre_tokenizers, processors  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402
from transformers import AutoTokenizer, BertTokenizer  # noqa: E402
from transformers.tokenization_utils_tokenizers import TokenizersBackend  # noqa: E402

from make_tokenizer_fixture import (BLOCK_ROWS, CODEPOINT_BLOCK, FNV_OFFSET, GLUE_FILES,  # noqa: E402
                                    GLUE_MAX_LENGTH, HARD_TEXTS, LONG, MAX_LENGTHS, PAIRS,
                                    SEP_IDS, SEP_TEXT, SEP_TYPES, fnv_update, read_rows)

transformers.logging.set_verbosity_error()
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
VOCABS = os.path.join(ROOT, "tests", "fixtures", "vocab")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers")

EXTRA_TEXTS = [
    "Meet <ent> and <ENT> here", "x [E1] y", "a[E1]b", "  [E1]  ", "[E1][E1] [E1]",
    "xyz xyzabc abcxyz (xyz) xyz. _xyz xyz_", "<ent><ent>", "tab\x0bvt\x0cff\x85nel\u2028ls",
    "ünïcödé ŒUVRE", "dots... and --dashes-- (paren) [brackets]!?", "a.b,c;d:e", "...x", "x...",
    "Hello, World! It's 3:30pm; ok?", "deja\u0300 vu\u0301 \u0915\u093e\u0903", "[CLS]x[SEP]",
    "the [mask] and [MASK] tokens", "supercalifragilistic", "abcdefghijklm nopqr",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab_of(name, trim=False, prefix="##"):
    with open(os.path.join(VOCABS, name), encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    if trim:
        tokens = [t for i, t in enumerate(tokens) if i < 2500 or len(t.replace("##", "")) <= 2]
    if prefix != "##":
        tokens = [prefix + t[2:] if t.startswith("##") else t for t in tokens]
    return {t: i for i, t in enumerate(tokens)}


def special_kwargs():
    return {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}


def bert_template(vocab, pair="[CLS] $A [SEP] $B:1 [SEP]:1"):
    return processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair=pair,
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])


def backend_folder(name, tok, added=(), model_input_names=None):
    """A TokenizersBackend over `tok`, saved by transformers."""
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    if added:
        tok.add_tokens(list(added))
    kw = special_kwargs()
    if model_input_names:
        kw["model_input_names"] = model_input_names
    t = TokenizersBackend(tokenizer_object=tok, **kw)
    return save(name, t)


def save(name, t):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    t.save_pretrained(d)
    # save_pretrained may add files of other formats; the fixture keeps what the tests read.
    for f in os.listdir(d):
        if f not in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            os.remove(os.path.join(d, f))
    return d


def make_folders():
    os.makedirs(OUT, exist_ok=True)
    folders = {}
    cased, uncased = vocab_of("bert-base-cased-vocab.txt"), vocab_of("bert-base-uncased-vocab.txt")
    folders["bert_json_cased"] = save("bert_json_cased", BertTokenizer(vocab=cased, do_lower_case=False))
    folders["bert_json_uncased"] = save("bert_json_uncased",
                                        BertTokenizer(vocab=uncased, do_lower_case=True))
    folders["bert_json_strip_accents"] = save(
        "bert_json_strip_accents",
        BertTokenizer(vocab=vocab_of("bert-base-cased-vocab.txt", trim=True), do_lower_case=False,
                      strip_accents=True))

    # NFD + Lowercase + StripAccents (drops every combining mark, not only Mn), the Whitespace
    # pre-tokenizer (\w+|[^\w\s]+) then punctuation removed; token_type_ids returned.
    v = vocab_of("bert-base-uncased-vocab.txt", trim=True)
    tok = Tokenizer(WordPiece(v, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation(behavior="removed")])
    tok.post_processor = bert_template(v)
    folders["json_nfd_lower_strip"] = backend_folder(
        "json_nfd_lower_strip", tok,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"])

    # No clean_text, CJK padding, accents kept, then NFD; WhitespaceSplit then punctuation merged
    # with the previous word; "@@" continuations, 12 characters per word; BertProcessing; added
    # tokens normalized / stripping / single-word; no token_type_ids returned.
    v = vocab_of("bert-base-cased-vocab.txt", trim=True, prefix="@@")
    tok = Tokenizer(WordPiece(v, unk_token="[UNK]", continuing_subword_prefix="@@",
                              max_input_chars_per_word=12))
    tok.normalizer = normalizers.Sequence([
        normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=True,
                                   strip_accents=False, lowercase=False), normalizers.NFD()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(),
         pre_tokenizers.Punctuation(behavior="merged_with_previous")])
    tok.post_processor = processors.BertProcessing(("[SEP]", v["[SEP]"]), ("[CLS]", v["[CLS]"]))
    folders["json_custom"] = backend_folder("json_custom", tok, added=[
        AddedToken("<ent>", normalized=True),
        AddedToken("[E1]", lstrip=True, rstrip=True, normalized=False, special=True),
        AddedToken("xyz", single_word=True, normalized=False)])

    # BertNormalizer without accent stripping, then StripAccents alone (marks already composed
    # stay); punctuation merged with the next word, whitespace split, runs of punctuation
    # contiguous; a RoBERTa-like pair template and a normalized added token.
    v = vocab_of("bert-base-uncased-vocab.txt", trim=True)
    tok = Tokenizer(WordPiece(v, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([
        normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                   strip_accents=False, lowercase=True),
        normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Punctuation(behavior="merged_with_next"), pre_tokenizers.WhitespaceSplit(),
         pre_tokenizers.Punctuation(behavior="contiguous")])
    tok.post_processor = bert_template(v, pair="[CLS] $A [SEP] [SEP] $B:1 [SEP]:1")
    folders["json_merged_next"] = backend_folder(
        "json_merged_next", tok, added=[AddedToken("[MASK2]", normalized=True)],
        model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    return folders


# ---------------------------------------------------------------------------------------------
# What run_glue's model gets, and the tokenizers library's ids.

def encode(tok, a, b, max_length):
    kw = {"truncation": True, "max_length": max_length} if max_length else {"truncation": False}
    e = tok([a], [b], **kw) if b is not None else tok([a], **kw)
    ids = e["input_ids"][0]
    types = e["token_type_ids"][0] if "token_type_ids" in e else [0] * len(ids)
    return ids, types


def library_ids(folder, a, b, max_length):
    tk = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tk.no_padding()
    if max_length:
        tk.enable_truncation(max_length=max_length, strategy="longest_first")
    else:
        tk.no_truncation()
    e = tk.encode(a, b) if b is not None else tk.encode(a)
    return e.ids


def hard_cases(folders):
    cases = []
    for name, d in folders.items():
        tok = AutoTokenizer.from_pretrained(d)
        inputs = [(t, None, None) for t in HARD_TEXTS + EXTRA_TEXTS]
        inputs += [(a, b, m) for a, b in PAIRS for m in MAX_LENGTHS]
        inputs += [(LONG, None, m) for m in MAX_LENGTHS]
        bad = 0
        for a, b, m in inputs:
            ids, types = encode(tok, a, b, m)
            if library_ids(d, a, b, m) != ids:
                bad += 1
                print(f"  {name}: tokenizers and transformers differ on {a[:40]!r}")
            c = {"folder": name, "a": a, "max_length": m, "input_ids": ids, "token_type_ids": types}
            if b is not None:
                c["b"] = b
            cases.append(c)
        assert bad == 0, f"{name}: the tokenizers library and AutoTokenizer disagree"
        print(f"{name}: {type(tok).__name__}, {len(inputs)} cases")
    return cases


def digests(folders):
    out = {"format": "as tests/fixtures/tokenizer_glue_digest.json; token_type_ids are what "
                     "AutoTokenizer returns (zeros when it returns none)",
           "max_length": GLUE_MAX_LENGTH, "block_rows": BLOCK_ROWS, "codepoint_block": CODEPOINT_BLOCK,
           "files": [], "folders": {}}
    files = [(rel, h, c) for rel, h, c in GLUE_FILES if os.path.exists(os.path.join(ROOT, "data", rel))]
    rows_of = {rel: read_rows(os.path.join(ROOT, "data", rel), h, c) for rel, h, c in files}
    out["files"] = [{"path": rel, "header": h, "columns": c, "rows": len(rows_of[rel])}
                    for rel, h, c in files]
    for name, d in folders.items():
        tok = AutoTokenizer.from_pretrained(d)
        entry = {"files": {}}
        for rel, header, columns in files:
            rows = rows_of[rel]
            per_col = [tok([r[k] for r in rows], add_special_tokens=False)["input_ids"]
                       for k in range(len(columns))]
            a = [r[0] for r in rows]
            kw = {"truncation": True, "max_length": GLUE_MAX_LENGTH}
            enc = tok(a, [r[1] for r in rows], **kw) if len(columns) == 2 else tok(a, **kw)
            types = enc["token_type_ids"] if "token_type_ids" in enc else [
                [0] * len(x) for x in enc["input_ids"]]
            h, blocks, bh, n_tokens = FNV_OFFSET, [], FNV_OFFSET, 0
            for i in range(len(rows)):
                stream = []
                for k in range(len(columns)):
                    stream += per_col[k][i] + [SEP_TEXT]
                    n_tokens += len(per_col[k][i])
                stream += enc["input_ids"][i] + [SEP_IDS] + types[i] + [SEP_TYPES]
                h = fnv_update(h, stream)
                bh = fnv_update(bh, stream)
                if (i + 1) % BLOCK_ROWS == 0 or i + 1 == len(rows):
                    blocks.append(f"{bh:016x}")
                    bh = FNV_OFFSET
            entry["files"][rel] = {"tokens": n_tokens, "hash": f"{h:016x}", "block_hashes": blocks}
        blocks, n_tokens = [], 0
        for start in range(0, 0x110000, CODEPOINT_BLOCK):
            texts = [chr(c) + " a" + chr(c) + "b" for c in range(start, start + CODEPOINT_BLOCK)
                     if not 0xD800 <= c <= 0xDFFF]
            h = FNV_OFFSET
            for ids in tok(texts, add_special_tokens=False)["input_ids"]:
                h = fnv_update(h, ids + [SEP_TEXT])
                n_tokens += len(ids)
            blocks.append(f"{h:016x}")
        entry["codepoints"] = {"tokens": n_tokens, "block_hashes": blocks}
        out["folders"][name] = entry
        print(f"{name}: digests of {len(files)} GLUE files, code points {n_tokens} tokens")
    return out


# ---------------------------------------------------------------------------------------------
# Disagreements between tokenizer.json and tokenizer_config.json (and special_tokens_map.json).

PRECEDENCE_TEXT, PRECEDENCE_PAIR = "Hello World Café <new> unbelievable [MASK]", "x y"


def precedence_cases(base):
    cfg = json.load(open(os.path.join(base, "tokenizer_config.json")))
    no_lower = {k: v for k, v in cfg.items() if k != "do_lower_case"}
    cased_vocab = vocab_of("bert-base-cased-vocab.txt")
    new_token = {"id": len(cased_vocab), "content": "<new>", "single_word": False, "lstrip": False,
                 "rstrip": False, "normalized": False, "special": False}
    atd = {"0": {"content": "[PAD]", "lstrip": False, "normalized": False, "rstrip": False,
                 "single_word": False, "special": True}}
    # name, tokenizer_config.json (None: absent), special_tokens_map.json, tokenizer.json edits,
    # which side cpuft follows ("transformers" unless stated).
    specs = [
        ("as saved", cfg, None, [], "transformers"),
        ("config do_lower_case true, normalizer lowercase false", {**cfg, "do_lower_case": True},
         None, [], "transformers"),
        ("config do_lower_case false, normalizer lowercase true", cfg, None,
         [("/normalizer/lowercase", True)], "transformers"),
        ("config strip_accents true, normalizer strip_accents null", {**cfg, "strip_accents": True},
         None, [], "transformers"),
        ("config tokenize_chinese_chars false", {**cfg, "tokenize_chinese_chars": False}, None, [],
         "transformers"),
        # The deliberate difference: tokenizer_config.json does not say do_lower_case.
        ("config without do_lower_case", no_lower, None, [], "tokenizers"),
        ("no tokenizer_config.json, config.json model_type bert", None, None, [], "tokenizers"),
        ("json normalizer Sequence(NFD, Lowercase, StripAccents), BertTokenizer config", cfg, None,
         [("/normalizer", {"type": "Sequence", "normalizers": [
             {"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]})], "transformers"),
        ("json continuing_subword_prefix @@ and max_input_chars_per_word 5", cfg, None,
         [("/model/continuing_subword_prefix", "@@"), ("/model/max_input_chars_per_word", 5)],
         "transformers"),
        ("json template pair type ids 0", cfg, None,
         [("/post_processor/pair/3/Sequence/type_id", 0),
          ("/post_processor/pair/4/SpecialToken/type_id", 0)], "transformers"),
        ("config cls_token [MASK]", {**cfg, "cls_token": "[MASK]"}, None, [], "transformers"),
        ("special_tokens_map.json cls_token [MASK] overrides tokenizer_config.json", cfg,
         {"cls_token": "[MASK]"}, [], "transformers"),
        ("special_tokens_map.json ignored when tokenizer_config.json has added_tokens_decoder",
         {**cfg, "added_tokens_decoder": atd}, {"cls_token": "[MASK]"}, [], "transformers"),
        ("json added token <new>", cfg, None, [("/added_tokens/-", new_token)], "transformers"),
        ("json added token <new> ignored when tokenizer_config.json has added_tokens_decoder",
         {**cfg, "added_tokens_decoder": atd}, None, [("/added_tokens/-", new_token)],
         "transformers"),
        ("tokenizer_class TokenizersBackend, config do_lower_case true",
         {**cfg, "tokenizer_class": "TokenizersBackend", "do_lower_case": True}, None, [],
         "transformers"),
        ("tokenizer_class PreTrainedTokenizerFast, model_input_names with token_type_ids",
         {**cfg, "tokenizer_class": "PreTrainedTokenizerFast",
          "model_input_names": ["input_ids", "token_type_ids", "attention_mask"]}, None, [],
         "transformers"),
        ("tokenizer_class DistilBertTokenizer", {**cfg, "tokenizer_class": "DistilBertTokenizer"},
         None, [], "transformers"),
    ]
    out = []
    for name, config, stm, edits, follows in specs:
        d = tempfile.mkdtemp(prefix="cpuft_prec_")
        j = json.load(open(os.path.join(base, "tokenizer.json")))
        for path, value in edits:
            parts = path.strip("/").split("/")
            node = j
            for p in parts[:-1]:
                node = node[int(p)] if isinstance(node, list) else node[p]
            if parts[-1] == "-":
                node.append(copy.deepcopy(value))
            elif isinstance(node, list):
                node[int(parts[-1])] = copy.deepcopy(value)
            else:
                node[parts[-1]] = copy.deepcopy(value)
        json.dump(j, open(os.path.join(d, "tokenizer.json"), "w"))
        if config is not None:
            json.dump(config, open(os.path.join(d, "tokenizer_config.json"), "w"))
        else:
            json.dump({"model_type": "bert"}, open(os.path.join(d, "config.json"), "w"))
        if stm is not None:
            json.dump(stm, open(os.path.join(d, "special_tokens_map.json"), "w"))
        tok = AutoTokenizer.from_pretrained(d)
        ids, types = encode(tok, PRECEDENCE_TEXT, PRECEDENCE_PAIR, None)
        lib = Tokenizer.from_file(os.path.join(d, "tokenizer.json")).encode(
            PRECEDENCE_TEXT, PRECEDENCE_PAIR)
        case = {"name": name, "tokenizer_config": config, "special_tokens_map": stm,
                "tokenizer_json_edits": [{"path": p, "value": v} for p, v in edits],
                "config_json": None if config is not None else {"model_type": "bert"},
                "a": PRECEDENCE_TEXT, "b": PRECEDENCE_PAIR,
                "transformers": {"class": type(tok).__name__, "input_ids": ids,
                                 "token_type_ids": types,
                                 "tokens": tok.convert_ids_to_tokens(ids)},
                "tokenizers": {"input_ids": lib.ids, "token_type_ids": lib.type_ids,
                               "tokens": lib.tokens},
                "cpuft_follows": follows}
        same = ids == lib.ids and types == lib.type_ids
        print(f"  {name}: {type(tok).__name__}; transformers {'=' if same else '!='} tokenizers"
              f"{'' if same else ': ' + ' '.join(tok.convert_ids_to_tokens(ids))}")
        out.append(case)
        shutil.rmtree(d)
    return out


def check_saved(saved_dir, folder):
    tok = AutoTokenizer.from_pretrained(saved_dir)
    n = bad = 0
    with open(os.path.join(OUT, "hard_cases.jsonl"), encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            if case["folder"] != folder:
                continue
            n += 1
            ids, types = encode(tok, case["a"], case.get("b"), case["max_length"])
            if ids != case["input_ids"] or types != case["token_type_ids"]:
                bad += 1
                print(f"MISMATCH {case['a'][:40]!r}: {ids} != {case['input_ids']}")
    print(f"{saved_dir}: {type(tok).__name__}, {n} cases of '{folder}', {bad} mismatches")
    return n > 0 and bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-saved", metavar="DIR")
    ap.add_argument("--folder", default="bert_json_cased")
    args = ap.parse_args()
    if args.check_saved:
        sys.exit(0 if check_saved(args.check_saved, args.folder) else 1)
    folders = make_folders()
    cases = hard_cases(folders)
    with open(os.path.join(OUT, "hard_cases.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print("precedence (tokenizer.json vs tokenizer_config.json):")
    prec = precedence_cases(folders["bert_json_cased"])
    with open(os.path.join(OUT, "precedence.json"), "w", encoding="utf-8") as f:
        json.dump({"transformers": transformers.__version__,
                   "tokenizers": __import__("tokenizers").__version__, "cases": prec}, f,
                  indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(OUT, "digest.json"), "w", encoding="utf-8") as f:
        json.dump(digests(folders), f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
