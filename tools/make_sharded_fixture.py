#!/usr/bin/env python3
"""Writes tests/fixtures/sharded_tiny/: a tiny random BertForSequenceClassification saved by
transformers' save_pretrained with a small max_shard_size, i.e. the sharded checkpoint layout of
the hub (model-0000k-of-0000n.safetensors + model.safetensors.index.json + config.json), for
src/io/weight_files_test.cc. Also writes tensors.json: every tensor's name, dtype, shape and
float64 sum and sum of squares, computed here from the model's state_dict, not from the files.

Run offline in the venv with transformers 5.24 and torch:
    HF_HUB_OFFLINE=1 /work/venv-hf/bin/python tools/make_sharded_fixture.py
"""
import json
import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "sharded_tiny")


def main():
    transformers.logging.set_verbosity_error()
    torch.manual_seed(1234)
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=24, max_position_embeddings=32, type_vocab_size=2,
                        num_labels=3)
    model = BertForSequenceClassification(config)
    shutil.rmtree(OUT, ignore_errors=True)
    model.save_pretrained(OUT, max_shard_size="8KB")
    names = sorted(os.listdir(OUT))
    assert "model.safetensors" not in names and "model.safetensors.index.json" in names, names
    shards = [n for n in names if n.startswith("model-")]
    assert len(shards) >= 3, shards
    tensors = {}
    for name, t in model.state_dict().items():
        d = t.detach().to(torch.float64)
        tensors[name] = {"dtype": "F32", "shape": list(t.shape), "sum": d.sum().item(),
                         "sum_sq": (d * d).sum().item()}
    index = json.load(open(os.path.join(OUT, "model.safetensors.index.json")))
    assert sorted(index["weight_map"]) == sorted(tensors), "the index lists other tensors"
    with open(os.path.join(OUT, "tensors.json"), "w") as f:
        json.dump({"generator": f"transformers {transformers.__version__}, torch {torch.__version__}",
                   "tensors": tensors}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: {names} ({sum(os.path.getsize(os.path.join(OUT, n)) for n in names)} "
          f"bytes), {len(tensors)} tensors in {len(shards)} shards")


if __name__ == "__main__":
    main()
