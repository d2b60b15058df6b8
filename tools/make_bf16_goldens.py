#!/usr/bin/env python3
"""Write the golden fixtures for cpuft's --bf16 arithmetic.

Offline only; never used in CI (CI reads the committed files). Needs the fp32 tiny
fixtures written by tools/make_goldens.py, whose initial weights, batch and training
recipe it reuses, so the bf16 fixtures hold outputs only.

The reference is Hugging Face's <Family>ForSequenceClassification with each encoder
nn.Linear (BERT, RoBERTa, XLM-R, ELECTRA: query, key, value, attention.output.dense,
intermediate.dense, output.dense; DistilBERT: q_lin, k_lin, v_lin, out_lin, ffn.lin1,
ffn.lin2) computing what cpuft computes under --bf16 (docs/ARCHITECTURE.md, "bf16"):
  forward    y  = round_fp32( bf16(x) @ bf16(W)^T ) + b        products summed in float64
  backward   dx = bf16(dy) @ bf16(W),  dW = bf16(dy)^T @ bf16(x),  db = sum(dy)  (dy unrounded)
with bf16() torch's round-to-nearest-even and the weight rounded again at every forward
from the fp32 master weight. Everything else (embeddings, ELECTRA's embeddings_project,
LayerNorm, attention products, softmax, GELU, pooler, the heads, loss, AdamW) is HF's fp32.

Writes golden_tiny_{cls,reg}_bf16.safetensors (BERT) and golden_tiny_<family>_cls_bf16
(distilbert, roberta, xlm_roberta, electra): output.logits, output.loss, grad.<name>
for every parameter, loss/grad_norm per step and step3.<name> after the fixture's 3
AdamW steps with clipping and warmup. With --minilm-dir also
golden_minilm_mrpc_bf16.safetensors: the real all-MiniLM-L6-v2 on the 8 MRPC pairs of
golden_minilm_mrpc.safetensors (same head draw, same batch), compact: output.logits,
output.loss, and grad_norm.<name> / grad_sample.<name> (32 samples) for every parameter.

Usage:
  python tools/make_bf16_goldens.py --fixtures tests/fixtures [--minilm-dir DIR] \
      [--only tiny|minilm|families|distilbert|roberta|xlm-roberta|electra]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_goldens as mg  # noqa: E402  (the fp32 recipe: optimizer, schedule, steps, writing)


class Bf16Linear(torch.autograd.Function):
    """nn.Linear as cpuft's bf16 plans compute it (see the module docstring)."""

    @staticmethod
    def forward(ctx, x, w, b):
        xr = x.bfloat16().double()
        wr = w.bfloat16().double()
        ctx.save_for_backward(xr, wr)
        return (xr @ wr.t()).float() + b

    @staticmethod
    def backward(ctx, gy):
        xr, wr = ctx.saved_tensors
        gr = gy.bfloat16().double()
        gx = (gr @ wr).float()
        gw = (gr.reshape(-1, gr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])).float()
        gb = gy.reshape(-1, gy.shape[-1]).sum(0)
        return gx, gw, gb


def bf16_linear_forward(self, x):
    return Bf16Linear.apply(x, self.weight, self.bias)


def emulate_bf16(model) -> int:
    """Rebinds the forward of every encoder linear (the family's six per layer); returns how
    many were rebound."""
    count = 0
    for layer in mg.encoder_layers(model):
        for path in mg.family_of(model.config).linears:
            lin = mg.submodule(layer, path)
            assert isinstance(lin, torch.nn.Linear), path
            lin.forward = types.MethodType(bf16_linear_forward, lin)
            count += 1
    return count


def separation_and_metadata(fixture: Path, tensors, logits, loss, **extra) -> dict[str, str]:
    """Prints how far bf16 lies from the fp32 fixture (the C++ tolerance must be well below it)
    and returns the metadata every bf16 fixture carries."""
    rel = ((logits - tensors["output.logits"]).norm() / tensors["output.logits"].norm()).item()
    print(f"[{fixture.name}] bf16 vs fp32: logits rel-L2 {rel:.3g}, loss {loss.item():.6g} "
          f"vs {tensors['output.loss'].item():.6g}")
    return {
        "generator": mg.GENERATOR + " via tools/make_bf16_goldens.py",
        "fp32_fixture": fixture.name,
        "fp32_fixture_sha256": hashlib.sha256(fixture.read_bytes()).hexdigest(),
        "emulation": "encoder nn.Linear: bf16(x) bf16(W)^T in float64 -> fp32 + b; backward bf16(dy)",
        **extra,
    }


def write(dst: Path, out, meta) -> None:
    mg.write(dst, out, meta)
    print(f"sha256 {hashlib.sha256(dst.read_bytes()).hexdigest()}  {dst.name}")


def make(fixture: Path):
    tensors, md = mg.load_fixture(fixture)
    cfg = json.loads(md["config"])
    fam = mg.family_of(cfg)
    config = fam.config_cls.from_dict(cfg)
    hyper = json.loads(md["hyper"])
    batch = mg.batch_from(tensors)

    model = mg.model_from_init(config, tensors)
    assert emulate_bf16(model) == 6 * config.num_hidden_layers
    out = {}
    logits, loss, grads = mg.forward_and_grads(model, batch)
    out["output.logits"] = logits
    out["output.loss"] = loss.reshape(1)
    for n, g in grads.items():
        out[f"grad.{n}"] = g
    relu_inputs = mg.ReluInputs(model) if fam.key == "distilbert" else None
    losses, norms, lrs = mg.train_steps(model, batch, hyper)
    out.update(mg.step_tensors(losses, norms, lrs))
    for n, p in model.named_parameters():
        out[f"step3.{n}"] = p.detach().clone()
    extra = {} if fam is mg.BERT else {
        "family": fam.key,
        "rounded_linears": json.dumps([f"{fam.base}.{fam.layers}.<i>.{x}" for x in fam.linears])}
    if relu_inputs:  # DistilBERT's head units whose ReLU input is <= 0 at all three steps, here
        extra["dead_relu_units"] = json.dumps(relu_inputs.dead_units())
        print(f"[{fixture.name}] bf16: dead ReLU units {extra['dead_relu_units']} "
              f"(fp32 fixture: {md['dead_relu_units']})")
    return out, separation_and_metadata(fixture, tensors, logits, loss, **extra)


def make_minilm(fixture: Path, minilm_dir: str):
    """The bf16 forward and gradients of the MiniLM fixture's model and batch (compact)."""
    tensors, md = mg.load_fixture(fixture)
    model, config, missing = mg.load_minilm(minilm_dir, mg.MINILM_SEED)
    params = dict(model.named_parameters())
    for n in missing:  # the same head draw as the fp32 fixture
        assert torch.equal(params[n].detach(), tensors[f"init.{n}"]), n
    assert hashlib.sha256((Path(minilm_dir) / "model.safetensors").read_bytes()).hexdigest() == \
        md["minilm_weights_sha256"]
    assert emulate_bf16(model) == 6 * config.num_hidden_layers
    batch = mg.batch_from(tensors)
    logits, loss, grads = mg.forward_and_grads(model, batch)
    out = {"output.logits": logits, "output.loss": loss.reshape(1)}
    for n, g in grads.items():
        out[f"grad_norm.{n}"] = mg.l2norm(g)
        out[f"grad_sample.{n}"] = mg.sample(g)
    return out, separation_and_metadata(fixture, tensors, logits, loss,
                                        minilm_weights_sha256=md["minilm_weights_sha256"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", required=True, type=Path, help="tests/fixtures")
    ap.add_argument("--minilm-dir", help="all-MiniLM-L6-v2 folder (config.json, model.safetensors)")
    ap.add_argument("--only", choices=mg.ONLY_CHOICES,
                    help="tiny = the two tiny BERT ones, families = the other families' cls fixtures, "
                         "or one family's; default: all of them (MiniLM with --minilm-dir)")
    args = ap.parse_args(argv)
    if args.only == "minilm" and not args.minilm_dir:
        ap.error("--only minilm needs --minilm-dir")
    mg.make_deterministic()
    for spec in mg.TINY_FIXTURES:
        if spec.family == "bert":
            if args.only not in (None, "tiny"):
                continue
        elif spec.kind != "cls" or spec.variant or args.only not in (None, "families", spec.family):
            continue  # the other families: their plain cls fixture
        src = args.fixtures / spec.file
        write(args.fixtures / src.name.replace(".safetensors", "_bf16.safetensors"), *make(src))
    if args.minilm_dir and args.only in (None, "minilm"):
        write(args.fixtures / "golden_minilm_mrpc_bf16.safetensors",
              *make_minilm(args.fixtures / "golden_minilm_mrpc.safetensors", args.minilm_dir))


if __name__ == "__main__":
    main()
