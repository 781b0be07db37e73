"""fastai's LR range test on fixed loss sequences: tests/train/lr_finder_test.cpp's expected values.

    python3 tests/py/lr_find_reference.py FASTAI/fastai/callback/schedule.py > tests/data/lr_find_reference.json

Made with fastai at commit 510888788cac75075e640adcba6818a05b7fa834. The suggestion functions
`minimum` and `steep` are fastai's own, read from the schedule.py given (its source is not kept
here). The rest is restated from that commit's lines: the lr of batch i is
start * (end / start) ** (i / num_it) (LRFinder.before_batch, SchedExp); the loss is smoothed by
fastai/learner.py's AvgSmoothLoss (val = torch.lerp(loss, val, 0.98), value = val / (1 - 0.98 **
count)), in float32 as fastai keeps it; LRFinder.after_batch stops when the smoothed loss passes
4x the best, or after num_it batches; lr_find hands the suggestion functions
tensor(lrs[num_it // 10:-5]) and tensor(losses[num_it // 10:-5]) (float32 tensors).
"""
import ast
import json
import math
import sys

import numpy as np
import torch

source = open(sys.argv[1]).read()
fastai = {"tensor": torch.tensor, "torch": torch}
for node in ast.parse(source).body:
    if isinstance(node, ast.FunctionDef) and node.name in ("minimum", "steep"):
        exec(compile(ast.Module([node], []), sys.argv[1], "exec"), fastai)


def raw_losses(start, end, num_it, seed):
    # A range test's shape: flat, falling, then rising past a high lr; with noise.
    rng = np.random.RandomState(seed)
    out = []
    for i in range(num_it):
        x = math.log10(start * (end / start) ** (i / num_it))
        loss = 2.3 - 1.8 / (1 + math.exp(-(x + 3.5) * 1.6)) + 4.0 * max(0.0, x + 1.5) ** 3
        out.append(float(loss + 0.03 * rng.randn()))
    return out


def case(start, end, num_it, seed):
    raw = raw_losses(start, end, num_it, seed)
    lrs, smoothed = [], []
    val, count, best, stopped = torch.tensor(0.), 0, float("inf"), None
    for i in range(num_it):
        lrs.append(start * (end / start) ** (i / num_it))
        count += 1
        val = torch.lerp(torch.tensor(raw[i]), val, 0.98)
        value = (val / (1 - 0.98 ** count)).item()
        smoothed.append(value)
        best = min(best, value)
        if value > 4 * best or i + 1 >= num_it:
            stopped = i + 1
            break
    t_lrs, t_losses = torch.tensor(lrs[num_it // 10:-5]), torch.tensor(smoothed[num_it // 10:-5])
    lr_min10, (lr_min, _) = fastai["minimum"](t_lrs, t_losses, num_it)
    lr_steep, _ = fastai["steep"](t_lrs, t_losses, num_it)
    return {"start": start, "end": end, "steps": num_it, "losses": raw[:stopped], "lrs": lrs, "smoothed": smoothed,
            "stopped_after": stopped, "diverged": stopped < num_it or smoothed[-1] > 4 * best,
            "minimum": lr_min10, "minimum_at": lr_min, "steep": lr_steep}


print(json.dumps({"fastai_commit": "510888788cac75075e640adcba6818a05b7fa834",
                  "cases": [case(1e-7, 10.0, 100, 0), case(1e-6, 1e-2, 60, 1), case(1e-7, 10.0, 200, 2)]}, indent=1))
