#!/usr/bin/env python3
"""Summarise a cpuft per-rank timeline (cpuft train --timeline_dir DIR; chrome://tracing JSON).

Usage: tools/timeline_summary.py DIR/timeline-rank0.json [--skip 2]

Per optimizer step: the backward pass's duration, how many gradient buckets were launched, how
many had completed before backward ended (hidden under compute), the time finish() waited for the
rest (exposed communication), and the optimizer. The first --skip steps (warm-up) are left out of
the totals. Standard library only.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("timeline")
    ap.add_argument("--skip", type=int, default=2, help="warm-up steps left out of the totals")
    args = ap.parse_args()
    data = json.load(open(args.timeline))
    events = data["traceEvents"] if isinstance(data, dict) else data
    compute = [e for e in events if e.get("cat") == "compute"]
    buckets = [e for e in events if e.get("name") == "allreduce"]
    finishes = {e["args"]["v"]: e for e in events if e.get("name") == "finish"}
    # The last backward of each optimizer step is the one followed by the optimizer.
    steps = []
    for i, e in enumerate(compute):
        if e["name"] == "optimizer":
            back = next(c for c in reversed(compute[:i]) if c["name"] == "backward")
            steps.append((e["args"]["v"], back, e))
    print(f"{'step':>5} {'backward ms':>12} {'buckets':>8} {'done in backward':>17} "
          f"{'finish() ms':>12} {'optimizer ms':>13}")
    totals = [0.0, 0, 0, 0.0, 0.0]
    counted = 0
    for step, back, opt in steps:
        end = back["ts"] + back["dur"]
        mine = [b for b in buckets if back["ts"] <= b["ts"] <= opt["ts"]]
        hidden = sum(1 for b in mine if b["ts"] + b["dur"] <= end)
        fin = finishes.get(step, {"dur": 0.0})["dur"]
        print(f"{step:>5} {back['dur'] / 1e3:>12.1f} {len(mine):>8} {hidden:>17} "
              f"{fin / 1e3:>12.1f} {opt['dur'] / 1e3:>13.1f}")
        if step >= args.skip:
            counted += 1
            for k, v in enumerate([back["dur"] / 1e3, len(mine), hidden, fin / 1e3,
                                   opt["dur"] / 1e3]):
                totals[k] += v
    if counted:
        print(f"mean over steps >= {args.skip}: backward {totals[0] / counted:.1f} ms, "
              f"{totals[2]}/{totals[1]} buckets done during backward, "
              f"finish() {totals[3] / counted:.1f} ms, optimizer {totals[4] / counted:.1f} ms")


if __name__ == "__main__":
    main()
