"""What every Python side of bench/compare shares: the command line, the processes, the loop
(DistributedSampler, DDP, `for epoch / for batch`, the step as cv_example.py writes it), and the
two lines bench/compare reads (the first-step marker and the summary). A side script holds what
differs: its data set, model, optimizer and scheduler, as that workload's users write them.

With --nproc N the script starts itself under torchrun (Debian's, through tests/py/torchrun.py's
Python 3.11 fix), as `accelerate launch` starts cv_example.py: one fresh interpreter per rank,
meeting over gloo. Not torch.multiprocessing.spawn: in a spawned process multiprocessing's default
start method is spawn, so every DataLoader worker would re-import torch and unpickle the dataset
each epoch, a cost users of torchrun do not pay. torchrun checks on its workers every 0.1 s here
instead of every 5 s, so that the wall time does not carry up to 5 s of its polling after the last
rank has exited. Each rank sets torch.set_num_threads(--threads).

With --device cuda (bench/compare --device cuda) the same loop runs as a GPU user writes it: the
model on the GPU (--memory-format channels_last: model.to(memory_format=torch.channels_last) and
NHWC batches), DataLoader(pin_memory=True), non-blocking host-to-device copies, autocast('cuda')
in --precision fp16 (with torch.amp.GradScaler's loss scaling) or bf16, and the clock read after
torch.cuda.synchronize(), since kernels are still running when the last step() returns.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

TESTS_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py")
sys.path.insert(0, TESTS_PY)  # basicnet_eval.Net, timm_resnet.resnet50d: the tests' PyTorch models
# Under Debian 13's torchrun (torch 2.6 without libuv) a Python worker's init_process_group fails
# with "use_libuv was requested but PyTorch was build without libuv support" whatever USE_LIBUV
# says (pytorch#148283); tests/py/torchrun.py's fix, imported, gives the worker's store client the
# classic server's protocol. On Debian 12's torch it does nothing.
import torchrun  # noqa: E402,F401

FIRST_STEP_MARKER = "BENCH first optimizer step done"


def arg_parser(description, batch, workers, data=None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", required=data is None, default=data, help="dataset folder")
    ap.add_argument("--nproc", type=int, default=1, help="processes (DDP over gloo when > 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process")
    ap.add_argument("--batch", type=int, default=batch, help="batch per process")
    ap.add_argument("--workers", type=int, default=workers, help="DataLoader(num_workers=) per process")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-train-samples", type=int, default=None, help="the first N training examples")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: model and step on the GPU, pinned batches, non-blocking copies")
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                    help="bf16 = autocast on the device; fp16 = CUDA autocast + GradScaler")
    ap.add_argument("--memory-format", choices=["contiguous", "channels_last"], default="contiguous",
                    help="channels_last: the model's 4-D weights and the inputs in NHWC (floor.py)")
    ap.add_argument("--synthetic", action="store_true",
                    help="every step trains on the loader's first batch again, held on the device: the step "
                         "without the data path (bench/compare's input ratio; trainrun's data.synthetic)")
    ap.add_argument("--port", type=int, default=29500, help="rendezvous port on 127.0.0.1")
    ap.add_argument("--seed", type=int, default=42)
    return ap


def launch(worker, args):
    """worker(rank, args) on args.nproc processes: this script again under torchrun when nproc > 1."""
    if args.nproc > 1 and "LOCAL_RANK" not in os.environ:
        torchrun = [sys.executable, os.path.join(TESTS_PY, "torchrun.py"), "--nproc_per_node", str(args.nproc),
                    "--master_addr", "127.0.0.1", "--master_port", str(args.port), "--monitor_interval", "0.1"]
        sys.exit(subprocess.call(torchrun + sys.argv))
    worker(int(os.environ.get("RANK", 0)), args)


def init_process(rank, args):
    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit(f"{os.path.basename(sys.argv[0])}: --device cuda: CUDA is not available "
                     f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    elif args.precision == "fp16":
        sys.exit(f"{os.path.basename(sys.argv[0])}: --precision fp16 needs --device cuda")
    if args.nproc > 1:
        dist.init_process_group("gloo")  # torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT


def autocast(args):
    dtype = torch.float16 if args.precision == "fp16" else torch.bfloat16
    return torch.autocast(args.device, dtype=dtype, enabled=args.precision != "fp32")


def grad_scaler(args):
    """fp16's loss scaling (None otherwise): torch.amp.GradScaler, torch.cuda.amp's before torch 2.3."""
    if args.precision != "fp16":
        return None
    return torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()


def to_device(tensor, args):
    """A batch tensor as the step wants it: on the GPU (a non-blocking copy from pinned memory), and
    NHWC when it is an image batch and --memory-format is channels_last. On the CPU it is unchanged."""
    if args.device != "cuda":
        return tensor
    if tensor.dim() == 4 and args.memory_format == "channels_last":
        return tensor.to("cuda", non_blocking=True, memory_format=torch.channels_last)
    return tensor.to("cuda", non_blocking=True)


def train_loader(dataset, args):
    """Shuffled batches of this rank's share (DistributedSampler, as Accelerate's prepare() shards)."""
    sampler = DistributedSampler(dataset, shuffle=True, seed=args.seed) if args.nproc > 1 else None
    return DataLoader(dataset, batch_size=args.batch, shuffle=sampler is None, sampler=sampler,
                      num_workers=args.workers, pin_memory=args.device == "cuda")


def train_step(model, optimizer, scheduler, images, labels, args, loss_fn=F.cross_entropy):
    """One optimizer step, as cv_example.py writes it (autocast around the forward; the loss in fp32);
    in fp16 through fit()'s GradScaler (args.scaler), as the AMP recipe writes it."""
    images, labels = to_device(images, args), to_device(labels, args)
    with autocast(args):
        outputs = model(images)
    loss = loss_fn(outputs.float(), labels)
    scaler = getattr(args, "scaler", None)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # skipped when a gradient is inf/nan
        scaler.update()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad()
    return loss


def images_and_labels(batch):
    """A loader's batch as (images, labels): cv_example's loaders give dicts."""
    return (batch["image"], batch["label"]) if isinstance(batch, dict) else batch


def fit(model, optimizer, scheduler, loader, train_step, rank, args):
    """The training loop every side runs: DDP, then epochs of train_step over the loader's batches."""
    if args.device == "cuda":
        # in place: the optimizer built on these parameters keeps them
        memory_format = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
        model.to("cuda", memory_format=memory_format)
        args.scaler = grad_scaler(args)
    if args.nproc > 1:
        model = DDP(model, device_ids=[torch.cuda.current_device()] if args.device == "cuda" else None)
    if args.synthetic:
        loader = Replay(loader, args)
    clock = StepClock(rank, args.device == "cuda")
    for epoch in range(args.epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        model.train()
        for batch in loader:
            images, labels = images_and_labels(batch)
            train_step(model, optimizer, scheduler, images, labels, args)
            clock.step_done()
    clock.stop()
    return model, clock


class Replay:
    """--synthetic: the loader's first batch, taken once before the clock starts (its iterator, and
    with it the workers, then end) and put on the device, given len(loader) times an epoch: the
    same steps with no data path, as timm's benchmark.py times a model on one batch."""

    def __init__(self, loader, args):
        images, labels = images_and_labels(next(iter(loader)))
        self.batch, self.steps, self.sampler = (to_device(images, args), to_device(labels, args)), len(loader), loader.sampler

    def __iter__(self):
        return itertools.repeat(self.batch, self.steps)

    def __len__(self):
        return self.steps


class StepClock:
    """Times the loop: prints the marker after the first optimizer step (rank 0), and the summary."""

    def __init__(self, rank, cuda=False):
        self.rank, self.cuda, self.steps, self.start, self.runtime = rank, cuda, 0, time.perf_counter(), None

    def step_done(self):
        self.steps += 1
        if self.steps == 1 and self.rank == 0:
            if self.cuda:
                torch.cuda.synchronize()  # the first step done, not queued
            print(FIRST_STEP_MARKER, flush=True)

    def stop(self):
        if self.cuda:
            torch.cuda.synchronize()
        self.runtime = time.perf_counter() - self.start

    def finish(self, **extra):
        if self.rank == 0:
            print("BENCH " + json.dumps({"train_runtime": self.runtime, "steps": self.steps, **extra}), flush=True)
        if dist.is_initialized():
            dist.destroy_process_group()
