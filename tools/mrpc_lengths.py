"""Writes the token length of every pair of a GLUE TSV, as bench_step's batch-length distribution.

Run offline in the golden venv (see tools/README.md):
  python tools/mrpc_lengths.py --data ../shared/data/glue/MRPC/train.tsv \
      --tokenizer ../shared/data/models/bert-base-cased --out bench/data/mrpc_train_lengths_cased.txt
  python tools/mrpc_lengths.py --data data/glue/STS-B/train.tsv --columns 7 8 \
      --tokenizer ../shared/data/models/bert-base-cased --out bench/data/stsb_train_lengths_cased.txt
Lengths are [CLS] a [SEP] b [SEP] with longest_first truncation to 128, as run_glue.py encodes them.
--columns: the two sentence columns (MRPC's 3 and 4 by default; STS-B's 7 and 8).
"""
import argparse

from transformers import BertTokenizerFast


def read_pairs(path, a=3, b=4):
    with open(path, encoding="utf-8-sig") as f:  # MRPC starts with a UTF-8 BOM
        lines = f.read().split("\n")
    rows = [line.split("\t") for line in lines[1:] if line]  # tabs only: no CSV quoting
    return [(r[a], r[b]) for r in rows]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--columns", type=int, nargs=2, default=[3, 4])
    args = parser.parse_args()
    tokenizer = BertTokenizerFast.from_pretrained(args.tokenizer)
    pairs = read_pairs(args.data, *args.columns)
    encoded = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first",
                        max_length=args.max_length)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    with open(args.out, "w") as f:
        f.write("\n".join(str(n) for n in lengths) + "\n")
    print(f"{len(lengths)} pairs, mean length {sum(lengths) / len(lengths):.1f}, max {max(lengths)}")


if __name__ == "__main__":
    main()
