#!/usr/bin/env python3
"""Print, for each encoder family of tools/make_goldens.py, what the C++ parameter table
must match: <Family>ForSequenceClassification's named_parameters() of the tiny config, in
order, with shapes, requires_grad and padding_idx of the embedding tables, the
non-persistent buffers, the weight-decay groups, and the modules of the embeddings, one
encoder layer and the head as transformers prints them (dropout probabilities included).

Offline, a few seconds; nothing is written unless --out is given.

Usage:
  HF_HUB_OFFLINE=1 python tools/family_params.py [--out /path/to/family_params.txt]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_goldens as mg  # noqa: E402  (the families and their tiny configs)


def describe(fam: mg.Family, variant: str = "") -> str:
    out = io.StringIO()
    p = lambda *a: print(*a, file=out)
    config = (mg.tiny_config(3, "single_label_classification") if fam is mg.BERT
              else mg.family_tiny_config(fam, 3, "single_label_classification", variant))
    torch.manual_seed(0)
    model = fam.model_cls(config)
    title = f"{fam.key}{' (' + variant + ')' if variant else ''}: {type(model).__name__}"
    p("=" * len(title))
    p(title)
    p("=" * len(title))
    d = config.to_dict()
    keys = sorted(k for k in d if k in (
        "model_type", "vocab_size", "hidden_size", "dim", "embedding_size", "num_hidden_layers", "n_layers",
        "num_attention_heads", "n_heads", "intermediate_size", "hidden_dim", "max_position_embeddings",
        "type_vocab_size", "pad_token_id", "bos_token_id", "eos_token_id", "layer_norm_eps", "hidden_act",
        "activation", "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout", "dropout",
        "attention_dropout", "seq_classif_dropout", "sinusoidal_pos_embds", "position_embedding_type"))
    p("tiny config: " + ", ".join(f"{k}={d[k]}" for k in keys))
    p(f"base_model_prefix: {model.base_model_prefix}")
    padding = {f"{n}.weight": m.padding_idx for n, m in model.named_modules()
               if isinstance(m, torch.nn.Embedding)}
    no_decay = set(mg.no_decay_names(model))
    p("named_parameters() order (index, name, shape, requires_grad, weight decay, [padding_idx]):")
    total = 0
    for i, (n, t) in enumerate(model.named_parameters()):
        extra = f"  padding_idx={padding[n]}" if n in padding else ""
        decay = "no_decay" if n in no_decay else "decay"
        p(f"  {i:3d}  {n:60s} {str(tuple(t.shape)):12s} requires_grad={t.requires_grad}  {decay}{extra}")
        total += t.numel()
    p(f"  {total} parameters in all")
    p("buffers (persistent = saved in model.safetensors):")
    for n, b in model.named_buffers():
        mod_name, _, leaf = n.rpartition(".")
        persistent = leaf not in mg.submodule(model, mod_name)._non_persistent_buffers_set
        p(f"  {n:60s} {str(tuple(b.shape)):12s} {b.dtype}  persistent={persistent}")
    p(f"zero_true_grad (key biases): {mg.zero_true_grad_names(model)}")
    base = mg.submodule(model, fam.base)
    p("modules: embeddings")
    p(indent(repr(base.embeddings)))
    if fam.key == "electra":
        p("modules: embeddings_project (applied to the embeddings' output)")
        p(indent(repr(base.embeddings_project)))
    p("modules: encoder layer 0")
    p(indent(repr(mg.encoder_layers(model)[0])))
    p("modules: head (everything of the classification model outside the encoder)")
    for n, m in model.named_children():
        if n != fam.base:
            p(indent(f"({n}): {m!r}"))
    if fam.key == "bert":
        p(indent(f"(bert.pooler): {base.pooler!r}"))
    return out.getvalue()


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write here instead of stdout")
    args = ap.parse_args(argv)
    with contextlib.redirect_stderr(io.StringIO()):  # transformers' init chatter
        text = [f"{mg.GENERATOR} via tools/family_params.py\n"]
        for key, fam in mg.FAMILIES.items():
            text.append(describe(fam))
            if key == "distilbert":
                text.append(describe(fam, "sinusoidal"))
    text = "\n".join(text)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out} ({len(text)} characters)")
    else:
        print(text)


if __name__ == "__main__":
    main()
