#!/usr/bin/env python3
"""Write the ModernBERT golden fixtures (tests/fixtures/golden_tiny_modernbert_*.safetensors).

Offline only, never in CI: the venv of tools/requirements-golden.txt (transformers 5.24.0,
torch 2.15.0). The recipe and the tensor names are make_goldens.py's (tests/fixtures/README.md):
forward at init (logits, loss), every parameter's gradient, then 3 HF-Trainer-style steps
(fused AdamW with HF's decay groups, linear warmup schedule, gradient clipping), from which this
script imports the shared pieces.

The tiny ModernBERT: V 99, D 32, L 3, H 4 (head size 8), F 24 (Wi is 48 x 32), local_attention 6
(a token of a sliding layer sees 3 on each side), layers [full, sliding, full]
(global_attn_every_n_layers 2), rotary bases 160000 (full) and 10000 (sliding), no biases but
the classifier's, every dropout 0, eager attention. The batch has sequences of 9, 16, 3 and 12
tokens padded at the end, so three of them are longer than the sliding window. Weights:
ModernBERT's init with initializer_range 0.2, then LayerNorm weights 1 + N(0, 0.1), every other
tensor + N(0, 0.02) (make_goldens.perturb_tiny).

Fixtures:
  golden_tiny_modernbert_cls        classifier_pooling "cls", 3 labels, cross-entropy
  golden_tiny_modernbert_mean       classifier_pooling "mean", 3 labels, cross-entropy
  golden_tiny_modernbert_mean_reg   classifier_pooling "mean", 1 label, MSE (regression)
  golden_tiny_modernbert_cls_bf16   the cls fixture's outputs under cpuft's --bf16 arithmetic
                                    (the four products of each layer from bf16 inputs; see
                                    make_bf16_goldens.py), for tests/golden/bf16_golden_test.cc

Usage: HF_HUB_OFFLINE=1 python tools/make_modernbert_goldens.py --out tests/fixtures
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import ModernBertConfig, ModernBertForSequenceClassification

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_goldens as mg  # noqa: E402  (the shared recipe)

HYPER_CLS = {"lr": 1e-3, "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "warmup_steps": 2, "total_steps": 10, "schedule": "linear", "steps": 3}
HYPER_REG = {"lr": 1e-3, "weight_decay": 0.05, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "warmup_steps": 0, "total_steps": 5, "schedule": "linear", "steps": 3}


def tiny_config(num_labels: int, problem_type: str, pooling: str) -> ModernBertConfig:
    config = ModernBertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=24, max_position_embeddings=64, initializer_range=0.2,
        local_attention=6, global_attn_every_n_layers=2, global_rope_theta=160000.0,
        local_rope_theta=10000.0, pad_token_id=0, bos_token_id=2, cls_token_id=2,
        eos_token_id=3, sep_token_id=3, classifier_pooling=pooling, num_labels=num_labels,
        problem_type=problem_type, embedding_dropout=0.0, mlp_dropout=0.0,
        attention_dropout=0.0, classifier_dropout=0.0,
    )
    config._attn_implementation = "eager"
    return config


def tiny_batch(labels: torch.Tensor, seed: int) -> dict:
    """B=4 rows of 9, 16, 3 and 12 tokens padded at the end (id 0, mask 0); id 2 first."""
    lengths = [9, 16, 3, 12]
    B, T = len(lengths), max(lengths)
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(B, T, dtype=torch.int64)
    mask = torch.zeros(B, T, dtype=torch.int64)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(1, 99, (n,), generator=g)
        ids[b, 0] = 2
        mask[b, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def perturb(model: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    norms = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            if name in norms:
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                p.add_(0.02 * noise)


def float64_logits(model, batch) -> torch.Tensor:
    """The same model in float64 on each sequence alone, unpadded: what a padding-free engine
    computes, as a check of the float32 padded logits."""
    import copy
    m64 = copy.deepcopy(model).double()
    rows = []
    with torch.no_grad():
        for ids, mask in zip(batch["input_ids"], batch["attention_mask"]):
            n = int(mask.sum())
            rows.append(m64(input_ids=ids[:n].unsqueeze(0)).logits[0])
    return torch.stack(rows)


def make(out_dir: Path, name: str, seed: int, num_labels: int, pooling: str,
         max_grad_norm: float) -> None:
    regression = num_labels == 1
    problem = "regression" if regression else "single_label_classification"
    torch.manual_seed(seed)
    config = tiny_config(num_labels, problem, pooling)
    model = ModernBertForSequenceClassification(config)
    perturb(model, seed + 1)
    labels = (torch.tensor([1.5, -0.75, 3.25, 0.5]) if regression
              else torch.tensor([0, 2, 1, 2], dtype=torch.int64))
    batch = tiny_batch(labels, seed + 2)
    hyper = dict(HYPER_REG if regression else HYPER_CLS, max_grad_norm=max_grad_norm)

    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits, loss, grads = mg.forward_and_grads(model, batch)
    ref = float64_logits(model, batch)
    print(f"[{name}] float32 vs float64 logits: max rel "
          f"{((logits.double() - ref).abs().max() / ref.abs().max()).item():.3g}")
    losses, norms, lrs = mg.train_steps(model, batch, hyper)
    assert torch.equal(losses[0], loss.reshape(1)), "step 0 loss differs from the init forward"
    mg.print_facts(name, logits, norms, lrs, hyper)

    tensors = {f"init.{n}": t.contiguous() for n, t in init.items()}
    tensors.update({f"input.{k}": v.contiguous() for k, v in batch.items() if k != "labels"})
    tensors["input.labels"] = batch["labels"].contiguous()
    tensors["output.logits"] = logits.contiguous()
    tensors["output.loss"] = loss.reshape(1).contiguous()
    tensors.update({f"grad.{n}": g.contiguous() for n, g in grads.items()})
    tensors.update(mg.step_tensors(losses, norms, lrs))
    tensors.update({f"step3.{n}": p.detach().clone().contiguous()
                    for n, p in model.named_parameters()})
    config_dict = config.to_dict()
    config_dict["num_labels"] = num_labels
    metadata = {
        "config": json.dumps(config_dict, indent=2, sort_keys=True),
        "hyper": json.dumps(hyper, sort_keys=True),
        "generator": f"tools/make_modernbert_goldens.py ({mg.GENERATOR.split('(', 1)[1]}",
        "no_decay": json.dumps(mg.no_decay_names(model)),
        "optimizer": "torch.optim.AdamW(fused=True), two param groups (Trainer default adamw_torch_fused)",
        "zero_true_grad": "[]",
        "family": "modernbert",
    }
    path = out_dir / f"{name}.safetensors"
    save_file(tensors, str(path), metadata=metadata)
    print(f"[{name}] wrote {path}")


class Bf16Linear(torch.autograd.Function):
    """A bias-free nn.Linear as cpuft's bf16 plans compute it (make_bf16_goldens.py's emulation):
    forward round_fp32(bf16(x) bf16(W)^T), the products summed in float64; backward
    dx = bf16(dy) bf16(W), dW = bf16(dy)^T bf16(x)."""

    @staticmethod
    def forward(ctx, x, w):
        xr, wr = x.bfloat16().double(), w.bfloat16().double()
        ctx.save_for_backward(xr, wr)
        return (xr @ wr.t()).float()

    @staticmethod
    def backward(ctx, gy):
        xr, wr = ctx.saved_tensors
        gr = gy.bfloat16().double()
        gw = gr.reshape(-1, gr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])
        return (gr @ wr).float(), gw.float()


ROUNDED = ("attn.Wqkv", "attn.Wo", "mlp.Wi", "mlp.Wo")  # the four products of each layer


def make_bf16(out_dir: Path, name: str) -> None:
    """The bf16 reference of fixture `name`: its init weights, batch and recipe, with the four
    encoder products of every layer in cpuft's bf16 arithmetic (everything else fp32)."""
    import types
    from safetensors import safe_open
    fp32_path = out_dir / f"{name}.safetensors"
    with safe_open(str(fp32_path), "pt") as f:
        md = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    config = ModernBertConfig.from_dict(json.loads(md["config"]))
    config._attn_implementation = "eager"
    hyper = json.loads(md["hyper"])
    model = ModernBertForSequenceClassification(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(tensors[f"init.{n}"])
    rounded = 0
    for layer in model.model.layers:
        for path in ROUNDED:
            lin = layer.get_submodule(path)
            assert lin.bias is None, path
            lin.forward = types.MethodType(lambda self, x: Bf16Linear.apply(x, self.weight), lin)
            rounded += 1
    assert rounded == 4 * config.num_hidden_layers
    batch = {k[len("input."):]: v for k, v in tensors.items() if k.startswith("input.")}
    logits, loss, grads = mg.forward_and_grads(model, batch)
    out = {"output.logits": logits, "output.loss": loss.reshape(1)}
    out.update({f"grad.{n}": g for n, g in grads.items()})
    losses, norms, lrs = mg.train_steps(model, batch, hyper)
    out.update(mg.step_tensors(losses, norms, lrs))
    out.update({f"step3.{n}": p.detach().clone() for n, p in model.named_parameters()})
    rel = ((logits - tensors["output.logits"]).norm() / tensors["output.logits"].norm()).item()
    print(f"[{name}_bf16] bf16 vs fp32: logits rel-L2 {rel:.3g}")
    import hashlib
    metadata = {
        "generator": f"tools/make_modernbert_goldens.py ({mg.GENERATOR.split('(', 1)[1]}",
        "fp32_fixture": fp32_path.name,
        "fp32_fixture_sha256": hashlib.sha256(fp32_path.read_bytes()).hexdigest(),
        "emulation": "encoder Wqkv, Wo, Wi, Wo2: bf16(x) bf16(W)^T in float64 -> fp32; backward bf16(dy)",
        "family": "modernbert",
        "rounded_linears": json.dumps([f"model.layers.<i>.{x}" for x in ROUNDED]),
    }
    path = out_dir / f"{name}_bf16.safetensors"
    save_file({k: v.contiguous() for k, v in out.items()}, str(path), metadata=metadata)
    print(f"[{name}_bf16] wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    mg.make_deterministic()
    make(args.out, "golden_tiny_modernbert_cls", 6101, 3, "cls", 2.0)
    make(args.out, "golden_tiny_modernbert_mean", 6201, 3, "mean", 2.0)
    make(args.out, "golden_tiny_modernbert_mean_reg", 6301, 1, "mean", 8.0)
    make_bf16(args.out, "golden_tiny_modernbert_cls")


if __name__ == "__main__":
    main()
