"""PyTorch's side of bench/resnet_step.cpp: one forward + backward (cross-entropy on random labels)
of resnet18 (torchvision) or resnet50d (timm's, rebuilt in tests/py/timm_resnet.py) in train mode,
timed after two warm-up steps; median and best of STEPS.

usage: /usr/bin/python3 bench/resnet_step.py [MODEL=resnet50d] [BATCH=8] [THREADS=2] [STEPS=5]
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
import timm_resnet  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet50d"
    batch, threads, steps = (int(a) for a in (sys.argv[2:5] + ["8", "2", "5"][len(sys.argv[2:5]):]))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet18() if name == "resnet18" else timm_resnet.resnet50d()
    model.train()
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))
    times = []
    for i in range(steps + 2):  # the first two warm up the allocator and kernels
        model.zero_grad()
        start = time.perf_counter()
        F.cross_entropy(model(x), y).backward()
        if i >= 2:
            times.append(time.perf_counter() - start)
    times.sort()
    print(json.dumps({"impl": "PyTorch (Python)", "model": name, "batch": batch, "threads": threads,
                      "median_s": round(times[len(times) // 2], 3), "min_s": round(times[0], 3)}))


if __name__ == "__main__":
    main()
