"""The compute floor of a bench/compare workload: the side script's own build() and train_step()
(the same model, optimizer, scheduler, forward, loss, backward and step) on one batch already in
memory, repeated; no loader, no logging, no collectives but DDP's gradient all-reduce.

It runs on Python's torch, which is the same LibTorch 1.13 as trainrun's, so it serves as the floor
for both sides: what the kernels cost, whoever calls them. Prints `BENCH {"step_s": median seconds
per optimizer step after 2 warm-up steps, ...}` from rank 0.

It runs at trainrun's resolved settings too (--precision bf16, --memory-format channels_last:
the weights and the batch in NHWC, as trainrun's memory_format: channels_last lays them out).

usage: /usr/bin/python3 bench/py/floor.py quickstart|stl10_resnet18|pets_resnet50d|pets_convnext_tiny|pets_vit_small|pets_efficientnet_b0 --steps 20 [--nproc 2 --threads 1 --batch 64 --precision bf16 --memory-format channels_last --classes 4]
"""
import importlib
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # bench/pytorch_quickstart.py
from common import arg_parser, init_process, launch  # noqa: E402

WORKLOADS = {"quickstart": "pytorch_quickstart", "stl10_resnet18": "stl10_resnet18", "pets_resnet50d": "pets_resnet50d",
             "pets_convnext_tiny": "pets_convnext_tiny", "pets_vit_small": "pets_vit_small",
             "pets_efficientnet_b0": "pets_efficientnet_b0"}
WARMUP = 2


def worker(rank, args):
    init_process(rank, args)
    side = importlib.import_module(WORKLOADS[args.workload])
    torch.manual_seed(args.seed + rank)
    args.epochs = 1
    model, opt, scheduler = side.build(args, args.steps + WARMUP, args.classes)
    channels_last = args.memory_format == "channels_last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    if args.nproc > 1:
        model = DDP(model)
    model.train()
    x = torch.randn(args.batch, *side.INPUT_SHAPE)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, args.classes, (args.batch,))
    times = []
    for _ in range(args.steps + WARMUP):
        start = time.perf_counter()
        side.train_step(model, opt, scheduler, x, y, args)
        times.append(time.perf_counter() - start)
    steady = times[WARMUP:]
    if rank == 0:
        print("BENCH " + json.dumps({"step_s": statistics.median(steady), "mean_step_s": statistics.mean(steady),
                                     "steps": len(steady), "precision": args.precision,
                                     "memory_format": args.memory_format}), flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()


def main():
    ap = arg_parser(__doc__.splitlines()[0], batch=64, workers=0, data="")
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=20, help="timed steps (after 2 warm-up steps)")
    ap.add_argument("--classes", type=int, default=10)
    launch(worker, ap.parse_args())


if __name__ == "__main__":
    main()
