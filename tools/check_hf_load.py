#!/usr/bin/env python3
"""Check that a cpuft output folder is a working Hugging Face model folder.

cpuft promises that its output_dir loads in transformers as run_glue's would. This script
  1. loads the folder with AutoModelForSequenceClassification and AutoTokenizer (offline),
  2. tokenizes sentence pairs from a TSV/CSV file (columns sentence1[, sentence2]) with the
     saved tokenizer and, if --orig_tokenizer is given, with the original model folder's
     tokenizer, and requires identical input_ids / token_type_ids (cpuft copies or rewrites
     the tokenizer files; a silent change there would change every prediction),
  3. runs the HF model on those pairs and compares its logits with the
     predict_logits_*.tsv written by
        cpuft predict --model_name_or_path OUT --test_file FILE --output_dir PRED
     (columns: index, logit_0, logit_1, ...), matching rows by index.
It prints the max |HF - cpuft| logit difference and exits 1 if it is above --tol (1e-4)
or the tokenizers disagree.

--make_pairs SRC writes the pairs file first from a GLUE MRPC-style TSV (BOM, tabs only,
sentences in columns '#1 String' / '#2 String'), so the same text goes to both engines.

Python used offline, never in CI. Example (see tools/run_accuracy_comparison.sh):
  /work/venv-golden/bin/python tools/check_hf_load.py --make_pairs /work/shared/data/glue/MRPC/dev.tsv \
      --pairs runs/acc/mrpc_dev_pairs.tsv --model_dir runs/acc/cpuft-mrpc-42 \
      --logits runs/acc/pred-mrpc-42/predict_logits_data.tsv \
      --orig_tokenizer /root/.cache/cpuft/models/all-MiniLM-L6-v2
"""
import argparse
import csv
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the folder is local; never try the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def make_pairs(src, dst):
    """MRPC-style GLUE TSV -> TSV with header sentence1<TAB>sentence2 (GLUE text has no tabs)."""
    with open(src, encoding="utf-8-sig") as f:  # utf-8-sig: MRPC starts with a BOM
        lines = [l for l in f.read().split("\n") if l]
    header = lines[0].split("\t")
    a, b = header.index("#1 String"), header.index("#2 String")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\n")
        for line in lines[1:]:
            cols = line.split("\t")
            f.write(cols[a] + "\t" + cols[b] + "\n")


def read_pairs(path):
    """Rows of a .tsv (split on tabs only, as cpuft and GLUE do) or .csv (RFC 4180 quoting)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        if path.endswith(".csv"):
            rows = list(csv.reader(f))
        else:
            rows = [l.split("\t") for l in f.read().split("\n") if l]
    header, rows = rows[0], [r for r in rows[1:] if r]
    a = header.index("sentence1")
    b = header.index("sentence2") if "sentence2" in header else None
    return [r[a] for r in rows], ([r[b] for r in rows] if b is not None else None)


def read_logits(path):
    """cpuft's predict_logits_*.tsv -> {index: np.array of logits}."""
    out = {}
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header[0] == "index" and all(h.startswith("logit_") for h in header[1:]), header
        for line in f:
            if line.strip():
                cols = line.rstrip("\n").split("\t")
                out[int(cols[0])] = np.array([float(x) for x in cols[1:]], dtype=np.float64)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model_dir", required=True, help="cpuft train output folder")
    ap.add_argument("--pairs", required=True, help="TSV/CSV with sentence1[, sentence2]")
    ap.add_argument("--logits", required=True, help="cpuft predict's predict_logits_*.tsv")
    ap.add_argument("--orig_tokenizer", help="original model folder, for the tokenizer check")
    ap.add_argument("--make_pairs", metavar="SRC", help="first write --pairs from this MRPC TSV")
    ap.add_argument("--max_seq_length", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json_out", help="append a JSON line with the result here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.make_pairs:
        make_pairs(args.make_pairs, args.pairs)
        print(f"wrote {args.pairs} from {args.make_pairs}")
        if not os.path.exists(args.logits):
            return 0  # only the pairs file was wanted (cpuft predict runs next)

    s1, s2 = read_pairs(args.pairs)
    texts = (s1,) if s2 is None else (s1, s2)
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    enc = tok(*texts, truncation=True, max_length=args.max_seq_length)
    ok = True

    # Tokenizer check: the saved tokenizer must give exactly the original's ids.
    tok_mismatch = None
    if args.orig_tokenizer:
        enc0 = AutoTokenizer.from_pretrained(args.orig_tokenizer)(
            *texts, truncation=True, max_length=args.max_seq_length)
        keys = [k for k in ("input_ids", "token_type_ids") if k in enc0]
        tok_mismatch = sum(any(enc[k][i] != enc0[k][i] for k in keys) for i in range(len(s1)))
        print(f"tokenizer: {type(tok).__name__} (saved) vs {args.orig_tokenizer}: "
              f"{tok_mismatch} of {len(s1)} pairs differ in {'/'.join(keys)}")
        ok &= tok_mismatch == 0

    # HF forward pass in float32, eval mode (no dropout), dynamic padding with attention mask.
    model = AutoModelForSequenceClassification.from_pretrained(args.model_dir)
    model.eval()
    hf = []
    with torch.no_grad():
        for start in range(0, len(s1), args.batch):
            feats = [{k: enc[k][i] for k in enc} for i in range(start, min(start + args.batch, len(s1)))]
            batch = tok.pad(feats, return_tensors="pt")
            hf.append(model(**batch).logits.double().numpy())
    hf = np.concatenate(hf)

    cp = read_logits(args.logits)
    if sorted(cp) != list(range(len(s1))):
        print(f"ERROR: cpuft logits have {len(cp)} rows, indices not 0..{len(s1) - 1}")
        return 1
    cpl = np.stack([cp[i] for i in range(len(s1))])
    if cpl.shape != hf.shape:
        print(f"ERROR: logits shape cpuft {cpl.shape} vs HF {hf.shape}")
        return 1
    diff = np.abs(cpl - hf)
    worst = int(np.unravel_index(np.argmax(diff), diff.shape)[0])
    max_diff = float(diff.max())
    agree = float(np.mean(np.argmax(cpl, 1) == np.argmax(hf, 1))) if hf.shape[1] > 1 else None
    print(f"model: {type(model).__name__}, {len(s1)} pairs, logits {hf.shape}")
    print(f"max |HF - cpuft| logit difference: {max_diff:.3e} (mean {float(diff.mean()):.3e}, "
          f"worst row {worst}: HF {hf[worst].tolist()} cpuft {cpl[worst].tolist()})")
    if agree is not None:
        print(f"argmax agreement: {agree * 100:.2f}%")
    ok &= max_diff <= args.tol
    print("PASS" if ok else f"FAIL (tol {args.tol})")
    if args.json_out:
        with open(args.json_out, "a") as f:
            f.write(json.dumps({"check": "hf_load", "model_dir": args.model_dir, "n": len(s1),
                                "max_abs_diff": max_diff, "mean_abs_diff": float(diff.mean()),
                                "argmax_agreement": agree, "tokenizer_mismatches": tok_mismatch,
                                "tol": args.tol, "pass": bool(ok)}) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
