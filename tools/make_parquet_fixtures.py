#!/usr/bin/env python3
"""Writes tests/fixtures/glue_parquet/: small GLUE parquet files laid out as the Hugging Face hub
cache holds the dataset nyu-mll/glue (what `load_dataset("glue", "mrpc")` downloads), for
src/data/glue_source_test.cc:

    hub/datasets--nyu-mll--glue/refs/main                      the commit below
    hub/datasets--nyu-mll--glue/snapshots/<commit>/<config>/<split>-0000i-of-0000n.parquet

The files have the hub's columns and types (text columns as strings, `label` int64 with -1 in
test, float32 for stsb, `idx` int32) and, like the files `datasets` writes, the features in the
schema metadata under "huggingface" (the ClassLabel names of `label`). Rows: mrpc copies the first
rows of data/glue/MRPC (so the test can compare both readers); the others are hand-written, with
non-ASCII text in cola and qnli; qnli train is two shards. Also:

    hub_permuted/...   rte whose ClassLabel names are listed in the other order (the reader must
                       map labels by name)
    corrupt/...        mrpc whose train file is cut in half, whose validation file is not
                       parquet at all, and whose test file has its column data overwritten (the
                       footer intact)

Run in a venv holding pyarrow (the same wheel scripts/fetch_arrow.sh pins), never in CI:
    python3 -m venv /work/venv-arrow && /work/venv-arrow/bin/pip install pyarrow==26.0.1
    /work/venv-arrow/bin/python tools/make_parquet_fixtures.py --out tests/fixtures/glue_parquet
"""
import argparse
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # a made-up snapshot hash
REPO = "datasets--nyu-mll--glue"

NLI3 = ["entailment", "neutral", "contradiction"]
NLI2 = ["entailment", "not_entailment"]


def features(text_cols, label):
    f = {c: {"dtype": "string", "_type": "Value"} for c in text_cols}
    f["label"] = label
    f["idx"] = {"dtype": "int32", "_type": "Value"}
    return f


def class_label(names):
    return {"names": names, "_type": "ClassLabel"}


def write_split(root, config, split, text_cols, label_feature, rows, shards=1, commit=COMMIT):
    """rows: tuples (text..., label); idx is the row number."""
    folder = os.path.join(root, REPO, "snapshots", commit, config)
    os.makedirs(folder, exist_ok=True)
    meta = {"huggingface": json.dumps({"info": {"features": features(text_cols, label_feature)}})}
    regression = label_feature.get("_type") == "Value"
    per_shard = (len(rows) + shards - 1) // shards
    for s in range(shards):
        part = rows[s * per_shard:(s + 1) * per_shard]
        start = s * per_shard
        columns = {c: pa.array([r[i] for r in part], pa.string()) for i, c in enumerate(text_cols)}
        columns["label"] = pa.array([r[len(text_cols)] for r in part],
                                    pa.float32() if regression else pa.int64())
        columns["idx"] = pa.array(range(start, start + len(part)), pa.int32())
        table = pa.table(columns).replace_schema_metadata(meta)
        pq.write_table(table, os.path.join(folder, f"{split}-{s:05d}-of-{shards:05d}.parquet"))


def write_ref(root, commit=COMMIT):
    refs = os.path.join(root, REPO, "refs")
    os.makedirs(refs, exist_ok=True)
    with open(os.path.join(refs, "main"), "w") as f:
        f.write(commit)  # huggingface_hub writes the hash without a newline


def tsv_rows(path, n, text_a, text_b, label):
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().split("\n")[1:n + 1]
    rows = []
    for line in lines:
        fields = line.split("\t")
        rows.append((fields[text_a], fields[text_b], int(fields[label]) if label >= 0 else -1))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--glue", default=os.path.join(os.path.dirname(__file__), "..", "data", "glue"))
    args = ap.parse_args()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)

    hub = os.path.join(args.out, "hub")
    write_ref(hub)
    mrpc = os.path.join(args.glue, "MRPC")
    pair = ["sentence1", "sentence2"]
    binary_mrpc = class_label(["not_equivalent", "equivalent"])
    write_split(hub, "mrpc", "train", pair, binary_mrpc,
                tsv_rows(os.path.join(mrpc, "train.tsv"), 5, 3, 4, 0))
    write_split(hub, "mrpc", "validation", pair, binary_mrpc,
                tsv_rows(os.path.join(mrpc, "dev.tsv"), 3, 3, 4, 0))
    write_split(hub, "mrpc", "test", pair, binary_mrpc,
                tsv_rows(os.path.join(mrpc, "test.tsv"), 2, 3, 4, -1))

    stsb = {"dtype": "float32", "_type": "Value"}
    write_split(hub, "stsb", "train", pair, stsb, [
        ("A plane is taking off.", "An air plane is taking off.", 5.0),
        ("A man is playing a flute.", "A man is playing a large flute.", 3.8),
        ("A woman is slicing an onion.", "A man is dancing.", 0.0),
    ])
    write_split(hub, "stsb", "validation", pair, stsb, [
        ("A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", 5.0),
        ("A young child is riding a horse.", "A child is riding a horse.", 4.75),
    ])
    write_split(hub, "stsb", "test", pair, stsb, [
        ("A girl is styling her hair.", "A girl is brushing her hair.", -1.0),
    ])

    nli = ["premise", "hypothesis"]
    mnli = class_label(NLI3)
    write_split(hub, "mnli", "train", nli, mnli, [
        ("Conceptually cream skimming has two basic dimensions.",
         "Product and geography are what make cream skimming work.", 1),
        ("you know during the season and i guess", "You lose the things to the following level.", 0),
        ("One of our number will carry out your instructions minutely.",
         "A member of my team will execute your orders with immense precision.", 0),
        ("How do you know? All this is their information again.", "This information belongs to them.", 0),
        ("yeah i tell you what though", "I don't care.", 2),
    ])
    write_split(hub, "mnli", "validation_matched", nli, mnli, [
        ("The new rights are nice enough", "Everyone really likes the newest benefits ", 1),
        ("This site includes a list of all award winners.", "The Government Executive articles housed on the website are not able to be searched.", 2),
    ])
    write_split(hub, "mnli", "validation_mismatched", nli, mnli, [
        ("Your contribution helped make it possible.", "Your contributions were of no help.", 2),
        ("The answer has nothing to do with their cause.", "Dictionaries are indeed exercises in bi-unique substitutability.", 0),
        ("Mothers are much less likely to be in the labor force.", "It is easy for mothers to work.", 1),
    ])
    write_split(hub, "mnli", "test_matched", nli, mnli, [
        ("Hierbas, ans seco, ans dulce, and frigola are just a few names.", "Hierbas is a name.", -1),
    ])
    write_split(hub, "mnli", "test_mismatched", nli, mnli, [
        ("What have you decided?", "What are you going to do?", -1),
        ("Self-sufficiency is a hallmark.", "It is a hallmark.", -1),
    ])

    cola = class_label(["unacceptable", "acceptable"])
    write_split(hub, "cola", "train", ["sentence"], cola, [
        ("Our friends won't buy this analysis, let alone the next one we propose.", 1),
        ("One more pseudo generalization and I'm giving up.", 1),
        ("They drank the pub.", 0),
        ("Ça m'étonne: naïve café, Straße, 東京, 😀 — “quoted”.", 1),
    ])
    write_split(hub, "cola", "validation", ["sentence"], cola, [
        ("The sailors rode the breeze clear of the rocks.", 1),
        ("The more we study verbs, the crazier they get.", 1),
    ])
    write_split(hub, "cola", "test", ["sentence"], cola, [
        ("Bill whistled past the house.", -1),
    ])

    qnli_cols = ["question", "sentence"]
    qnli = class_label(NLI2)
    write_split(hub, "qnli", "train", qnli_cols, qnli, [
        ("When did the third Digimon series begin?",
         "Unlike the two seasons before it, the third season is not related.", 1),
        ("Which missile batteries often have individual launchers?",
         "When MANPADS is operated by specialists, batteries may have several dozen teams.", 1),
        ("What two things does Popper argue Tarski's theory involves?",
         "He bases this interpretation on the fact that these ideas are closely related.", 0),
        ("Wie heißt die Stadt? ¿Dónde está?", "Die Stadt heißt München — 名古屋 ではない.", 0),
        ("What is the name of the ship?", "The ship is called the Endurance.", 0),
    ], shards=2)
    write_split(hub, "qnli", "validation", qnli_cols, qnli, [
        ("What came into force after the new constitution was herald?",
         "As of that day, the new constitution heralding the Second Republic came into force.", 0),
    ])

    # The ClassLabel names in the other order: label 0 means not_entailment here.
    permuted = os.path.join(args.out, "hub_permuted")
    write_ref(permuted)
    write_split(permuted, "rte", "train", pair, class_label(["not_entailment", "entailment"]), [
        ("No weapons of mass destruction found in Iraq yet.",
         "Weapons of mass destruction found in Iraq.", 0),
        ("A place of sorrow, after Pope John Paul II died, became a place of celebration.",
         "Pope Benedict XVI is the new leader of the Roman Catholic Church.", 1),
    ])

    corrupt = os.path.join(args.out, "corrupt")
    write_ref(corrupt)
    write_split(corrupt, "mrpc", "train", pair, binary_mrpc,
                tsv_rows(os.path.join(mrpc, "train.tsv"), 5, 3, 4, 0))
    train = os.path.join(corrupt, REPO, "snapshots", COMMIT, "mrpc", "train-00000-of-00001.parquet")
    with open(train, "rb") as f:
        data = f.read()
    with open(train, "wb") as f:
        f.write(data[:len(data) // 2])
    with open(train.replace("train-", "validation-"), "w") as f:
        f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
    write_split(corrupt, "mrpc", "test", pair, binary_mrpc,
                tsv_rows(os.path.join(mrpc, "test.tsv"), 2, 3, 4, -1))
    test = train.replace("train-", "test-")
    with open(test, "rb") as f:
        data = bytearray(f.read())
    for i in range(8, 200):  # past the magic "PAR1": the first column chunk's page header and data
        data[i] = 0xA5
    with open(test, "wb") as f:
        f.write(bytes(data))


if __name__ == "__main__":
    main()
