"""F.cross_entropy as the reference for the `cross_entropy` loss.

usage: cross_entropy.py IN.safetensors LABEL_SMOOTHING
  IN holds `logits` (N x C float) and `target` (N int64).
Prints {"loss": float, "grad": [[...], ...]} (the gradient with respect to the logits).
"""
import json
import sys

import torch
import torch.nn.functional as F

from st import load_file

data = load_file(sys.argv[1])
logits = data["logits"].clone().requires_grad_(True)
loss = F.cross_entropy(logits, data["target"], label_smoothing=float(sys.argv[2]))
loss.backward()
print(json.dumps({"loss": loss.item(), "grad": logits.grad.tolist()}))
