"""Ten torch.optim steps on the two-layer net of tests/components/optimizer_test.cpp, as the reference.
(lion and lamb are timm's, nadam torch 2.x's: tests/py/optim_ref.py.)

usage: optim_steps.py IN.safetensors OPTIMIZER_JSON OUT.safetensors [UNFREEZE_STEP]
  IN holds fc1.weight, fc1.bias, fc2.weight, fc2.bias, x (inputs) and y (int64 targets).
  OPTIMIZER_JSON is the recipe's optimizer section ({"name": "sgd", "lr": 0.1, ...}); its keys
  are torch.optim's argument names, and `no_decay: [bias]` puts the biases in a group with
  weight_decay 0.
Each step: zero_grad, F.cross_entropy(fc2(tanh(fc1(x))), y), backward, step. OUT gets the four
parameters after the last step.
With OPTIM_GROUPS in the environment (a JSON list of {"names": [...], "lr": ..., "weight_decay": ...}),
the optimizer gets exactly those param groups (optimizer.groups written out by hand).
With UNFREEZE_STEP K, fc1 is frozen (requires_grad False, not in the optimizer) for the first K
steps, then unfrozen and handed to the running optimizer with add_param_group (its biases in a
zero-decay group when no_decay says so): gradual unfreezing as a PyTorch script does it.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

import optim_ref
from st import load_file, save_file

OPTIMIZERS = {
    "sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "rmsprop": torch.optim.RMSprop,
    "radam": lambda params, **kw: torch.optim.RAdam(params, foreach=False, **kw), "nadam": optim_ref.nadam,
    "lion": optim_ref.Lion, "lamb": optim_ref.Lamb,
}

NAMES = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def main():
    data = load_file(sys.argv[1])
    cfg = json.loads(sys.argv[2])
    params = {n: torch.nn.Parameter(data[n].clone()) for n in NAMES}
    name = cfg.pop("name")
    no_decay = cfg.pop("no_decay", [])
    if "betas" in cfg:
        cfg["betas"] = tuple(cfg["betas"])
    assert set(no_decay) <= {"bias"}, "the reference only knows no_decay: [bias]"
    unfreeze = int(sys.argv[4]) if len(sys.argv) > 4 else None

    # OPTIM_GROUPS: the param groups written out as a PyTorch user would
    # ([{"names": [...], "lr": ..., "weight_decay": ...}, ...]), for optimizer.groups.
    explicit = json.loads(os.environ.get("OPTIM_GROUPS", "null"))
    cfg.pop("groups", None)

    def groups_of(names):
        if explicit is not None:
            return [dict({k: v for k, v in g.items() if k != "names"}, params=[params[n] for n in g["names"] if n in names])
                    for g in explicit]
        chosen = {n: params[n] for n in names}
        if no_decay:
            return [{"params": [p for n, p in chosen.items() if not n.endswith("bias")]},
                    {"params": [p for n, p in chosen.items() if n.endswith("bias")], "weight_decay": 0.0}]
        return [{"params": list(chosen.values())}]

    first = NAMES if unfreeze is None else NAMES[2:]
    if unfreeze is not None:
        for n in NAMES[:2]:
            params[n].requires_grad_(False)
    opt = OPTIMIZERS[name](groups_of(first), **cfg)
    x, y = data["x"], data["y"]
    for step in range(10):
        if step == unfreeze:
            for n in NAMES[:2]:
                params[n].requires_grad_(True)
            for g in groups_of(NAMES[:2]):
                opt.add_param_group(g)
        opt.zero_grad()
        h = torch.tanh(F.linear(x, params["fc1.weight"], params["fc1.bias"]))
        loss = F.cross_entropy(F.linear(h, params["fc2.weight"], params["fc2.bias"]), y)
        loss.backward()
        opt.step()
    save_file({n: p.detach() for n, p in params.items()}, sys.argv[3])


if __name__ == "__main__":
    main()
