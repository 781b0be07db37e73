"""F.cross_entropy (or F.nll_loss) as the reference for the `cross_entropy` and `nll` losses.

usage: cross_entropy.py IN.safetensors LABEL_SMOOTHING [nll]
  IN holds `logits` (N x C float) and `target` (N int64, or N x C probabilities), and optionally
  `weight` (C float), passed as weight=. With `nll`: F.nll_loss(F.log_softmax(logits, 1), target,
  weight=weight) (LABEL_SMOOTHING is then ignored).
Prints {"loss": float, "grad": [[...], ...]} (the gradient with respect to the logits).
"""
import json
import sys

import torch
import torch.nn.functional as F

from st import load_file


def main():
    data = load_file(sys.argv[1])
    logits = data["logits"].clone().requires_grad_(True)
    weight = data.get("weight")
    if len(sys.argv) > 3 and sys.argv[3] == "nll":
        loss = F.nll_loss(F.log_softmax(logits, 1), data["target"], weight=weight)
    else:
        loss = F.cross_entropy(logits, data["target"], weight=weight, label_smoothing=float(sys.argv[2]))
    loss.backward()
    print(json.dumps({"loss": loss.item(), "grad": logits.grad.tolist()}))


if __name__ == "__main__":
    main()
