#!/usr/bin/env python3
"""A Hugging Face model folder with random weights of a given shape, for timing runs only
(tools/side_by_side.py, tools/scaling_runs.sh on a machine without the pretrained weights).

  python tools/make_random_model.py --config CONFIG.json --vocab VOCAB.txt --out DIR
      [--tokenizer_config tokenizer_config.json]

Builds AutoModelForSequenceClassification.from_config (num_labels 2, torch seed 0: transformers'
own initialisation) and saves it with save_pretrained (model.safetensors + config.json), with the
vocabulary beside it. The config's vocab_size must equal the vocabulary's size. Accuracy from such
a folder means nothing; speed and memory are those of the real model of that shape.
"""
import argparse
import os
import shutil

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--tokenizer_config",
                    help="default: the tokenizer_config.json beside --vocab, if there is one")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    words = sum(1 for _ in open(args.vocab, encoding="utf-8"))
    config = AutoConfig.from_pretrained(args.config)
    if config.vocab_size != words:
        ap.error(f"{args.config} has vocab_size {config.vocab_size}; {args.vocab} has {words} entries")
    config.num_labels = 2
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out)
    shutil.copy(args.vocab, os.path.join(args.out, "vocab.txt"))
    beside = os.path.join(os.path.dirname(os.path.abspath(args.vocab)), "tokenizer_config.json")
    if not args.tokenizer_config and os.path.isfile(beside):
        args.tokenizer_config = beside
    if args.tokenizer_config:
        shutil.copy(args.tokenizer_config, os.path.join(args.out, "tokenizer_config.json"))
    print(f"{args.out}: {config.model_type}, {sum(p.numel() for p in model.parameters())} "
          "parameters, random weights")


if __name__ == "__main__":
    main()
