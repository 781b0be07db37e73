"""torchvision's side of bench/data_pipeline.cpp: ImageFolder + RandomResizedCrop(224) +
ToTensor + Normalize through torch.utils.data.DataLoader(num_workers=W, batch_size=B).

usage: /usr/bin/python3 bench/data_pipeline.py FOLDER WORKERS BATCH EPOCHS [augment]
`augment` adds RandomHorizontalFlip + RandAugment(2, 9) before ToTensor and RandomErasing(0.25,
value="random") after Normalize (bench/data_pipeline.cpp --augment does the same).
Prints `torchvision: <images/s> images/s` (the best of EPOCHS timed epochs after one warm-up).
"""
import sys
import time

import torch
from torchvision import datasets, transforms as T

folder, workers, batch, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
augment = len(sys.argv) > 5 and sys.argv[5] == "augment"
steps = [T.RandomResizedCrop(224)]
if augment:
    steps += [T.RandomHorizontalFlip(), T.RandAugment(num_ops=2, magnitude=9)]
steps += [T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
if augment:
    steps.append(T.RandomErasing(p=0.25, value="random"))
tf = T.Compose(steps)
data = datasets.ImageFolder(folder, transform=tf)
loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers,
                                     persistent_workers=workers > 0)
best = 0.0
for epoch in range(epochs + 1):
    start, n = time.perf_counter(), 0
    for x, y in loader:
        n += x.shape[0]
    rate = n / (time.perf_counter() - start)
    if epoch > 0:  # the first epoch starts the worker processes
        best = max(best, rate)
print(f"torchvision: {best:.1f} images/s")
