"""What bench/compare's pets sides share: Hugging Face Accelerate's examples/cv_example.py without
Accelerate (not packaged for Debian), i.e. what `accelerate launch --num_processes 2 cv_example.py
--cpu` runs: plain DDP over gloo, DistributedSampler in place of Accelerate's sharded DataLoader,
and a timm model rebuilt in plain torch (tests/py/timm_*.py, timm is not packaged either). As in
cv_example: file names from os.listdir, a seeded 80/20 permutation, RandomResizedCrop(224,
scale=(0.5, 1.0)) (+ a horizontal flip, as the benchmark's recipes add) and ToTensor in the
DataLoader workers (4 by default), normalisation on the batch with the model's pretrained mean/std,
everything but the classifier (timm's get_classifier()) frozen, Adam at lr 3e-2/25 driven by
OneCycleLR(max_lr=3e-2), model.train() on the whole model (frozen BatchNorm layers update their
running statistics). The weights start random: loading pretrained ones does not change the speed
and there is no network here. --precision bf16 runs the forward under CPU autocast, as
cv_example's --mixed_precision bf16 does. --train-all trains every layer (a full fine-tune) instead
of the classifier alone; --device cuda runs it on the GPU (bench/py/common.py says how).

With --eval it then evaluates as cv_example does after each epoch, once at the end: the other 20 %
resized to the training size, ToTensor, the same normalisation, model.eval(); the accuracy over
every evaluation image (each rank takes every nproc-th) goes into the summary. --size sets the
training and evaluation size (224 as in cv_example).

A side script is one PetsSide: its model, the classifier's name and the mean/std (see
pets_resnet50d.py); bench/py/floor.py uses its INPUT_SHAPE, build and train_step.
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

LR = 3e-2
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


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


class PetsSide:
    """One pets side: model(num_classes=) builds the network, `classifier` names get_classifier()."""

    INPUT_SHAPE = (3, 224, 224)

    def __init__(self, model, classifier, mean=IMAGENET_MEAN, std=IMAGENET_STD, source="tests/py"):
        self.model, self.classifier, self.source = model, classifier, source  # source: which implementation
        self.mean = torch.tensor(mean)[None, :, None, None]  # the weights' pretrained_cfg
        self.std = torch.tensor(std)[None, :, None, None]

    def build(self, args, steps_per_epoch, num_classes):
        """The model, optimizer and scheduler; bench/py/floor.py builds the same."""
        model = self.model(num_classes=num_classes)
        if not getattr(args, "train_all", False):
            for param in model.parameters():
                param.requires_grad = False
            for param in model.get_submodule(self.classifier).parameters():
                param.requires_grad = True
        optimizer = torch.optim.Adam(params=model.parameters(), lr=LR / 25)
        scheduler = OneCycleLR(optimizer=optimizer, max_lr=LR, epochs=args.epochs, steps_per_epoch=steps_per_epoch)
        return model, optimizer, scheduler

    def train_step(self, model, optimizer, scheduler, images, labels, args):
        images = common.to_device(images, args)
        if self.mean.device != images.device:  # once: a copy per step would wait for the GPU
            self.mean, self.std = self.mean.to(images.device), self.std.to(images.device)
        inputs = (images - self.mean) / self.std  # cv_example normalises the batch, not each image
        return common.train_step(model, optimizer, scheduler, inputs, labels, args)

    def worker(self, rank, args):
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
        model, optimizer, scheduler = self.build(args, len(train_dataloader), len(label_to_id))
        model, clock = fit(model, optimizer, scheduler, train_dataloader, self.train_step, rank, args)
        extra = {}
        if args.eval:
            eval_names = [file_names[i] for i in random_perm[int(0.8 * len(file_names)):]]
            extra["eval_accuracy"], extra["eval_examples"] = self.evaluate(model, eval_names[rank::args.nproc], size,
                                                                           label_to_id, args)
        clock.finish(examples=len(train_dataset), classes=len(label_to_id), model=self.source, **extra)

    def evaluate(self, model, file_names, size, label_to_id, args):
        dataset = PetsDataset(file_names, Compose([Resize(size), ToTensor()]), label_to_id)
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, num_workers=args.workers)
        model.eval()
        counts = torch.zeros(2, dtype=torch.float64)
        with torch.no_grad():
            for batch in loader:
                images = common.to_device(batch["image"], args)
                with common.autocast(args):
                    outputs = model((images - self.mean.to(images.device)) / self.std.to(images.device)).cpu()
                counts += torch.tensor([(outputs.argmax(dim=-1) == batch["label"]).sum().item(), len(batch["label"])])
        if dist.is_initialized():
            dist.all_reduce(counts)
        return counts[0].item() / counts[1].item(), int(counts[1].item())

    def main(self, doc):
        ap = arg_parser(doc.splitlines()[0], batch=64, workers=4)
        ap.add_argument("--size", type=int, default=224, help="training (RandomResizedCrop) and evaluation size")
        ap.add_argument("--eval", action="store_true", help="evaluate on the other 20 %% after training")
        ap.add_argument("--train-all", action="store_true", help="train every layer, not only the classifier")
        launch(self.worker, ap.parse_args())
