"""timm's ModelEmaV3, as the reference for train.ema.

usage: ema_ref.py OUT.safetensors DECAY MIN_DECAY USE_WARMUP WARMUP_GAMMA WARMUP_POWER STEP1.safetensors ...
STEPk holds the model's state_dict after optimizer step k (a checkpoint's model.safetensors);
the EMA is updated after every step with step=k, and OUT gets the EMA after the last one; an OUT
with `{k}` in it gets the EMA after every step k instead (one interpreter for a whole run).

timm is not packaged for Debian, so this re-derives ModelEmaV3.get_decay and apply_update_
(foreach=False path: ema_v.lerp_(model_v, weight=1. - decay) for floating-point tensors,
copy_ for the others; timm's foreach path calls torch._foreach_lerp_, the same lerp) from
huggingface/pytorch-image-models timm/utils/model_ema.py at
aa4b5850c1543fa488abf260f18390eda46cf85d, with update_after_step=0. The EMA's starting copy
never matters here: step 1's decay is 0, and lerp with weight 1 returns the weights exactly.
"""
import sys

import torch

from st import load_file, save_file


def get_decay(step, decay, min_decay, use_warmup, warmup_gamma, warmup_power, update_after_step=0):
    step = max(0, step - update_after_step - 1)
    if step <= 0:
        return 0.0
    if use_warmup:
        d = 1 - (1 + step / warmup_gamma) ** -warmup_power
        return max(min(d, decay), min_decay)
    return decay


def main():
    out = sys.argv[1]
    decay, min_decay = float(sys.argv[2]), float(sys.argv[3])
    use_warmup = sys.argv[4] == "true"
    gamma, power = float(sys.argv[5]), float(sys.argv[6])
    steps = sys.argv[7:]
    ema = None
    for k, path in enumerate(steps, start=1):
        model = load_file(path)
        if ema is None:
            ema = {n: torch.zeros_like(v) for n, v in model.items()}
        d = get_decay(k, decay, min_decay, use_warmup, gamma, power)
        with torch.no_grad():
            for n, v in model.items():
                if ema[n].is_floating_point():
                    ema[n].lerp_(v, weight=1. - d)
                else:
                    ema[n].copy_(v)
        if "{k}" in out:
            save_file(ema, out.replace("{k}", str(k)))
    if "{k}" not in out:
        save_file(ema, out)


if __name__ == "__main__":
    main()
