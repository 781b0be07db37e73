"""The PyTorch side of recipes/multilabel_resnet18.yaml: torchvision's resnet18 from scratch on the
tiled Fashion-MNIST set (scripts/tiled-fashion-mnist.py), as a PyTorch user writes a multi-label
loop: the CSV read into multi-hot targets (MultiLabelBinarizer's layout, classes sorted), ToTensor +
Normalize(ImageNet mean/std), AdamW lr 1e-3 weight decay 0.01, BCEWithLogitsLoss, batch 64 per
process, DistributedSampler and DDP over gloo on more than one process. After training, rank 0
scores the evaluation pictures and prints scikit-learn's macro average precision (eval_map) and
samples F1 at 0.5, as trainrun's metrics.jsonl names them.

usage: /usr/bin/python3 bench/py/multilabel_resnet18.py --data DIR [--epochs 2 --nproc 1 --threads 1 --workers 2]
"""
import csv
import os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image
from sklearn.metrics import average_precision_score, f1_score
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from common import arg_parser, fit, init_process, launch, train_loader, train_step


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [(r["image"], r["labels"].split("|")) for r in rows]


class Tiles(Dataset):
    def __init__(self, root, rows, classes, transform):
        self.root, self.rows, self.transform = root, rows, transform
        self.index = {c: i for i, c in enumerate(classes)}
        self.num_classes = len(classes)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        name, labels = self.rows[i]
        target = torch.zeros(self.num_classes)
        for label in labels:
            target[self.index[label]] = 1.0
        return self.transform(Image.open(os.path.join(self.root, name)).convert("RGB")), target


def evaluate(model, data, args):
    model.eval()
    scores, targets = [], []
    with torch.no_grad():
        for x, y in DataLoader(data, batch_size=250, num_workers=args.workers):
            scores.append(torch.sigmoid(model(x)))
            targets.append(y)
    s, y = torch.cat(scores).numpy(), torch.cat(targets).numpy().astype(np.int64)
    return (float(average_precision_score(y, s, average="macro")),
            float(f1_score(y, (s > 0.5).astype(np.int64), average="samples", zero_division=0)))


def worker(rank, args):
    init_process(rank, args)
    torch.manual_seed(args.seed)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    train_rows = read_csv(os.path.join(args.data, "train.csv"))
    classes = sorted({label for _, labels in train_rows for label in labels})
    train_set = Tiles(args.data, train_rows, classes, tf)
    loader = train_loader(train_set, args)
    model = torchvision.models.resnet18(num_classes=len(classes))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(model, optimizer, scheduler, images, labels, args):
        return train_step(model, optimizer, scheduler, images, labels, args, loss_fn=F.binary_cross_entropy_with_logits)

    model, clock = fit(model, opt, None, loader, step, rank, args)
    eval_map = eval_f1 = None
    if rank == 0:
        module = model.module if hasattr(model, "module") else model
        eval_map, eval_f1 = evaluate(module, Tiles(args.data, read_csv(os.path.join(args.data, "eval.csv")), classes, tf), args)
    clock.finish(examples=len(train_set), eval_map=eval_map, eval_f1_samples=eval_f1)


if __name__ == "__main__":
    launch(worker, arg_parser(__doc__.splitlines()[0], batch=64, workers=2).parse_args())
