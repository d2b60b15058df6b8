#!/usr/bin/env python3
"""Write tests/fixtures/golden_tiny_cls_label_smoothing.safetensors: the tiny BERT classification
fixture (golden_tiny_cls.safetensors: its init.* weights and input.* batch) under HF Trainer's
--label_smoothing_factor 0.1.

The loss is computed the way Trainer.compute_loss does with a label smoother: the model's forward
without labels, then transformers.trainer_pt_utils.LabelSmoother(epsilon) on its logits (for one
batch num_items_in_batch is the number of labels, the same as None). The script asserts that this
equals torch's CrossEntropyLoss(label_smoothing=epsilon), the definition cpuft's kernel follows.

Records: output.logits, output.loss, grad.<name> for every parameter (full tensors); metadata:
epsilon, the source fixture and its sha256, the generator and the command.

Offline only, never in CI (tools/README.md has the venv):
  HF_HUB_OFFLINE=1 python tools/make_label_smoothing_golden.py --out tests/fixtures
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers.trainer_pt_utils import LabelSmoother

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_goldens import (  # noqa: E402
    batch_from,
    family_of,
    load_fixture,
    make_deterministic,
    model_from_init,
)

import transformers  # noqa: E402

EPSILON = 0.1
SOURCE = "golden_tiny_cls.safetensors"
OUTPUT = "golden_tiny_cls_label_smoothing.safetensors"
COMMAND = "HF_HUB_OFFLINE=1 python tools/make_label_smoothing_golden.py --out tests/fixtures"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="folder holding golden_tiny_cls.safetensors")
    args = ap.parse_args()
    make_deterministic()
    src = Path(args.out) / SOURCE
    tensors, md = load_fixture(src)
    cfg = json.loads(md["config"])
    config = family_of(cfg).config_cls(**{k: v for k, v in cfg.items() if k != "num_labels"})
    assert config.num_labels == cfg["num_labels"] and config.num_labels > 1
    model = model_from_init(config, tensors)
    batch = batch_from(tensors)
    labels = batch.pop("labels")
    batch.pop("position_ids", None)

    model.train()  # every dropout of the tiny config is 0; train() is what the Trainer uses
    model.zero_grad(set_to_none=True)
    outputs = model(**batch)  # Trainer.compute_loss pops the labels when a label smoother is set
    loss = LabelSmoother(epsilon=EPSILON)(outputs, labels, num_items_in_batch=labels.numel())
    loss.backward()

    logits = outputs.logits.detach()
    torch_ce = torch.nn.CrossEntropyLoss(label_smoothing=EPSILON)(logits, labels)
    assert abs(torch_ce.item() - loss.item()) <= 1e-6 * abs(loss.item()), (torch_ce, loss)
    plain = torch.nn.CrossEntropyLoss()(logits, labels)
    assert abs(plain.item() - loss.item()) > 1e-3, "smoothing should change the loss"

    out = {"output.logits": logits.clone().contiguous(), "output.loss": loss.detach().reshape(1)}
    for n, p in model.named_parameters():
        out[f"grad.{n}"] = p.grad.detach().clone().contiguous()
    metadata = {
        "generator": (
            f"tools/make_label_smoothing_golden.py (torch {torch.__version__}, "
            f"transformers {transformers.__version__})"
        ),
        "command": COMMAND,
        "label_smoothing_factor": json.dumps(EPSILON),
        "source_fixture": SOURCE,
        "source_sha256": hashlib.sha256(src.read_bytes()).hexdigest(),
        "loss": "Trainer.compute_loss with LabelSmoother(epsilon) on the logits of the forward "
        "without labels (== torch.nn.CrossEntropyLoss(label_smoothing=epsilon))",
    }
    dest = Path(args.out) / OUTPUT
    save_file(dict(sorted(out.items())), str(dest), metadata=metadata)
    print(f"wrote {dest}: loss {loss.item():.9g} (plain cross-entropy {plain.item():.9g}), "
          f"{len(out) - 2} gradients")


if __name__ == "__main__":
    main()
