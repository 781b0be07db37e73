"""timm's Mixup (timm/data/mixup.py: _mix_batch, _mix_pair, _mix_elem, cutmix_bbox_and_lam,
mixup_target) re-derived on python3-torch, with its random draw forced: the reference for
trainrun's `mixup` batch transform.

usage: mixup_ref.py IN.safetensors OUT.safetensors DRAWS.json
  DRAWS is a list of cases; case K's batch is IN's `x_K` (B x C x H x W float) and `target_K`
  (B int64), and its draw holds mode (batch|pair|elem),
  per mixing unit lam, cutmix and box [yl, yh, xl, xh] (as drawn, before the lambda correction),
  num_classes, smoothing, correct_lam, minmax (whether cutmix_minmax is set: lambda always from the
  box). OUT gets, per case, the mixed `x_K`, the soft `target_K` (B x num_classes) and `lam_K`
(each example's).
As timm: lambdas of the pair and elem modes are float32; an odd batch is allowed (timm asserts an
even one): pair mode leaves the middle example unmixed.
"""
import json
import sys

import numpy as np
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


def corrected(d, lam, box, shape):
    yl, yh, xl, xh = box
    if d["correct_lam"] or d["minmax"]:
        lam = 1.0 - (yh - yl) * (xh - xl) / float(shape[-2] * shape[-1])
    return lam


def mix_batch(x, d):
    lam = d["lam"][0]
    if d["cutmix"][0]:
        lam = corrected(d, lam, d["box"][0], x.shape)
        yl, yh, xl, xh = d["box"][0]
        if lam != 1.0:
            x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
    elif lam != 1.0:
        x_flipped = x.flip(0).mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
    return lam


def mix_units(x, d, pair):
    batch_size = len(x)
    lam_batch = np.array(d["lam"], dtype=np.float32)
    x_orig = x.clone()
    for i in range(len(lam_batch)):
        j = batch_size - i - 1
        lam = lam_batch[i]
        if lam != 1.0:
            if d["cutmix"][i]:
                yl, yh, xl, xh = d["box"][i]
                lam = corrected(d, lam, d["box"][i], x[i].shape)
                x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
                if pair:
                    x[j][:, yl:yh, xl:xh] = x_orig[i][:, yl:yh, xl:xh]
                lam_batch[i] = lam
            else:
                x[i] = x[i] * lam + x_orig[j] * (1 - lam)
                if pair:
                    x[j] = x[j] * lam + x_orig[i] * (1 - lam)
    if pair:
        middle = np.ones(batch_size % 2, dtype=np.float32)
        lam_batch = np.concatenate((lam_batch, middle, lam_batch[::-1]))
    return torch.tensor(lam_batch, dtype=x.dtype).unsqueeze(1)


def mix(x, target, d):
    x = x.clone()
    if d["mode"] == "batch":
        lam = mix_batch(x, d)
        lams = torch.full((len(x), 1), lam, dtype=torch.float64)
    else:
        lam = mix_units(x, d, pair=d["mode"] == "pair")
        lams = lam.double()
    return x, mixup_target(target, d["num_classes"], lam, d["smoothing"]), lams.view(-1)


def main():
    data = load_file(sys.argv[1])
    out = {}
    for k, d in enumerate(json.load(open(sys.argv[3]))):
        out[f"x_{k}"], out[f"target_{k}"], out[f"lam_{k}"] = mix(data[f"x_{k}"], data[f"target_{k}"], d)
    save_file(out, sys.argv[2])


main()
