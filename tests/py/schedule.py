"""Runs a torch.optim.lr_scheduler schedule and prints every step's lr and momentum as JSON.

usage: schedule.py SPEC_JSON
  SPEC_JSON: {"optimizer": "sgd" | "adam" | "adamw" | "adagrad", "optimizer_args": {...},
              "lrs": [lr of group 0, lr of group 1, ...], "steps": N,
              "scheduler": a torch.optim.lr_scheduler class name | "WarmupCosine" | "Warmup" |
                           "transformers",
              "args": {keyword arguments of the scheduler}}
  WarmupCosine = SequentialLR([LinearLR(start_factor, total_iters=warmup_steps),
                               CosineAnnealingLR(T_max, eta_min)], milestones=[warmup_steps]),
  args {"start_factor", "warmup_steps", "T_max", "eta_min"}.
  Warmup = the same with any main scheduler: args {"start_factor", "warmup_steps", "main": class
  name, "main_args": {...}} (torchvision's classification reference).
  transformers = LambdaLR with one of transformers' lambdas, args {"schedule": "linear" |
  "polynomial" | "cosine_with_restarts" | "constant", "num_warmup_steps", "num_training_steps",
  and "lr_end", "power" / "num_cycles"}. transformers is not packaged for Debian: the lambdas are
  re-derived from src/transformers/optimization.py at huggingface/transformers
  005edacb6b5dabbf0843e92c6623de9e07ca6241 (_get_linear_schedule_with_warmup_lr_lambda,
  _get_polynomial_decay_schedule_with_warmup_lr_lambda with lr_init = optimizer.defaults["lr"],
  _get_cosine_with_hard_restarts_schedule_with_warmup_lr_lambda,
  _get_constant_schedule_with_warmup_lr_lambda).
Prints {"lr": [[group lrs] for steps 0..N], "momentum": [[group momentum or beta1] ...]}, where
step s is the state after s calls of scheduler.step() (each after an optimizer.step()).
"""
import json
import math
import sys
import warnings

import torch
from torch.optim import lr_scheduler

warnings.filterwarnings("ignore")  # lr_scheduler's step(epoch) deprecation notice (SequentialLR)


def transformers_lambda(opt, schedule, num_warmup_steps, num_training_steps, **kw):
    w, total = num_warmup_steps, num_training_steps

    def warmup(step):
        return float(step) / float(max(1, w))

    if schedule == "constant":
        return lambda step: float(step) / float(max(1.0, w)) if step < w else 1.0
    if schedule == "linear":
        return lambda step: warmup(step) if step < w else max(0.0, float(total - step) / float(max(1, total - w)))
    if schedule == "cosine_with_restarts":
        def restarts(step):
            if step < w:
                return warmup(step)
            progress = float(step - w) / float(max(1, total - w))
            if progress >= 1.0:
                return 0.0
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(kw["num_cycles"]) * progress) % 1.0))))
        return restarts
    if schedule == "polynomial":
        lr_init, lr_end, power = opt.defaults["lr"], kw["lr_end"], kw["power"]
        assert lr_init > lr_end

        def polynomial(step):
            if step < w:
                return warmup(step)
            if step > total:
                return lr_end / lr_init
            lr_range = lr_init - lr_end
            pct_remaining = 1 - (step - w) / (total - w)
            decay = lr_range * pct_remaining ** power + lr_end
            return decay / lr_init
        return polynomial
    raise ValueError(schedule)


def make_scheduler(opt, name, args):
    if name == "transformers":
        return lr_scheduler.LambdaLR(opt, transformers_lambda(opt, **args))
    if name == "Warmup":
        warmup = lr_scheduler.LinearLR(opt, start_factor=args["start_factor"], total_iters=args["warmup_steps"])
        main = getattr(lr_scheduler, args["main"])(opt, **args["main_args"])
        return lr_scheduler.SequentialLR(opt, [warmup, main], milestones=[args["warmup_steps"]])
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
