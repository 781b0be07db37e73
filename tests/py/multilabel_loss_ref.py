"""The expected numbers of tests/components/multilabel_loss_test.cpp: the real timm's
BinaryCrossEntropy and AsymmetricLossMultiLabel, and torch's F.binary_cross_entropy_with_logits,
on inputs made by a formula (no RNG, so the C++ test rebuilds them bit for bit: keep
multilabel_loss_test.cpp's `formula_logits` / `formula_targets` in step with the two below).

timm is not packaged for Debian and is never committed here: this script imports it from a
source tree given with --timm (a checkout of github.com/huggingface/pytorch-image-models). What
it writes is data, tests/data/multilabel_losses.json:
  timm_commit, timm_version, torch_version   what made the numbers
  cases   [{name, loss, config, targets, value, grad}]: `loss` and `config` are the trainrun loss and
          its keys; `targets` says which inputs (multi-hot, soft, index); `value` the loss and
          `grad` its gradient with respect to the logits (float64 inputs throughout)

usage: multilabel_loss_ref.py --timm SRC [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys

N, C = 6, 5


def formula_logits(torch):
    i = torch.arange(N * C, dtype=torch.float64).reshape(N, C)
    return ((i * 7) % 11 - 5) * 0.75 + (i % 3) * 0.125


def formula_targets(torch, kind):
    i = torch.arange(N * C, dtype=torch.float64).reshape(N, C)
    if kind == "multi-hot":
        return ((i * 5) % 7 < 3).to(torch.float64)
    if kind == "soft":  # what mixup makes of multi-hot rows: lambda 0.75 and the reversed batch
        hot = ((i * 5) % 7 < 3).to(torch.float64)
        return hot * 0.75 + hot.flip(0) * 0.25
    return (torch.arange(N) * 3) % C  # class indices


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timm", required=True)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "multilabel_losses.json"))
    args = ap.parse_args()
    sys.path.insert(0, args.timm)
    import torch
    import torch.nn.functional as F
    import timm
    from timm.loss import AsymmetricLossMultiLabel, BinaryCrossEntropy

    pos_weight = [0.5, 1.0, 2.0, 3.0, 0.25]
    cases = [
        # (name, trainrun loss, its config, targets, the reference module)
        ("bce multi-hot", "bce_with_logits", {}, "multi-hot", BinaryCrossEntropy(smoothing=0.0)),
        ("bce soft", "bce_with_logits", {}, "soft", BinaryCrossEntropy(smoothing=0.0)),
        ("bce pos_weight", "bce_with_logits", {"pos_weight": pos_weight}, "multi-hot",
         BinaryCrossEntropy(smoothing=0.0, pos_weight=torch.tensor(pos_weight, dtype=torch.float64))),
        ("bce index smoothing", "bce_with_logits", {"label_smoothing": 0.1}, "index", BinaryCrossEntropy(smoothing=0.1)),
        ("bce soft threshold", "bce_with_logits", {"target_threshold": 0.5}, "soft",
         BinaryCrossEntropy(smoothing=0.0, target_threshold=0.5)),
        ("bce index smoothing threshold", "bce_with_logits", {"label_smoothing": 0.1, "target_threshold": 0.2}, "index",
         BinaryCrossEntropy(smoothing=0.1, target_threshold=0.2)),
        ("asl defaults", "asymmetric", {}, "multi-hot", AsymmetricLossMultiLabel()),
        ("asl soft", "asymmetric", {}, "soft", AsymmetricLossMultiLabel()),
        ("asl no clip", "asymmetric", {"gamma_neg": 2.0, "gamma_pos": 0.0, "clip": 0.0}, "multi-hot",
         AsymmetricLossMultiLabel(gamma_neg=2, gamma_pos=0, clip=0)),
        ("asl no focusing", "asymmetric", {"gamma_neg": 0.0, "gamma_pos": 0.0, "clip": 0.1}, "multi-hot",
         AsymmetricLossMultiLabel(gamma_neg=0, gamma_pos=0, clip=0.1)),
    ]
    out = []
    for name, loss, config, kind, module in cases:
        x = formula_logits(torch).requires_grad_(True)
        value = module(x, formula_targets(torch, kind))
        value.backward()
        out.append({"name": name, "loss": loss, "config": config, "targets": kind, "value": value.item(),
                    "grad": x.grad.tolist()})
    # torch's own function, as a check that timm's BinaryCrossEntropy is it on dense targets.
    x = formula_logits(torch)
    torch_value = F.binary_cross_entropy_with_logits(x, formula_targets(torch, "multi-hot")).item()
    assert abs(torch_value - out[0]["value"]) < 1e-15, (torch_value, out[0]["value"])
    commit = subprocess.run(["git", "-C", args.timm, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"timm_commit": commit or os.environ.get("TIMM_COMMIT", ""), "timm_version": timm.__version__,
           "torch_version": torch.__version__, "cases": out}
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
