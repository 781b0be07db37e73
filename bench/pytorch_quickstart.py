"""PyTorch's own loop for recipes/quickstart.yaml, for comparing time and accuracy on one machine
(and bench/compare's Python side of the BasicNet rows).

BasicNet (pytorch/examples mnist Net) on Fashion-MNIST, AdamW lr 1e-3, batch 64 per process,
shuffled (DistributedSampler over gloo with --nproc 2), ToTensor + Normalize((0.1307,), (0.3081,))
per example as the MNIST example does, 1 data worker, 1 epoch, then evaluation on the 10,000 test
images in batches of 1000 (--no-eval skips it).

usage: /usr/bin/python3 bench/pytorch_quickstart.py [--threads 2] [--nproc 1] [--data /usr/share/datasets/fashion-mnist]
"""
import os
import sys

import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset, Subset
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "py"))
import common  # noqa: E402
from common import arg_parser, fit, init_process, launch, train_loader  # noqa: E402
from basicnet_eval import Net, idx  # noqa: E402  (tests/py, put on the path by common)

INPUT_SHAPE, NUM_CLASSES = (1, 28, 28), 10


class Idx(Dataset):
    def __init__(self, root, prefix, transform):
        self.images = idx(f"{root}/{prefix}-images-idx3-ubyte.gz")
        self.labels = idx(f"{root}/{prefix}-labels-idx1-ubyte.gz")
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(Image.fromarray(self.images[i], mode="L")), int(self.labels[i])


def build(args, steps_per_epoch, num_classes=NUM_CLASSES):
    """The model, optimizer and (no) scheduler; bench/py/floor.py builds the same."""
    model = Net()  # 10 classes, as in the MNIST example
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), None


def train_step(model, opt, scheduler, x, y, args):
    return common.train_step(model, opt, scheduler, x, y, args, loss_fn=F.nll_loss)


def evaluate(model, args):
    model = getattr(model, "module", model)  # DDP's wrapped model
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    test = DataLoader(Idx(args.data, "t10k", tf), batch_size=1000, num_workers=args.workers)
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in test:
            x, y = common.to_device(x, args), common.to_device(y, args)
            out = model(x)
            loss_sum += F.nll_loss(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += len(y)
    return {"eval_accuracy": correct / total, "eval_loss": loss_sum / total}


def worker(rank, args):
    init_process(rank, args)
    torch.manual_seed(args.seed)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_set = Idx(args.data, "train", tf)
    if args.max_train_samples:
        train_set = Subset(train_set, range(args.max_train_samples))
    loader = train_loader(train_set, args)
    model, opt, scheduler = build(args, len(loader))
    model, clock = fit(model, opt, scheduler, loader, train_step, rank, args)
    metrics = evaluate(model, args) if args.eval and rank == 0 else {}
    clock.finish(examples=len(train_set), threads=args.threads, workers=args.workers, nproc=args.nproc, **metrics)


def main():
    ap = arg_parser(__doc__.splitlines()[0], batch=64, workers=1, data="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--no-eval", dest="eval", action="store_false", help="train only")
    ap.set_defaults(threads=2)
    launch(worker, ap.parse_args())


if __name__ == "__main__":
    main()
