"""PyTorch's side of the step benchmark: one training step (forward, backward, clip, AdamW) of
the config's *ForSequenceClassification (its model_type: bert, distilbert, roberta, xlm-roberta,
electra) with random weights, batch 32, as HF Trainer runs it, timed the same
way as bench/bench_step.cc. Run offline in the golden venv (tools/README.md):

  OMP_NUM_THREADS=1 taskset -c 1 python tools/torch_step_bench.py \
      --config ../shared/data/models/bert-base-cased/config.json \
      --lengths bench/data/mrpc_train_lengths_cased.txt --pad_to 128 --threads 1

--pad_to 128 pads every example to 128 (run_glue.py's default); --pad_to 0 pads each batch to its
longest example (DataCollatorWithPadding). --profile prints where PyTorch's step time goes (the
counterpart of cpuft_bench_step under CPUFT_PROFILE=1).
"""
import argparse
import json
import random
import statistics
import time

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--lengths", help="sequence lengths, one per line, drawn at random per step")
    p.add_argument("--batches", help="each step's sequence lengths, one line per step "
                   "(as cpuft_bench_step --batches: the same batches)")
    p.add_argument("--json", help="write the per-step times and real token counts here")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--pad_to", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", action="store_true",
                   help="run the timed steps under torch.profiler and print where the time goes: "
                   "the operators by self CPU time and the share of the matrix products (the step "
                   "times then include the profiler's own cost; --json records profiled: true)")
    p.add_argument("--bf16", action="store_true",
                   help="forward under torch.autocast('cpu', bfloat16), as HF Trainer's --bf16")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    fields = json.load(open(args.config))
    fields.pop("architectures", None)
    config = AutoConfig.for_model(**fields)
    config.num_labels = 2
    model = AutoModelForSequenceClassification.from_config(config)
    model.train()
    decay = [p for n, p in model.named_parameters() if "bias" not in n and "LayerNorm" not in n]
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=2e-5)
    if bool(args.lengths) == bool(args.batches):
        p.error("give one of --lengths and --batches")
    rng = random.Random(1234)
    if args.batches:
        step_lengths = [[int(x) for x in line.split()] for line in open(args.batches) if line.strip()]
        if len(step_lengths) < args.warmup + args.steps:
            p.error(f"{args.batches} has {len(step_lengths)} batches; need {args.warmup + args.steps}")
    else:
        lengths = [int(x) for x in open(args.lengths).read().split()]
        step_lengths = [[lengths[rng.randrange(len(lengths))] for _ in range(args.batch)]
                        for _ in range(args.warmup + args.steps)]
    times, tokens = [], []
    profiler = None
    for step in range(args.warmup + args.steps):
        if args.profile and step == args.warmup:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            profiler.__enter__()
        batch_lengths = step_lengths[step]
        B = len(batch_lengths)
        T = args.pad_to if args.pad_to > 0 else max(batch_lengths)
        ids = torch.randint(0, config.vocab_size, (B, T))
        mask = torch.zeros(B, T, dtype=torch.long)
        for i, n in enumerate(batch_lengths):
            mask[i, :n] = 1
        labels = torch.randint(0, 2, (B,))
        start = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
            tokens.append(sum(batch_lengths))
    if profiler is not None:
        profiler.__exit__(None, None, None)
        print_profile(profiler, sum(times))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": args.threads, "bf16": args.bf16,
                       "pad_to": args.pad_to, "profiled": args.profile, "step_seconds": times,
                       "real_tokens": tokens}, f)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {len(step_lengths[0])}, "
          f"{'bf16 autocast, ' if args.bf16 else ''}"
          f"{'padded to %d' % args.pad_to if args.pad_to else 'padded to the longest in batch'}: "
          f"median step {statistics.median(times):.3f} s, "
          f"{statistics.median(tokens) / statistics.median(times):.0f} real tokens/s")


# The operators that are matrix products (linear layers and attention's batched products), in
# eager mode and under autocast; their self time is oneDNN's or MKL's kernels.
MATRIX_PRODUCTS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm",
                   "aten::_scaled_dot_product_flash_attention_for_cpu",
                   "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                   "aten::mkldnn_linear", "aten::mkldnn_matmul"}


def print_profile(profiler, timed_seconds):
    """Operators by self CPU time over the timed steps, and the matrix products' share."""
    rows = sorted(profiler.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total_us = sum(e.self_cpu_time_total for e in rows)
    if total_us <= 0:
        print("torch.profiler recorded no operator time")
        return
    products_us = sum(e.self_cpu_time_total for e in rows if e.key in MATRIX_PRODUCTS)
    print(f"torch.profiler over the timed steps ({timed_seconds:.3f} s of steps, "
          f"{total_us / 1e6:.3f} s of operator self time):")
    print(f"{'operator':58s} {'self s':>8s} {'calls':>7s} {'share':>7s}")
    for e in rows[:20]:
        print(f"{e.key[:58]:58s} {e.self_cpu_time_total / 1e6:8.3f} {e.count:7d} "
              f"{100 * e.self_cpu_time_total / total_us:6.1f}%")
    print(f"matrix products ({', '.join(sorted(MATRIX_PRODUCTS & {e.key for e in rows}))}): "
          f"{products_us / 1e6:.3f} s, {100 * products_us / total_us:.1f}% of operator self time")


if __name__ == "__main__":
    main()
