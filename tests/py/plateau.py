"""torch.optim.lr_scheduler.ReduceLROnPlateau fed a metric sequence, as the reference.

usage: plateau.py SPEC_JSON
  SPEC_JSON: {"lrs": [lr of group 0, ...], "args": {ReduceLROnPlateau keyword arguments},
              "metrics": [the metric after each evaluation, ...]}
Prints {"lr": [[group lrs] after each step(metric)], "best": [...], "num_bad_epochs": [...],
"cooldown_counter": [...]} (best as null while infinite).
"""
import json
import math
import sys

import torch
from torch.optim import lr_scheduler


def main():
    spec = json.loads(sys.argv[1])
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in spec["lrs"]]
    opt = torch.optim.SGD(groups, lr=spec["lrs"][0])
    sched = lr_scheduler.ReduceLROnPlateau(opt, **spec["args"])
    out = {"lr": [], "best": [], "num_bad_epochs": [], "cooldown_counter": []}
    for m in spec["metrics"]:
        opt.step()
        sched.step(m)
        out["lr"].append([g["lr"] for g in opt.param_groups])
        out["best"].append(sched.best if math.isfinite(sched.best) else None)
        out["num_bad_epochs"].append(sched.num_bad_epochs)
        out["cooldown_counter"].append(sched.cooldown_counter)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
