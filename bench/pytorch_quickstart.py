"""PyTorch's own loop for recipes/quickstart.yaml, for comparing time and accuracy on one machine.

BasicNet (pytorch/examples mnist Net) on Fashion-MNIST, AdamW lr 1e-3, batch 64, shuffled,
ToTensor + Normalize((0.1307,), (0.3081,)) per example as the MNIST example does, 1 data worker,
1 epoch, then evaluation on the 10,000 test images in batches of 1000.

usage: /usr/bin/python3 bench/pytorch_quickstart.py [--threads 2] [--root /usr/share/datasets/fashion-mnist]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "py"))
from basicnet_eval import Net, idx  # noqa: E402


class Idx(Dataset):
    def __init__(self, root, prefix, transform):
        self.images = idx(f"{root}/{prefix}-images-idx3-ubyte.gz")
        self.labels = idx(f"{root}/{prefix}-labels-idx1-ubyte.gz")
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(Image.fromarray(self.images[i], mode="L")), int(self.labels[i])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train = DataLoader(Idx(args.root, "train", tf), batch_size=64, shuffle=True, num_workers=args.workers)
    test = DataLoader(Idx(args.root, "t10k", tf), batch_size=1000, num_workers=args.workers)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = time.time()
    model.train()
    for x, y in train:
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
    train_time = time.time() - start
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in test:
            out = model(x)
            loss_sum += F.nll_loss(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += len(y)
    print(json.dumps({"train_runtime": round(train_time, 2), "eval_accuracy": correct / total,
                      "eval_loss": loss_sum / total, "threads": args.threads, "workers": args.workers}))


if __name__ == "__main__":
    main()
