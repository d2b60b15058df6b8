#!/usr/bin/env python3
"""Hugging Face baseline for cpuft's accuracy comparison (docs/accuracy.md).

Does what transformers' examples/pytorch/text-classification/run_glue.py does for one
GLUE task, with two differences forced by this machine:
  * the data comes from the GLUE TSV files (download_glue_data.py layout), not from the
    `datasets` hub, which is unreachable offline; the TSVs are the same files cpuft reads;
  * padding is dynamic (DataCollatorWithPadding) unless --pad_to_max_length gives run_glue's
    pad-to-128 default: padded positions are masked out, so this changes speed, not results.

Same pipeline otherwise: set_seed before the model is built (the new classifier head's init
depends on the seed), AutoTokenizer with pairs / truncation / max_length 128,
AutoModelForSequenceClassification, Trainer with AdamW + linear schedule + warmup, and the
GLUE metric computed as the `evaluate` "glue" metric does (sklearn / scipy).

Prints one JSON line (and appends it to --out): task, seed, eval metrics, train wall time.
Python used offline, never in CI. Example:
  HF_HUB_OFFLINE=1 /work/venv-golden/bin/python tools/hf_glue_baseline.py \
      --model_dir /root/.cache/cpuft/models/all-MiniLM-L6-v2 --task mrpc \
      --data_dir /work/shared/data/glue --seed 42 --out runs/acc/results.jsonl
"""
import argparse
import json
import os
import sys
import time

# Offline: the model folder is local; never try the hub. Set before importing transformers.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

import transformers
from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                          DataCollatorWithPadding, Trainer, TrainingArguments, set_seed)

# Per task: folder name, whether the TSV has a header, column indices of sentence1,
# sentence2 (None: single sentence) and label, and the label strings in the order the
# `datasets` hub's glue config numbers them (so label ids match run_glue's).
# None as label list means regression (STS-B, num_labels=1).
TASKS = {
    "cola": dict(folder="CoLA", header=False, s1=3, s2=None, label=1, labels=["0", "1"]),
    "sst2": dict(folder="SST-2", header=True, s1=0, s2=None, label=1, labels=["0", "1"]),
    "mrpc": dict(folder="MRPC", header=True, s1=3, s2=4, label=0, labels=["0", "1"]),
    "stsb": dict(folder="STS-B", header=True, s1=7, s2=8, label=9, labels=None),
    "rte": dict(folder="RTE", header=True, s1=1, s2=2, label=3,
                labels=["entailment", "not_entailment"]),
}


def read_tsv(path, spec):
    """Rows of a GLUE TSV. Split on tabs only: GLUE text contains quote characters that
    are literal (no CSV quoting). utf-8-sig drops MRPC's byte-order mark."""
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().split("\n")
    if spec["header"]:
        lines = lines[1:]
    s1, s2, lab = [], [], []
    for line in lines:
        if not line:
            continue
        cols = line.split("\t")
        s1.append(cols[spec["s1"]])
        if spec["s2"] is not None:
            s2.append(cols[spec["s2"]])
        raw = cols[spec["label"]]
        lab.append(float(raw) if spec["labels"] is None else spec["labels"].index(raw))
    return s1, (s2 if spec["s2"] is not None else None), lab


class EncodedDataset(torch.utils.data.Dataset):
    """Tokenized examples as dicts of lists; DataCollatorWithPadding pads each batch."""

    def __init__(self, enc, labels):
        self.enc, self.labels = enc, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        item = {k: v[i] for k, v in self.enc.items()}
        item["labels"] = self.labels[i]
        return item


def glue_metrics(task, preds, labels):
    """Same formulas as the `evaluate` library's glue metric used by run_glue.py."""
    if task == "stsb":
        m = {"pearson": float(pearsonr(preds, labels)[0]),
             "spearmanr": float(spearmanr(preds, labels)[0])}
    elif task == "cola":
        m = {"matthews_correlation": float(matthews_corrcoef(labels, preds))}
    elif task == "mrpc":
        m = {"accuracy": float(accuracy_score(labels, preds)),
             "f1": float(f1_score(labels, preds))}
    else:
        m = {"accuracy": float(accuracy_score(labels, preds))}
    if len(m) > 1:  # run_glue adds the mean when a task has several metrics
        m["combined_score"] = float(np.mean(list(m.values())))
    return m


def group_by_length_argument(on):
    """transformers 5.x before 5.2x: group_by_length=True; later: train_sampling_strategy."""
    import dataclasses
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    if not on:
        return {}
    if "train_sampling_strategy" in fields:
        return {"train_sampling_strategy": "group_by_length"}
    return {"group_by_length": True}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--task", required=True, choices=sorted(TASKS))
    ap.add_argument("--data_dir", default="/work/shared/data/glue")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup_ratio", type=float, default=0.1)
    ap.add_argument("--weight_decay", type=float, default=0.01)
    ap.add_argument("--max_seq_length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2,
                    help="torch intra-op threads (the shared 2-core machine)")
    ap.add_argument("--bf16", action="store_true",
                    help="TrainingArguments(bf16=True): torch CPU autocast to bfloat16")
    ap.add_argument("--pad_to_max_length", action="store_true",
                    help="pad every example to --max_seq_length (run_glue.py's default)")
    ap.add_argument("--group_by_length", action="store_true",
                    help="TrainingArguments(group_by_length=True): batches of similar length")
    ap.add_argument("--out", help="append the JSON line to this file")
    ap.add_argument("--output_dir", default=None,
                    help="Trainer scratch folder (nothing is saved; default /tmp/hf_glue_<task>_<seed>)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    t_start = time.time()
    spec = TASKS[args.task]
    folder = os.path.join(args.data_dir, spec["folder"])
    regression = spec["labels"] is None
    num_labels = 1 if regression else len(spec["labels"])

    # run_glue calls set_seed before building the model: the classifier head is drawn here.
    set_seed(args.seed)
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_dir, num_labels=num_labels)

    def encode(split):
        s1, s2, lab = read_tsv(os.path.join(folder, split + ".tsv"), spec)
        texts = (s1,) if s2 is None else (s1, s2)
        enc = tok(*texts, truncation=True, max_length=args.max_seq_length,
                  padding="max_length" if args.pad_to_max_length else False)
        return EncodedDataset(dict(enc), lab)

    train_ds, eval_ds = encode("train"), encode("dev")

    def compute_metrics(p):
        logits = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
        preds = np.squeeze(logits) if regression else np.argmax(logits, axis=1)
        return glue_metrics(args.task, preds, p.label_ids)

    targs = TrainingArguments(
        output_dir=args.output_dir or f"/tmp/hf_glue_{args.task}_{args.seed}",
        per_device_train_batch_size=args.batch,
        per_device_eval_batch_size=8,  # run_glue / cpuft default; does not change metrics
        learning_rate=args.lr,
        num_train_epochs=args.epochs,
        # transformers 5 folded warmup_ratio into warmup_steps: a float < 1 is a ratio of the
        # total steps (ceil(total * ratio)), as warmup_ratio was in 4.x.
        warmup_steps=args.warmup_ratio,
        weight_decay=args.weight_decay,
        lr_scheduler_type="linear",
        max_grad_norm=1.0,
        seed=args.seed,
        eval_strategy="no",       # evaluate once, at the end (as --do_eval does)
        save_strategy="no",
        report_to="none",
        logging_steps=500,
        dataloader_num_workers=0,
        use_cpu=True,
        bf16=args.bf16,
        disable_tqdm=True,
        **group_by_length_argument(args.group_by_length),
    )
    trainer = Trainer(model=model, args=targs, train_dataset=train_ds, eval_dataset=eval_ds,
                      data_collator=DataCollatorWithPadding(tok),
                      compute_metrics=compute_metrics)
    t0 = time.time()
    train_out = trainer.train()
    train_wall = time.time() - t0
    t1 = time.time()
    ev = trainer.evaluate()
    eval_wall = time.time() - t1

    metrics = {k[len("eval_"):]: v for k, v in ev.items()
               if k.startswith("eval_") and k[len("eval_"):] not in
               ("loss", "runtime", "samples_per_second", "steps_per_second", "epoch")}
    rec = {
        "engine": "hf-bf16" if args.bf16 else "hf", "task": args.task, "seed": args.seed,
        "pad_to_max_length": args.pad_to_max_length, "group_by_length": args.group_by_length,
        "epochs": args.epochs, "lr": args.lr, "batch": args.batch,
        "warmup_ratio": args.warmup_ratio, "weight_decay": args.weight_decay,
        "metrics": metrics, "eval_loss": ev.get("eval_loss"),
        "train_loss": train_out.training_loss, "global_step": train_out.global_step,
        "train_wall_s": round(train_wall, 2), "eval_wall_s": round(eval_wall, 2),
        "total_wall_s": round(time.time() - t_start, 2),
        "n_train": len(train_ds), "n_eval": len(eval_ds), "threads": torch.get_num_threads(),
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__},
    }
    line = json.dumps(rec)
    print(line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
