"""bench/compare's Python side of the resnet18 rows: recipes/stl10_resnet18.yaml without the resize,
as PyTorch's distributed-training tutorial writes the loop (torchvision resnet18 from scratch, SGD
lr 0.1 momentum 0.9 weight decay 1e-4, batch 32 per process, DistributedSampler, DDP over gloo),
on 96x96 images read from STL-10's binary layout exactly as torchvision.datasets.STL10 reads them
(the STL10 class itself checks the real release's MD5s, so the benchmark's synthetic files need
this copy of its reading code).

usage: /usr/bin/python3 bench/py/stl10_resnet18.py --data DIR/stl10_binary [--nproc 2 --threads 1 --workers 2]
"""
import os

import numpy as np
import torch
import torchvision
from PIL import Image
from torch.utils.data import Dataset, Subset
from torchvision import transforms

from common import arg_parser, fit, init_process, launch, train_loader, train_step  # noqa: F401 (floor.py)

INPUT_SHAPE, NUM_CLASSES = (3, 96, 96), 10


class STL10Binary(Dataset):
    """torchvision.datasets.STL10's __loadfile + __getitem__: planes stored column-major."""

    def __init__(self, root, split, transform):
        images = np.fromfile(os.path.join(root, f"{split}_X.bin"), dtype=np.uint8)
        self.images = np.transpose(np.reshape(images, (-1, 3, 96, 96)), (0, 1, 3, 2))
        self.labels = np.fromfile(os.path.join(root, f"{split}_y.bin"), dtype=np.uint8).astype(np.int64) - 1
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = Image.fromarray(np.transpose(self.images[i], (1, 2, 0)))
        return self.transform(image), int(self.labels[i])


def build(args, steps_per_epoch, num_classes=NUM_CLASSES):
    """The model, optimizer and (no) scheduler; bench/py/floor.py builds the same."""
    model = torchvision.models.resnet18(num_classes=num_classes)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return model, opt, None


def worker(rank, args):
    init_process(rank, args)
    torch.manual_seed(args.seed)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    train_set = STL10Binary(args.data, "train", tf)
    if args.max_train_samples:
        train_set = Subset(train_set, range(args.max_train_samples))
    loader = train_loader(train_set, args)
    model, opt, scheduler = build(args, len(loader))
    model, clock = fit(model, opt, scheduler, loader, train_step, rank, args)
    clock.finish(examples=len(train_set))


if __name__ == "__main__":
    launch(worker, arg_parser(__doc__.splitlines()[0], batch=32, workers=2).parse_args())
