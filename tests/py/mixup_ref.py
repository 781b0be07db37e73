"""timm's Mixup (timm/data/mixup.py, batch mode) re-derived on python3-torch, with its random
draw forced: the reference for trainrun's `mixup` batch transform.

usage: mixup_ref.py IN.safetensors OUT.safetensors LAM CUTMIX YL YH XL XH NUM_CLASSES SMOOTHING CORRECT_LAM
  IN holds `x` (B x C x H x W float) and `target` (B int64). OUT gets the mixed `x`, the soft
  `target` (B x NUM_CLASSES) and `lam` (the lambda the targets were mixed with).
The formulas are timm's: one_hot / mixup_target, cutmix_bbox_and_lam's correction, _mix_batch.
"""
import sys

import torch

from st import load_file, save_file


def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1.0 - lam)


def main():
    data = load_file(sys.argv[1])
    lam, cutmix = float(sys.argv[3]), sys.argv[4] == "1"
    yl, yh, xl, xh = (int(v) for v in sys.argv[5:9])
    num_classes, smoothing, correct_lam = int(sys.argv[9]), float(sys.argv[10]), sys.argv[11] == "1"
    x = data["x"].clone()
    if cutmix:
        if correct_lam:
            lam = 1.0 - (yh - yl) * (xh - xl) / float(x.shape[-2] * x.shape[-1])
        if lam != 1.0:
            x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
    elif lam != 1.0:
        x_flipped = x.flip(0).mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
    target = mixup_target(data["target"], num_classes, lam, smoothing)
    save_file({"x": x, "target": target, "lam": torch.tensor([lam], dtype=torch.float64)}, sys.argv[2])


main()
