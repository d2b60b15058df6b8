#!/usr/bin/env python3
"""cpuft and PyTorch side by side, in one run, on this machine (docs/performance.md).

Steps: for each model shape (HF config.json, random weights) and fp32 / bf16, one training step
(forward, backward, clip, AdamW) on the very same batches of MRPC-like lengths:
  cpuft      cpuft_bench_step, packed (no padding), bf16 = cpuft train --bf16
  PyTorch    tools/torch_step_bench.py: HF's *ForSequenceClassification as Trainer runs it,
             padded to 128 (run_glue.py's default) and padded per batch (DataCollatorWithPadding);
             bf16 = torch.autocast('cpu', bfloat16), as Trainer's --bf16
Medians of --steps timed steps after --warmup. Model FLOPs count real tokens only (bench_step's
formula, the same for both sides since the batches are the same); MFU is against the peaks
cpuft_bench_step measures in the same run (fp32 FMA; bf16: AMX tiles where the CPU has them,
else AVX512_BF16 dot products).

End to end (--end_to_end MODEL_DIR, optional): fine-tuning on a GLUE task, each run a child
process measured by wait4 (wall, user+system CPU seconds, peak RSS):
  cpuft train fp32 and --bf16 (packed batches),
  HF Trainer as the reference stack runs it (fp32, every example padded to 128),
  HF Trainer in its best CPU configuration (bf16 autocast, dynamic padding, group_by_length),
  tools/hf_glue_baseline.py being the HF side (run_glue.py's pipeline on the GLUE TSV files).
--cpuft_only keeps cpuft's two runs (HF Trainer's BERT-base runs take hours on 2 cores).

Usage (the golden venv has torch + transformers, tools/README.md):
  /work/venv-golden/bin/python tools/side_by_side.py \\
      --cpuft_bench build/release/bench/cpuft_bench_step --threads 2 \\
      --configs bench/data/bert-base-cased-config.json path/to/all-MiniLM-L6-v2/config.json \\
      [--end_to_end path/to/model_dir --cpuft build/release/apps/cpuft --data_dir data/glue] \\
      --out runs/side_by_side
Writes OUT/side_by_side.md (the tables, with the machine, versions and commands) and
OUT/side_by_side.json (every raw figure).
"""
import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            info = {}
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
        flags = info.get("flags", "").split()
        isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
        return (f"{info.get('model name', '?')} (family {info.get('cpu family', '?')} model "
                f"{info.get('model', '?')}; {' '.join(isa)})")
    except OSError:
        return platform.processor() or "unknown CPU"


def commit():
    if os.environ.get("CPUFT_COMMIT"):
        return os.environ["CPUFT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return out or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measured(cmd, env=None, log=None):
    """Runs cmd as a child; returns (returncode, wall s, user+sys CPU s, peak RSS GB)."""
    start = time.perf_counter()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if log:
        out.close()
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1e6


def write_batches(path, lengths_path, batch, count, seed=1234):
    lengths = [int(x) for x in open(lengths_path).read().split()]
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(count):
            f.write(" ".join(str(lengths[rng.randrange(len(lengths))]) for _ in range(batch)) + "\n")


def run_or_die(cmd, env, log):
    rc, wall, _, _ = measured(cmd, env, log)
    if rc != 0:
        sys.stderr.write(f"error: {' '.join(cmd)} exited {rc}; last lines of {log}:\n")
        sys.stderr.write("".join(open(log).readlines()[-8:]))
        sys.exit(1)
    return wall


def step_runs(args, out):
    batches = os.path.join(out, "batches.txt")
    write_batches(batches, args.lengths, args.batch, args.warmup + args.steps)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    rows = []
    for config in args.configs:
        name = os.path.basename(os.path.dirname(os.path.abspath(config)))
        if os.path.basename(config) != "config.json":
            name = os.path.basename(config).replace("-config.json", "").replace(".json", "")
        for precision in ("fp32", "bf16"):
            tag = f"{name}-{precision}"
            bf16 = ["--bf16"] if precision == "bf16" else []
            cj = os.path.join(out, f"cpuft-{tag}.json")
            print(f"[{tag}] cpuft_bench_step ...", flush=True)
            run_or_die([args.cpuft_bench, "--config", config, "--batches", batches, "--steps",
                        str(args.steps), "--warmup", str(args.warmup), "--json", cj] + bf16,
                       env, os.path.join(out, f"cpuft-{tag}.log"))
            c = json.load(open(cj))
            torch_side = {}
            for pad in (128, 0):
                tj = os.path.join(out, f"torch-{tag}-pad{pad}.json")
                print(f"[{tag}] PyTorch, {'padded to 128' if pad else 'padded per batch'} ...",
                      flush=True)
                run_or_die([sys.executable, os.path.join(HERE, "torch_step_bench.py"), "--config",
                            config, "--batches", batches, "--steps", str(args.steps), "--warmup",
                            str(args.warmup), "--pad_to", str(pad), "--threads",
                            str(args.threads), "--json", tj] + bf16,
                           env, os.path.join(out, f"torch-{tag}-pad{pad}.log"))
                torch_side[pad] = json.load(open(tj))
            flops = statistics.median(c["model_flops"])
            if precision == "fp32":
                peak = c["fp32_fma_peak_gflops"]
                peak_name = "fp32 FMA"
            elif c["amx_bf16_peak_gflops"] > 0:
                peak, peak_name = c["amx_bf16_peak_gflops"], "AMX-BF16 tiles"
            else:
                peak, peak_name = c["bf16_dot_peak_gflops"], "AVX512_BF16 dot"
            cpuft_t = statistics.median(c["step_seconds"])
            t128 = statistics.median(torch_side[128]["step_seconds"])
            tdyn = statistics.median(torch_side[0]["step_seconds"])

            def mfu(t):
                return 100.0 * flops / t / 1e9 / peak if peak > 0 else None

            rows.append(dict(model=name, precision=precision, cpuft_s=cpuft_t, torch_pad128_s=t128,
                             torch_dynamic_s=tdyn, ratio_pad128=t128 / cpuft_t,
                             ratio_dynamic=tdyn / cpuft_t, cpuft_mfu=mfu(cpuft_t),
                             torch_dynamic_mfu=mfu(tdyn), peak_gflops=peak, peak_name=peak_name,
                             model_gflop_per_step=flops / 1e9, torch=torch_side[0]["torch"],
                             cpuft_raw=c, torch_raw=torch_side))
    return rows


def end_to_end(args, out):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    common_hf = [sys.executable, os.path.join(HERE, "hf_glue_baseline.py"), "--model_dir",
                 args.end_to_end, "--task", args.task, "--data_dir", args.data_dir, "--seed", "42",
                 "--epochs", str(args.epochs), "--lr", "2e-5", "--batch", "32",
                 "--warmup_ratio", "0", "--max_seq_length", "128", "--threads", str(args.threads)]
    runs = [
        ("cpuft fp32, packed", "cpuft", []),
        ("cpuft bf16, packed", "cpuft", ["--bf16"]),
        ("HF Trainer fp32, padded to 128 (the reference stack)", "hf", ["--pad_to_max_length"]),
        ("HF Trainer bf16 autocast, dynamic padding, group_by_length (HF's best on CPU)", "hf",
         ["--bf16", "--group_by_length"]),
    ]
    if args.cpuft_only:
        runs = runs[:2]
    rows = []
    for i, (label, engine, extra) in enumerate(runs):
        log = os.path.join(out, f"e2e-{i}.log")
        result = os.path.join(out, f"e2e-{i}.json")
        if engine == "cpuft":
            cmd = [args.cpuft, "train", "--model_name_or_path", args.end_to_end, "--task_name",
                   args.task, "--data_dir", args.data_dir, "--do_train", "--do_eval",
                   "--num_train_epochs", str(args.epochs), "--per_device_train_batch_size", "32",
                   "--learning_rate", "2e-5", "--seed", "42", "--max_seq_length", "128",
                   "--save_strategy", "no", "--output_dir", os.path.join(out, f"e2e-{i}"),
                   "--overwrite_output_dir"] + extra
        else:
            cmd = common_hf + ["--out", result,
                               "--output_dir", os.path.join(out, f"e2e-{i}")] + extra
        print(f"[end to end] {label} ...", flush=True)
        rc, wall, cpu, rss = measured(cmd, env, log)
        if rc != 0:
            sys.stderr.write(f"error: {label} exited {rc}; last lines of {log}:\n")
            sys.stderr.write("".join(open(log).readlines()[-8:]))
            sys.exit(1)
        if engine == "cpuft":
            metrics = json.load(open(os.path.join(out, f"e2e-{i}", "eval_results.json")))
            accuracy = metrics.get("eval_accuracy")
        else:
            accuracy = json.loads(open(result).read().splitlines()[-1])["metrics"].get("accuracy")
        rows.append(dict(run=label, wall_s=wall, cpu_s=cpu, peak_rss_gb=rss, accuracy=accuracy,
                         command=" ".join(cmd)))
    return rows


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpuft_bench", default=os.path.join(REPO, "build/release/bench/cpuft_bench_step"))
    ap.add_argument("--configs", nargs="+",
                    default=[os.path.join(REPO, "bench/data/bert-base-cased-config.json")])
    ap.add_argument("--lengths", default=os.path.join(REPO, "bench/data/mrpc_train_lengths_cased.txt"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--skip_steps", action="store_true", help="only the end-to-end runs")
    ap.add_argument("--end_to_end", metavar="MODEL_DIR",
                    help="also fine-tune this HF model folder with both (see the docstring)")
    ap.add_argument("--cpuft_only", action="store_true",
                    help="end to end: only cpuft's runs (HF Trainer's BERT-base runs take hours "
                         "on a small machine)")
    ap.add_argument("--cpuft", default=os.path.join(REPO, "build/release/apps/cpuft"))
    ap.add_argument("--data_dir", default=os.path.join(REPO, "data/glue"))
    ap.add_argument("--task", default="mrpc")
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--out", default=os.path.join(
        REPO, "runs", "side_by_side-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    header = [
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; {args.threads} threads for both",
        f"- cpuft commit {commit()}; Python {platform.python_version()}",
        f"- date {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')};"
        f" load average before: {os.getloadavg()[0]:.2f}",
        f"- command: {' '.join(sys.argv)}",
    ]
    lines = ["# cpuft and PyTorch side by side", ""] + header + [""]
    record = {"header": header}
    if not args.skip_steps:
        rows = step_runs(args, args.out)
        record["steps"] = rows
        lines += [f"## One training step, batch {args.batch} of MRPC lengths, median of "
                  f"{args.steps} (torch {rows[0]['torch']})", "",
                  "| model | precision | cpuft packed | PyTorch padded to 128 | PyTorch padded "
                  "per batch | cpuft vs pad 128 | cpuft vs per batch | cpuft MFU | PyTorch MFU "
                  "(per batch) | peak |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(
                f"| {r['model']} | {r['precision']} | {r['cpuft_s']:.3f} s | "
                f"{r['torch_pad128_s']:.3f} s | {r['torch_dynamic_s']:.3f} s | "
                f"{r['ratio_pad128']:.2f}x | {r['ratio_dynamic']:.2f}x | "
                f"{fmt(r['cpuft_mfu'], '.0f')}% | {fmt(r['torch_dynamic_mfu'], '.0f')}% | "
                f"{r['peak_name']} {r['peak_gflops']:.0f} GFLOP/s |")
        lines.append("")
    if args.end_to_end:
        rows = end_to_end(args, args.out)
        record["end_to_end"] = rows
        ref = rows[2] if len(rows) > 2 else None  # the reference stack's run
        lines += [f"## End to end: {args.task}, {args.epochs:g} epochs, "
                  f"{os.path.basename(os.path.normpath(args.end_to_end))}, batch 32, lr 2e-5",
                  "", "| run | wall | CPU seconds | peak RSS | accuracy | wall vs reference | "
                  "peak RSS vs reference |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            versus = (f"{ref['wall_s'] / r['wall_s']:.2f}x faster | "
                      f"{100 * r['peak_rss_gb'] / ref['peak_rss_gb']:.0f}% |") if ref else "n/a | n/a |"
            lines.append(f"| {r['run']} | {r['wall_s']:.1f} s | {r['cpu_s']:.0f} | "
                         f"{r['peak_rss_gb']:.2f} GB | {fmt(r['accuracy'], '.4f')} | " + versus)
        lines.append("")
    text = "\n".join(lines)
    print("\n" + text)
    with open(os.path.join(args.out, "side_by_side.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "side_by_side.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
