#!/usr/bin/env python3
"""The reference stack's table, modelled for cpuft (docs/scaling.md, "The reference's table").

The reference (run_glue.py + PyTorch + IPEX + oneCCL under mpirun, fp32, every example padded to
128) fine-tuned BERT-base-cased in 7m46s / 4m39s / 2m36s on MRPC and 11h22m / 6h38m / 3h51m on QQP
on 1 / 2 / 4 nodes of 32 Xeon cores joined by 25 Gbit/s. This script models cpuft on the same
setting from what can be measured:

  1. this machine's BERT-base step (`cpuft bench --scaling`, batch 32 per host, MRPC's lengths),
  2. a measured step of a bigger node of the same CPU (--node_step_fp32 / --node_step_bf16, e.g.
     the 16-core figures of docs/performance.md), whose ratio to (1) is the host speed-up,
  3. how a 32-core node relates to that node (--node_scale: 1 = no faster, 2 = twice as fast),
  4. the validated link model of `cpuft bench --scaling` (ring all-reduce, buckets overlapped
     with backward, the sparse word-table exchange as `cpuft train` sends it) at --link_gbit.

For each precision it runs the bench on MRPC's lengths once to measure (1), then on MRPC's and
the QQP stand-in's lengths (bench/data/stsb_train_lengths_cased.txt: QQP's 363,846 pairs with
STS-B's short-pair lengths, docs/performance.md) with every host speed-up, and prints one markdown
table. Times are steps x modelled step: start-up, tokenization and evaluation are left out.

Usage:
  tools/reference_table.py [--cpuft build/release/apps/cpuft] [--threads 2] [--steps 3]
      [--node_step_fp32 0.932 --node_step_bf16 0.443 --node_label "16-core Xeon (model 207)"]
      [--node_scale 1,1.67,2] [--link_gbit 22.5] [--out runs/reference_table.md]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

MRPC_SAMPLES = 3668
QQP_SAMPLES = 363846
# Distinct tokens in a batch of 32 train pairs, median over 200 random batches, counted with
# all-MiniLM-L6-v2's tokenizer (the only BERT vocabulary here; bert-base-cased's is of the same
# size): MRPC 581 (518-657), STS-B 369 (285-470). What one host sends of the word table.
SPARSE_ROWS = {"mrpc": 581, "qqp": 369}
REFERENCE = {"mrpc": ["7m46s", "4m39s", "2m36s"], "qqp": ["11h22m", "6h38m", "3h51m"]}
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                 r"\s+([\d.]+)\s+(\d+)\s+\S+\s*$")


def reference_style(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    minutes = (seconds + 30) // 60
    return f"{minutes // 60}h{minutes % 60:02d}m"


def bench(args, precision, lengths, samples, sparse_rows, speeds, hosts, exchange="float32"):
    cmd = [args.cpuft, "bench", "--scaling", "--config", args.config, "--lengths", lengths,
           "--batch", "32", "--steps", str(args.steps), "--warmup", "1",
           "--hosts", ",".join(map(str, hosts)), "--link_gbit", str(args.link_gbit),
           "--sparse_rows", str(sparse_rows), "--train_samples", str(samples), "--epochs", "3",
           "--host_speed", ",".join(f"{s:.6g}" for s in speeds),
           "--gradient_exchange_dtype", exchange]
    if precision == "bf16":
        cmd.append("--bf16")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    measured = float(re.search(r"^\(a\) one step, median of \d+: ([\d.]+) s", out, re.M).group(1))
    tables, current = [], None
    for line in out.splitlines():
        if line.startswith("link "):
            current = {}
            tables.append(current)
        elif current is not None and (m := ROW.match(line)):
            current[int(m.group(1))] = dict(step=float(m.group(3)), speedup=float(m.group(4)),
                                            exposed=float(m.group(7)), steps=int(m.group(9)))
    if len(tables) != len(speeds):
        sys.exit(f"reference_table: expected {len(speeds)} tables from the bench, got {len(tables)}")
    shown = [os.path.relpath(c, REPO) if os.path.isabs(c) and c.startswith(REPO) else c for c in cmd]
    return measured, tables, " ".join(shown)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpuft", default=os.path.join(REPO, "build/release/apps/cpuft"))
    ap.add_argument("--config", default=os.path.join(REPO, "bench/data/bert-base-cased-config.json"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--node_step_fp32", type=float, default=0.932)
    ap.add_argument("--node_step_bf16", type=float, default=0.443)
    ap.add_argument("--node_label", default="the 16-core Xeon (family 6 model 207) of "
                    "docs/performance.md, 2026-12-04")
    ap.add_argument("--node_scale", default="1,1.67,2")
    ap.add_argument("--link_gbit", type=float, default=22.5)
    ap.add_argument("--out", default=os.path.join(REPO, "runs/reference_table.md"))
    args = ap.parse_args()
    scales = [float(s) for s in args.node_scale.split(",")]
    hosts = [1, 2, 4]
    mrpc_lengths = os.path.join(REPO, "bench/data/mrpc_train_lengths_cased.txt")
    qqp_lengths = os.path.join(REPO, "bench/data/stsb_train_lengths_cased.txt")

    lines = []
    commands = []
    measured_here = {}
    for precision, node_step, exchange in (("fp32", args.node_step_fp32, "float32"),
                                           ("bf16", args.node_step_bf16, "float32"),
                                           ("bf16", args.node_step_bf16, "bfloat16")):
        if precision not in measured_here:
            measured_here[precision], _, cmd = bench(args, precision, mrpc_lengths, MRPC_SAMPLES,
                                                     SPARSE_ROWS["mrpc"], [1], [1])
            commands.append(cmd)
        here = measured_here[precision]
        speeds = [here / node_step * s for s in scales]
        results = {}
        for task, lengths, samples in (("mrpc", mrpc_lengths, MRPC_SAMPLES),
                                       ("qqp", qqp_lengths, QQP_SAMPLES)):
            _, tables, cmd = bench(args, precision, lengths, samples, SPARSE_ROWS[task], speeds,
                                   hosts, exchange)
            results[task] = tables
            commands.append(cmd)
        for i, scale in enumerate(scales):
            cells = []
            for task in ("mrpc", "qqp"):
                table = results[task][i]
                times = [table[h]["steps"] * table[h]["step"] for h in hosts]
                cells.append(" / ".join(reference_style(t) for t in times))
                cells.append(f"{times[0] / times[2]:.2f}x")
                cells.append(f"{100 * table[4]['exposed'] / table[4]['step']:.0f}%")
            label = precision + (", bf16 exchange" if exchange == "bfloat16" else "")
            lines.append(f"| {label} | {here:.3f} s | {scale:g} x the node: "
                         f"{results['mrpc'][i][1]['step']:.3f} s | " + " | ".join(cells) + " |")

    header = [
        f"Modelled by tools/reference_table.py, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"Node step measured on {args.node_label}: fp32 {args.node_step_fp32} s, bf16 "
        f"{args.node_step_bf16} s (BERT-base, batch 32 of MRPC lengths). Link {args.link_gbit} "
        "Gbit/s goodput, 30 us per message, ring all-reduce, one rank per node.",
        "",
        f"| precision | step here ({args.threads} threads) | modelled 32-core node step | MRPC 3 epochs, 1 / 2 / 4 nodes | "
        "1 -> 4 | exposed at 4 | QQP-sized 3 epochs, 1 / 2 / 4 nodes | 1 -> 4 | exposed at 4 |",
        "|---|---|---|---|---|---|---|---|---|",
        "| reference stack (fp32, pad 128) | | measured | " + " / ".join(REFERENCE["mrpc"]) +
        " | 2.99x | | " + " / ".join(REFERENCE["qqp"]) + " | 2.95x | |",
    ]
    text = "\n".join(header + lines + ["", "Commands:"] + [f"    {c}" for c in commands]) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
