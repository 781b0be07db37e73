"""bench/compare's Python side of the pets row: Hugging Face Accelerate's examples/cv_example.py
without Accelerate (not packaged for Debian), i.e. what `accelerate launch --num_processes 2
cv_example.py --cpu` runs: plain DDP over gloo, DistributedSampler in place of Accelerate's
sharded DataLoader, and timm's resnet50d rebuilt in plain torch (tests/py/timm_resnet.py, timm is
not packaged either). As in cv_example: file names from os.listdir, a seeded 80/20 permutation,
RandomResizedCrop(224, scale=(0.5, 1.0)) (+ a horizontal flip, as the benchmark's recipe adds) and
ToTensor in the DataLoader workers (4 by default), normalisation on the batch, everything but the
classifier frozen, Adam at lr 3e-2/25 driven by OneCycleLR(max_lr=3e-2), model.train() on the
whole model (frozen BatchNorm layers update their running statistics). The weights start random:
loading pretrained ones does not change the speed and there is no network here.

With --eval it then evaluates as cv_example does after each epoch, once at the end: the other 20 %
resized to the training size, ToTensor, the same normalisation, model.eval(); the accuracy over
every evaluation image (each rank takes every nproc-th) goes into the summary. --size sets the
training and evaluation size (224 as in cv_example).

usage: /usr/bin/python3 bench/py/pets_resnet50d.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --size 224 --eval]
"""
import os
import re

import numpy as np
import PIL.Image
import torch
import torch.distributed as dist
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import Dataset
from torchvision.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, Resize, ToTensor

import common
from common import arg_parser, fit, init_process, launch, train_loader
from timm_resnet import resnet50d

INPUT_SHAPE = (3, 224, 224)
MEAN = torch.tensor([0.485, 0.456, 0.406])[None, :, None, None]  # resnet50d's default_cfg (ImageNet)
STD = torch.tensor([0.229, 0.224, 0.225])[None, :, None, None]
LR = 3e-2


def extract_label(fname):
    return re.search(r"^(.*)_\d+\.jpg$", os.path.basename(fname)).groups()[0]


class PetsDataset(Dataset):
    def __init__(self, file_names, image_transform, label_to_id):
        self.file_names, self.image_transform, self.label_to_id = file_names, image_transform, label_to_id

    def __len__(self):
        return len(self.file_names)

    def __getitem__(self, idx):
        fname = self.file_names[idx]
        image = self.image_transform(PIL.Image.open(fname).convert("RGB"))
        return {"image": image, "label": self.label_to_id[extract_label(fname)]}


def build(args, steps_per_epoch, num_classes):
    """The model, optimizer and scheduler; bench/py/floor.py builds the same."""
    model = resnet50d(num_classes=num_classes)
    for param in model.parameters():
        param.requires_grad = False
    for param in model.fc.parameters():  # timm's get_classifier()
        param.requires_grad = True
    optimizer = torch.optim.Adam(params=model.parameters(), lr=LR / 25)
    scheduler = OneCycleLR(optimizer=optimizer, max_lr=LR, epochs=args.epochs, steps_per_epoch=steps_per_epoch)
    return model, optimizer, scheduler


def train_step(model, optimizer, scheduler, images, labels, args):
    inputs = (images - MEAN) / STD  # cv_example normalises the batch, not each image
    return common.train_step(model, optimizer, scheduler, inputs, labels, args)


def worker(rank, args):
    init_process(rank, args)
    file_names = [os.path.join(args.data, f) for f in os.listdir(args.data) if f.endswith(".jpg")]
    id_to_label = sorted(set(extract_label(f) for f in file_names))
    label_to_id = {lbl: i for i, lbl in enumerate(id_to_label)}
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    random_perm = np.random.permutation(len(file_names))
    train_split = random_perm[:int(0.8 * len(file_names))][:args.max_train_samples]
    size = (args.size, args.size)
    train_tfm = Compose([RandomResizedCrop(size, scale=(0.5, 1.0)), RandomHorizontalFlip(), ToTensor()])
    train_dataset = PetsDataset([file_names[i] for i in train_split], train_tfm, label_to_id)
    train_dataloader = train_loader(train_dataset, args)
    model, optimizer, scheduler = build(args, len(train_dataloader), len(label_to_id))
    model, clock = fit(model, optimizer, scheduler, train_dataloader, train_step, rank, args)
    extra = {}
    if args.eval:
        eval_names = [file_names[i] for i in random_perm[int(0.8 * len(file_names)):]]
        extra["eval_accuracy"], extra["eval_examples"] = evaluate(model, eval_names[rank::args.nproc], size,
                                                                  label_to_id, args)
    clock.finish(examples=len(train_dataset), classes=len(label_to_id), **extra)


def evaluate(model, file_names, size, label_to_id, args):
    dataset = PetsDataset(file_names, Compose([Resize(size), ToTensor()]), label_to_id)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, num_workers=args.workers)
    model.eval()
    counts = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for batch in loader:
            with common.autocast(args):
                outputs = model((batch["image"] - MEAN) / STD)
            counts += torch.tensor([(outputs.argmax(dim=-1) == batch["label"]).sum().item(), len(batch["label"])])
    if dist.is_initialized():
        dist.all_reduce(counts)
    return counts[0].item() / counts[1].item(), int(counts[1].item())


if __name__ == "__main__":
    ap = arg_parser(__doc__.splitlines()[0], batch=64, workers=4)
    ap.add_argument("--size", type=int, default=224, help="training (RandomResizedCrop) and evaluation size")
    ap.add_argument("--eval", action="store_true", help="evaluate on the other 20 %% after training")
    launch(worker, ap.parse_args())
