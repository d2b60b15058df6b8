#!/usr/bin/env python3
"""Write the optimizer and schedule fixtures of src/optim/optim_test.cc from transformers + torch.

tests/fixtures/lr_schedules.json
    For each case (lr_scheduler_type, lr_scheduler_kwargs, learning rate, warmup, total steps):
    the learning rate of every optimizer step 0 .. total + 2, read from the optimizer the way the
    Trainer runs it: transformers.get_scheduler(...) on a torch optimizer, then per step
    param_groups[0]["lr"] (the rate this step uses), optimizer.step(), scheduler.step().
tests/fixtures/sgd_steps.json
    torch.optim.SGD as HF Trainer builds it (Trainer.get_optimizer_cls_and_kwargs on the fields
    of TrainingArguments it reads: optim="sgd", optim_args, learning_rate, adam_*; then the decay
    group with weight_decay and the no-decay group with 0, as Trainer.create_optimizer does): a decaying tensor "w" and a non-decaying "b" of 64 elements each, 4 steps
    with given learning rates and gradients; the values after every step.

Float32 values are written as the shortest decimal that reads back as the same float.

Offline only, never in CI (tools/README.md has the venv):
  python tools/make_optim_fixtures.py --out tests/fixtures
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from transformers import Trainer, get_scheduler
from transformers.training_args import OptimizerNames

COMMAND = "python tools/make_optim_fixtures.py --out tests/fixtures"
GENERATOR = (
    f"tools/make_optim_fixtures.py (torch {torch.__version__}, transformers "
    f"{transformers.__version__})"
)

# (type, kwargs, lr, warmup, total): warmup 0 and > 0, totals that cycles do not divide.
SCHEDULES = [
    ("linear", {}, 1e-3, 0, 17),
    ("linear", {}, 5e-5, 3, 17),
    ("cosine", {}, 1e-3, 0, 17),
    ("cosine", {}, 2e-5, 4, 23),
    ("cosine", {"num_cycles": 1.25}, 2e-5, 4, 23),
    ("constant", {}, 3e-4, 0, 9),
    ("constant_with_warmup", {}, 3e-4, 4, 13),
    ("cosine_with_restarts", {}, 1e-3, 0, 17),
    ("cosine_with_restarts", {}, 1e-3, 3, 22),
    ("cosine_with_restarts", {"num_cycles": 3}, 1e-3, 0, 20),
    ("cosine_with_restarts", {"num_cycles": 3}, 1e-3, 5, 27),
    ("polynomial", {}, 1e-3, 0, 17),
    ("polynomial", {}, 1e-3, 4, 19),
    ("polynomial", {"lr_end": 1e-5, "power": 2.0}, 1e-3, 3, 20),
    ("polynomial", {"power": 0.5}, 5e-5, 0, 11),
    ("inverse_sqrt", {}, 1e-3, 0, 30),
    ("inverse_sqrt", {}, 1e-3, 6, 30),
    ("inverse_sqrt", {"timescale": 4}, 1e-3, 6, 30),
    ("inverse_sqrt", {"timescale": 7}, 1e-3, 0, 30),
    ("cosine_with_min_lr", {"min_lr": 1e-5}, 1e-3, 0, 17),
    ("cosine_with_min_lr", {"min_lr_rate": 0.1}, 1e-3, 4, 21),
    ("cosine_with_min_lr", {"min_lr_rate": 0.05, "num_cycles": 1.5}, 2e-5, 3, 25),
    ("cosine_warmup_with_min_lr", {"min_lr_rate": 0.1}, 1e-3, 4, 21),
    ("cosine_warmup_with_min_lr", {"min_lr": 1e-5, "warmup_lr_rate": 0.2}, 1e-3, 5, 19),
    ("cosine_warmup_with_min_lr", {"min_lr_rate": 0.0}, 1e-3, 0, 15),
    ("warmup_stable_decay", {"num_decay_steps": 5}, 1e-3, 3, 17),
    ("warmup_stable_decay", {"num_decay_steps": 6, "min_lr_ratio": 0.1, "warmup_type": "cosine",
                             "decay_type": "linear"}, 1e-3, 4, 18),
    ("warmup_stable_decay", {"num_decay_steps": 7, "num_stable_steps": 4, "warmup_type": "1-sqrt",
                             "decay_type": "1-sqrt"}, 1e-3, 5, 20),
    ("warmup_stable_decay", {"num_decay_steps": 8, "decay_type": "cosine", "num_cycles": 0.75},
     1e-3, 0, 16),
]

# (optim_args, weight_decay)
SGD_CASES = [
    ("", 0.0),
    ("", 0.01),
    ("momentum=0.9", 0.01),
    ("momentum=0.9, nesterov=True", 0.01),
    ("momentum=0.8,dampening=0.25", 0.0),
    ("momentum=0.9,dampening=0.1,weight_decay=0.5", 0.03),
]
SGD_LRS = [0.0, 0.1, 0.05, 0.02]  # the first step of a warmup runs with lr 0
N = 64


def f32_list(t: torch.Tensor) -> list[float]:
    return [float(np.float32(x)) for x in t.detach().reshape(-1).tolist()]


def schedule_cases() -> list[dict]:
    cases = []
    for name, kwargs, lr, warmup, total in SCHEDULES:
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=lr)
        sched = get_scheduler(name, opt, num_warmup_steps=warmup, num_training_steps=total,
                              scheduler_specific_kwargs=dict(kwargs))
        lrs = []
        for _ in range(total + 3):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        cases.append({"type": name, "kwargs": kwargs, "learning_rate": lr,
                      "warmup_steps": warmup, "total_steps": total, "lrs": lrs})
    return cases


def sgd_cases() -> list[dict]:
    cases = []
    gen = torch.Generator().manual_seed(1234)
    for optim_args, wd in SGD_CASES:
        # The fields get_optimizer_cls_and_kwargs reads (a TrainingArguments would need accelerate).
        args = SimpleNamespace(optim=OptimizerNames("sgd"), optim_args=optim_args or None,
                               learning_rate=0.1, adam_beta1=0.9, adam_beta2=0.999,
                               adam_epsilon=1e-8, weight_decay=wd)
        cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args)
        assert cls is torch.optim.SGD, cls
        w = torch.nn.Parameter(torch.randn(N, generator=gen))
        b = torch.nn.Parameter(torch.randn(N, generator=gen))
        init = {"w": f32_list(w), "b": f32_list(b)}
        opt = cls([{"params": [w], "weight_decay": args.weight_decay},
                   {"params": [b], "weight_decay": 0.0}], **kwargs)
        steps = []
        for lr in SGD_LRS:
            for group in opt.param_groups:
                group["lr"] = lr
            gw = torch.randn(N, generator=gen)
            gb = torch.randn(N, generator=gen)
            w.grad, b.grad = gw.clone(), gb.clone()
            opt.step()
            steps.append({"lr": lr, "grad": {"w": f32_list(gw), "b": f32_list(gb)},
                          "after": {"w": f32_list(w), "b": f32_list(b)}})
        d = opt.defaults
        cases.append({"optim_args": optim_args, "weight_decay": wd,
                      "torch_kwargs": {k: d[k] for k in ("momentum", "dampening", "nesterov",
                                                           "weight_decay")},
                      "init": init, "steps": steps})
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    torch.set_num_threads(1)
    header = {"generator": GENERATOR, "command": COMMAND}
    (out / "lr_schedules.json").write_text(
        json.dumps({**header, "cases": schedule_cases()}, indent=1) + "\n")
    (out / "sgd_steps.json").write_text(
        json.dumps({**header, "cases": sgd_cases()}) + "\n")
    print(f"wrote {out / 'lr_schedules.json'} ({len(SCHEDULES)} schedules) and "
          f"{out / 'sgd_steps.json'} ({len(SGD_CASES)} SGD cases)")


if __name__ == "__main__":
    main()
