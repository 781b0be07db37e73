"""Runs a torch.optim.lr_scheduler schedule and prints every step's lr and momentum as JSON.

usage: schedule.py SPEC_JSON
  SPEC_JSON: {"optimizer": "sgd" | "adam" | "adamw" | "adagrad", "optimizer_args": {...},
              "lrs": [lr of group 0, lr of group 1, ...], "steps": N,
              "scheduler": "OneCycleLR" | "CosineAnnealingLR" | "WarmupCosine" | "StepLR",
              "args": {keyword arguments of the scheduler}}
  WarmupCosine = SequentialLR([LinearLR(start_factor, total_iters=warmup_steps),
                               CosineAnnealingLR(T_max, eta_min)], milestones=[warmup_steps]),
  args {"start_factor", "warmup_steps", "T_max", "eta_min"}.
Prints {"lr": [[group lrs] for steps 0..N], "momentum": [[group momentum or beta1] ...]}, where
step s is the state after s calls of scheduler.step() (each after an optimizer.step()).
"""
import json
import sys
import warnings

import torch
from torch.optim import lr_scheduler

warnings.filterwarnings("ignore")  # lr_scheduler's step(epoch) deprecation notice (SequentialLR)


def make_scheduler(opt, name, args):
    if name == "WarmupCosine":
        warmup = lr_scheduler.LinearLR(opt, start_factor=args["start_factor"], total_iters=args["warmup_steps"])
        cosine = lr_scheduler.CosineAnnealingLR(opt, T_max=args["T_max"], eta_min=args["eta_min"])
        return lr_scheduler.SequentialLR(opt, [warmup, cosine], milestones=[args["warmup_steps"]])
    return getattr(lr_scheduler, name)(opt, **args)


def momentum(group):
    if "betas" in group:
        return group["betas"][0]
    return group.get("momentum")


def main():
    spec = json.loads(sys.argv[1])
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in spec["lrs"]]
    optim = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
             "adagrad": torch.optim.Adagrad}[spec["optimizer"]]
    opt = optim(groups, **spec.get("optimizer_args", {}))
    sched = make_scheduler(opt, spec["scheduler"], spec["args"])
    out = {"lr": [], "momentum": []}
    for step in range(spec["steps"] + 1):
        if step > 0:
            opt.step()  # no gradients: parameters stay, but the scheduler sees the usual order
            sched.step()
        out["lr"].append([g["lr"] for g in opt.param_groups])
        out["momentum"].append([momentum(g) for g in opt.param_groups])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
