#!/usr/bin/env python3
"""Write the DeBERTa-v2/v3 golden fixtures (tests/fixtures/golden_tiny_deberta_*.safetensors).

Offline only, never in CI: the venv of tools/requirements-golden.txt (transformers 5.24.0,
torch 2.15.0). The recipe and the tensor names are make_goldens.py's (tests/fixtures/README.md):
forward at init (logits, loss), every parameter's gradient, then 3 HF-Trainer-style steps (fused
AdamW with HF's decay groups, linear warmup schedule, gradient clipping), from which this script
imports the shared pieces.

The tiny DeBERTa: V 99, D 32, L 3, H 4 (head size 8), F 48, every dropout 0, two configurations:
  golden_tiny_deberta_cls   DeBERTa-v3's choices: no position or type table
                            (position_biased_input false, type_vocab_size 0), relative attention
                            with c2p and p2c, log buckets (position_buckets 8 over
                            max_relative_positions 16: distances above 4 are bucketed),
                            norm_rel_ebd layer_norm; 3 labels, cross-entropy.
  golden_tiny_deberta_separate  the cls configuration with share_att_key false (HF's default): every
                            layer projects the relative embeddings with pos_query_proj (p2c) and
                            pos_key_proj (c2p) of its own; 3 labels, cross-entropy.
  golden_tiny_deberta_conv  the cls configuration with DeBERTa-v2-xlarge's convolution after layer
                            0 (conv_kernel_size 3, conv_act gelu): the sequence of 3 tokens is
                            the window's size; 3 labels, cross-entropy.
  golden_tiny_deberta_proj  the reg configuration with embedding_size 16: word, position and type
                            tables 16 wide, embed_proj (32, 16) without a bias before the
                            LayerNorm; 1 label, MSE.
  golden_tiny_deberta_reg   DeBERTa-v2's older choices: an absolute position table and 2 token
                            types, no buckets (max_relative_positions 6: longer distances are
                            clamped), c2p only, no LayerNorm on the relative embeddings; 1 label,
                            MSE. The batch has token types 0 and 1.
The batch: sequences of 9, 16, 3 and 12 tokens padded at the end (id 0, mask 0), [CLS]=1 first;
one pad id (0) among the real tokens of the first sequence, whose row must stay without
gradient. Weights: DeBERTa's init with initializer_range 0.2, then LayerNorm weights
1 + N(0, 0.1), biases N(0, 0.1), every other tensor + N(0, 0.02).

golden_tiny_deberta_{cls,separate,conv}_bf16 hold those fixtures' outputs under cpuft's --bf16 arithmetic (the
six token products of each layer from bf16 inputs; make_bf16_goldens.py's emulation), for
tests/golden/bf16_golden_test.cc.

The fixture also holds HF's bucket table (make_log_bucket_position) for DeBERTa-v3-base's
256 buckets over 512 positions, r in [-1023, 1023]: "relative.buckets_256_512".

Usage: HF_HUB_OFFLINE=1 python tools/make_deberta_goldens.py --out tests/fixtures
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification
from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_goldens as mg  # noqa: E402  (the shared recipe)

HYPER_CLS = {"lr": 1e-3, "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "warmup_steps": 2, "total_steps": 10, "schedule": "linear", "steps": 3}
HYPER_REG = {"lr": 1e-3, "weight_decay": 0.05, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "warmup_steps": 0, "total_steps": 5, "schedule": "linear", "steps": 3}


def tiny_config(num_labels: int, problem_type: str, v3: bool, share_att_key: bool = True,
                conv: bool = False, embedding_size: int | None = None) -> DebertaV2Config:
    common = dict(
        vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=64, initializer_range=0.2,
        hidden_act="gelu", layer_norm_eps=1e-7, pad_token_id=0, relative_attention=True,
        share_att_key=share_att_key, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        pooler_dropout=0.0, cls_dropout=0.0, num_labels=num_labels, problem_type=problem_type,
    )
    if conv:  # v2-xlarge's convolution after layer 0: kernel 3, GELU
        common.update(conv_kernel_size=3, conv_act="gelu")
    if embedding_size is not None:  # tables narrower than the layers: embed_proj
        common.update(embedding_size=embedding_size)
    if v3:
        return DebertaV2Config(**common, position_biased_input=False, type_vocab_size=0,
                               position_buckets=8, max_relative_positions=16,
                               pos_att_type="p2c|c2p", norm_rel_ebd="layer_norm")
    return DebertaV2Config(**common, position_biased_input=True, type_vocab_size=2,
                           position_buckets=-1, max_relative_positions=6, pos_att_type=["c2p"],
                           norm_rel_ebd="none")


def tiny_batch(labels: torch.Tensor, seed: int, token_types: bool) -> dict:
    lengths = [9, 16, 3, 12]
    B, T = len(lengths), max(lengths)
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(B, T, dtype=torch.int64)
    mask = torch.zeros(B, T, dtype=torch.int64)
    types = torch.zeros(B, T, dtype=torch.int64)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(1, 99, (n,), generator=g)
        ids[b, 0] = 1
        mask[b, :n] = 1
        types[b, n // 2:n] = 1
    ids[0, 4] = 0  # a pad id among real tokens: its row gets no gradient (padding_idx)
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    if token_types:
        batch["token_type_ids"] = types
    return batch


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
        # The padding row starts at 0 as HF's init leaves it; keep it there.
        model.deberta.embeddings.word_embeddings.weight[0].zero_()


def zero_true_grad_names(model, config) -> list[str]:
    """The key biases, where their exact gradient is 0: b_k adds q_i . b_k to every score of row i
    (through the keys and, with c2p, through the projected positions), to which softmax is
    invariant. With p2c it also adds b_k . pq[row(i - j)], which varies along the row: not 0.
    With share_att_key false and c2p, pos_key_proj's bias adds q_i . b_pk to every score of row i:
    0 too, whatever else the config has."""
    names = []
    if "p2c" not in config.pos_att_type:
        names += [n for n, _ in model.named_parameters()
                  if n.endswith("attention.self.key_proj.bias")]
    if not config.share_att_key and "c2p" in config.pos_att_type:
        names += [n for n, _ in model.named_parameters()
                  if n.endswith("attention.self.pos_key_proj.bias")]
    return names


def float64_logits(model, batch) -> torch.Tensor:
    """The same model in float64 on each sequence alone, unpadded: what a padding-free engine
    computes, as a check of the float32 padded logits."""
    m64 = copy.deepcopy(model).double()
    rows = []
    with torch.no_grad():
        for b, (ids, mask) in enumerate(zip(batch["input_ids"], batch["attention_mask"])):
            n = int(mask.sum())
            extra = {}
            if "token_type_ids" in batch:
                extra["token_type_ids"] = batch["token_type_ids"][b, :n].unsqueeze(0)
            rows.append(m64(input_ids=ids[:n].unsqueeze(0), **extra).logits[0])
    return torch.stack(rows)


def make(out_dir: Path, name: str, seed: int, num_labels: int, v3: bool,
         max_grad_norm: float, share_att_key: bool = True, conv: bool = False,
         embedding_size: int | None = None) -> None:
    regression = num_labels == 1
    problem = "regression" if regression else "single_label_classification"
    torch.manual_seed(seed)
    config = tiny_config(num_labels, problem, v3, share_att_key, conv, embedding_size)
    model = DebertaV2ForSequenceClassification(config)
    perturb(model, seed + 1)
    labels = (torch.tensor([1.5, -0.75, 3.25, 0.5]) if regression
              else torch.tensor([0, 2, 1, 2], dtype=torch.int64))
    batch = tiny_batch(labels, seed + 2, token_types=not v3)
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
    r = torch.arange(-1023, 1024, dtype=torch.int64)
    tensors["relative.buckets_256_512"] = make_log_bucket_position(r, 256, 512).to(torch.int64)
    config_dict = config.to_dict()
    config_dict["num_labels"] = num_labels
    metadata = {
        "config": json.dumps(config_dict, indent=2, sort_keys=True),
        "hyper": json.dumps(hyper, sort_keys=True),
        "generator": f"tools/make_deberta_goldens.py ({mg.GENERATOR.split('(', 1)[1]}",
        "no_decay": json.dumps(mg.no_decay_names(model)),
        "optimizer": "torch.optim.AdamW(fused=True), two param groups (Trainer default adamw_torch_fused)",
        "zero_true_grad": json.dumps(zero_true_grad_names(model, config)),
        "family": "deberta-v2",
    }
    path = out_dir / f"{name}.safetensors"
    save_file(tensors, str(path), metadata=metadata)
    print(f"[{name}] wrote {path}")


ROUNDED = ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj",
           "attention.output.dense", "intermediate.dense", "output.dense")


def make_bf16(out_dir: Path, name: str) -> None:
    """The bf16 reference of fixture `name`: its init weights, batch and recipe, with the six
    token products of every layer in cpuft's bf16 arithmetic (make_bf16_goldens.Bf16Linear).
    The query and key projections of the relative embeddings (the same modules, called on a
    (1, 2S, D) input) stay fp32, as cpuft computes them; everything else is fp32."""
    import hashlib
    import types
    from safetensors import safe_open
    from make_bf16_goldens import Bf16Linear
    fp32_path = out_dir / f"{name}.safetensors"
    with safe_open(str(fp32_path), "pt") as f:
        md = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    config = DebertaV2Config.from_dict(json.loads(md["config"]))
    hyper = json.loads(md["hyper"])
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(tensors[f"init.{n}"])
    batch = {k[len("input."):]: v for k, v in tensors.items() if k.startswith("input.")}
    rel_rows = model.deberta.encoder.rel_embeddings.weight.shape[0]
    batch_size = batch["input_ids"].shape[0]
    assert batch_size != 1

    def forward(self, x):
        if x.shape[0] == 1 and x.shape[-2] == rel_rows:  # the relative embeddings: fp32
            return torch.nn.functional.linear(x, self.weight, self.bias)
        assert x.shape[0] == batch_size, x.shape
        return Bf16Linear.apply(x, self.weight, self.bias)

    rounded = 0
    for layer in model.deberta.encoder.layer:
        for path in ROUNDED:
            layer.get_submodule(path).forward = types.MethodType(forward, layer.get_submodule(path))
            rounded += 1
    assert rounded == 6 * config.num_hidden_layers
    logits, loss, grads = mg.forward_and_grads(model, batch)
    out = {"output.logits": logits, "output.loss": loss.reshape(1)}
    out.update({f"grad.{n}": g for n, g in grads.items()})
    losses, norms, lrs = mg.train_steps(model, batch, hyper)
    out.update(mg.step_tensors(losses, norms, lrs))
    out.update({f"step3.{n}": p.detach().clone() for n, p in model.named_parameters()})
    rel = ((logits - tensors["output.logits"]).norm() / tensors["output.logits"].norm()).item()
    print(f"[{name}_bf16] bf16 vs fp32: logits rel-L2 {rel:.3g}")
    metadata = {
        "generator": f"tools/make_deberta_goldens.py ({mg.GENERATOR.split('(', 1)[1]}",
        "fp32_fixture": fp32_path.name,
        "fp32_fixture_sha256": hashlib.sha256(fp32_path.read_bytes()).hexdigest(),
        "emulation": "encoder query/key/value_proj, attention.output.dense, intermediate.dense, "
                     "output.dense on tokens: bf16(x) bf16(W)^T in float64 -> fp32 + b; backward "
                     "bf16(dy); the relative embeddings' projections fp32",
        "family": "deberta-v2",
        "rounded_linears": json.dumps([f"deberta.encoder.layer.<i>.{x}" for x in ROUNDED]),
    }
    path = out_dir / f"{name}_bf16.safetensors"
    save_file({k: v.contiguous() for k, v in out.items()}, str(path), metadata=metadata)
    print(f"[{name}_bf16] wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    mg.make_deterministic()
    make(args.out, "golden_tiny_deberta_cls", 7101, 3, True, 2.0)
    make(args.out, "golden_tiny_deberta_reg", 7201, 1, False, 8.0)
    make(args.out, "golden_tiny_deberta_separate", 7311, 3, True, 2.0, share_att_key=False)
    make(args.out, "golden_tiny_deberta_conv", 7411, 3, True, 2.0, conv=True)
    make(args.out, "golden_tiny_deberta_proj", 7501, 1, False, 8.0, embedding_size=16)
    make_bf16(args.out, "golden_tiny_deberta_cls")
    make_bf16(args.out, "golden_tiny_deberta_separate")
    make_bf16(args.out, "golden_tiny_deberta_conv")


if __name__ == "__main__":
    main()
