"""torch.utils.data.WeightedRandomSampler as the reference for data.sampler: weighted.

usage: weighted_sampler.py LABELS.json SEED EPOCH...
  LABELS.json: the training split's labels, a JSON list of ints. Each example weighs
  1 / (examples of its class), float64. Epoch E draws len(labels) indices with replacement from a
  generator seeded with SEED + E, the seeding DistributedSampler's shuffle uses.
Prints a JSON list with one list of indices per epoch, as list(sampler) gives them.
"""
import json
import sys

import torch
from torch.utils.data import WeightedRandomSampler

with open(sys.argv[1]) as f:
    labels = torch.tensor(json.load(f), dtype=torch.int64)
counts = torch.bincount(labels).to(torch.float64)
weights = 1.0 / counts[labels]
seed = int(sys.argv[2])
out = []
for epoch in (int(e) for e in sys.argv[3:]):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    out.append(list(WeightedRandomSampler(weights, num_samples=len(labels), replacement=True, generator=g)))
print(json.dumps(out))
