#!/usr/bin/env python3
"""Writes a ModernBERT-style tokenizer fixture and the ids Hugging Face gives with it.

Offline, in the golden venv (transformers 5.24, tokenizers 0.23):
    HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/make_nfc_bpe_fixture.py

ModernBERT's tokenizer (GPT-NeoX / OLMo lineage) is a byte-level BPE with an NFC normalizer,
ByteLevel pre-tokenizer without prefix space, a TemplateProcessing post-processor
([CLS] A [SEP], [CLS] A [SEP] B [SEP], every type id 0) and its special tokens added after the
vocabulary. The repository has no copy of it, so this script builds one of that shape from the
RoBERTa-style fixture's vocabulary and merges (tests/fixtures/tokenizers/roberta_bpe):
tests/fixtures/tokenizers/nfc_bpe/ (tokenizer.json, tokenizer_config.json,
special_tokens_map.json), loaded by transformers as PreTrainedTokenizerFast, as ModernBERT's is.
Then tests/fixtures/nfc_bpe_cases.jsonl: per line a text a (and b for pairs) and HF's input_ids,
for the NFC cases (tests/fixtures/nfc_cases.jsonl: composed and decomposed letters, reordered
and blocked marks, Hangul jamo), the byte-level hard cases' texts and lines of data/glue.
"""
import glob
import json
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import transformers  # noqa: E402
from tokenizers import Tokenizer, normalizers, processors  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

transformers.logging.set_verbosity_error()
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SRC = os.path.join(FIXTURES, "tokenizers", "roberta_bpe")
OUT = os.path.join(FIXTURES, "tokenizers", "nfc_bpe")
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def build():
    tok = Tokenizer.from_file(os.path.join(SRC, "tokenizer.json"))
    tok.normalizer = normalizers.NFC()
    tok.add_special_tokens(SPECIALS)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    os.makedirs(OUT, exist_ok=True)
    tok.save(os.path.join(OUT, "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192,
              "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "sep_token": "[SEP]",
              "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]"}
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(OUT, "special_tokens_map.json"), "w") as f:
        json.dump({k: config[k] for k in ("cls_token", "sep_token", "pad_token", "mask_token",
                                          "unk_token")}, f, indent=2)


def texts():
    out = []
    with open(os.path.join(FIXTURES, "nfc_cases.jsonl")) as f:
        out += [json.loads(line)["text"] for line in f]
    with open(os.path.join(FIXTURES, "bpe_hard_cases.jsonl")) as f:
        seen = set()
        for line in f:
            a = json.loads(line)["a"]
            if a not in seen:
                seen.add(a)
                out.append(a)
    rng = random.Random(5)
    for path in sorted(glob.glob(os.path.join(ROOT, "data", "glue", "*", "*.tsv"))):
        with open(path, encoding="utf-8-sig") as f:
            lines = [line.rstrip("\n") for line in f][1:]
        for line in rng.sample(lines, min(20, len(lines))):
            out.append(max(line.split("\t"), key=len))
    return out


def main():
    build()
    tok = AutoTokenizer.from_pretrained(OUT)
    assert type(tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend"), type(tok)
    cases = texts()
    n = 0
    with open(os.path.join(FIXTURES, "nfc_bpe_cases.jsonl"), "w") as f:
        for i, a in enumerate(cases):
            case = {"a": a, "input_ids": tok(a)["input_ids"]}
            if i % 3 == 2:  # some pairs
                b = cases[(i * 7) % len(cases)]
                case = {"a": a, "b": b, "input_ids": tok(a, b)["input_ids"]}
            f.write(json.dumps(case, ensure_ascii=True) + "\n")
            n += 1
    print(f"{type(tok).__name__}: wrote {OUT} and {n} cases (transformers "
          f"{transformers.__version__})")


if __name__ == "__main__":
    main()
