#!/usr/bin/env python3
"""Markdown tables for docs/accuracy.md from runs/acc/results.jsonl (tools/run_accuracy_comparison.sh).

Usage: tools/accuracy_table.py [--bf16] [runs/acc/results.jsonl]   (--bf16: the PRECISION=bf16 runs)

Prints (1) one row per task and seed with both engines' metrics, wall and CPU times and the load
at start, (2) per-task means and standard deviations over the seeds both engines completed, with
the difference, and (3) the standard error of that difference. The last record of each
(engine, task, seed) wins (a re-run replaces an earlier one). Standard library only.
"""
import json
import math
import statistics
import sys

METRICS = {  # task -> (metric keys in the order shown, label)
    "mrpc": (["accuracy", "f1"], "acc / F1"),
    "rte": (["accuracy"], "acc"),
    "sst2": (["accuracy"], "acc"),
    "cola": (["matthews_correlation"], "MCC"),
    "stsb": (["pearson", "spearmanr"], "Pearson / Spearman"),
}


def load(path):
    runs = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if "engine" not in r or r.get("rc") != 0 or "metrics" not in r:
            continue
        runs[(r["engine"], r["task"], r["seed"])] = r
    return runs


def fmt_time(r):
    user = f" ({r['user_s']:.0f} s)" if "user_s" in r else ""
    return f"{r['wall_s']:.0f} s{user}"


def fmt_metrics(r, keys):
    return " / ".join(f"{100 * r['metrics'][k]:.2f}" for k in keys)


def main():
    args = [a for a in sys.argv[1:] if a != "--bf16"]
    path = args[0] if args else "runs/acc/results.jsonl"
    runs = load(path)
    if "--bf16" in sys.argv[1:]:  # the --bf16 runs of both engines, under the usual names
        runs = {(e[:-len("-bf16")], t, s): r for (e, t, s), r in runs.items() if e.endswith("-bf16")}
    else:
        runs = {k: r for k, r in runs.items() if not k[0].endswith("-bf16")}
    tasks = [t for t in METRICS if any(k[1] == t for k in runs)]
    print("| task | epochs | seed | metric | cpuft | HF | cpuft wall (user CPU) | HF wall (user CPU) "
          "| HF / cpuft wall | 1-min load at start (cpuft / HF) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task in tasks:
        keys, label = METRICS[task]
        seeds = sorted({k[2] for k in runs if k[1] == task})
        for seed in seeds:
            c, h = runs.get(("cpuft", task, seed)), runs.get(("hf", task, seed))
            ref = c or h
            cells = [task.upper(), f"{ref['epochs']:g}", str(seed), label,
                     fmt_metrics(c, keys) if c else "—", fmt_metrics(h, keys) if h else "—",
                     fmt_time(c) if c else "—", fmt_time(h) if h else "—",
                     f"{h['wall_s'] / c['wall_s']:.2f}" if c and h else "—",
                     f"{c.get('load_before', '?').split()[0] if c else '—'} / "
                     f"{h.get('load_before', '?').split()[0] if h else '—'}"]
            print("| " + " | ".join(cells) + " |")
    print()
    print("| task | seeds (both engines) | metric | cpuft mean (sd) | HF mean (sd) | cpuft − HF "
          "| SE of the difference |")
    print("|---|---|---|---|---|---|---|")
    for task in tasks:
        keys, _ = METRICS[task]
        seeds = sorted(s for s in {k[2] for k in runs if k[1] == task}
                       if ("cpuft", task, s) in runs and ("hf", task, s) in runs)
        if not seeds:
            continue
        for key in keys:
            a = [100 * runs[("cpuft", task, s)]["metrics"][key] for s in seeds]
            b = [100 * runs[("hf", task, s)]["metrics"][key] for s in seeds]
            sd = lambda v: statistics.stdev(v) if len(v) > 1 else float("nan")
            se = math.sqrt(sd(a) ** 2 / len(a) + sd(b) ** 2 / len(b)) if len(seeds) > 1 else float("nan")
            print(f"| {task.upper()} | {', '.join(map(str, seeds))} | {key} | "
                  f"{statistics.mean(a):.2f} ({sd(a):.2f}) | {statistics.mean(b):.2f} ({sd(b):.2f}) | "
                  f"{statistics.mean(a) - statistics.mean(b):+.2f} | {se:.2f} |")


if __name__ == "__main__":
    main()
