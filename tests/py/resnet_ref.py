"""The PyTorch side of tests/components/resnet_test.cpp: torchvision's resnet18 and timm's resnet50d (as
rebuilt in timm_resnet.py), driven through safetensors files.

usage:
  resnet_ref.py init MODEL SEED NUM_CLASSES OUT
      torch.manual_seed(SEED); MODEL(num_classes=NUM_CLASSES); OUT = its state_dict; prints its keys
      in PyTorch's order, one per line.
  resnet_ref.py random MODEL SEED NUM_CLASSES INPUT OUT_WEIGHTS OUT
      a model with random weights and BatchNorm statistics (randomize()), written to OUT_WEIGHTS;
      OUT = {"logits": eval-mode model(INPUT["x"])}.
  resnet_ref.py forward MODEL WEIGHTS INPUT OUT [--train SEED] [--drop-rate P] [--drop-path-rate P]
      MODEL sized from WEIGHTS' fc.weight, load_state_dict(strict=True), then model(INPUT["x"]) in
      eval mode; OUT = {"logits"}. With --train: train mode, torch.manual_seed(SEED) just before
      the forward, then backward of (logits * INPUT["dy"]).sum(); OUT also holds "grad.<param>"
      and "state.<key>" (the state_dict after the step: BatchNorm running stats, counters).
      With --checkpoint too: timm's set_grad_checkpointing(True) (torch.utils.checkpoint over each
      residual block, timm_resnet.checkpoint_seq); the model and its running stats are resnet50d's
      only (torchvision's resnet18 has no such switch).
"""
import argparse
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402
import timm_resnet  # noqa: E402

def build(name, num_classes, drop_rate=0.0, drop_path_rate=0.0):
    if name == "resnet18":
        assert drop_rate == 0 and drop_path_rate == 0, "torchvision's resnet18 has no dropout"
        return torchvision.models.resnet18(num_classes=num_classes)
    return timm_resnet.resnet50d(num_classes=num_classes, drop_rate=drop_rate, drop_path_rate=drop_path_rate)


def randomize(model, seed):
    """Weights whose every part matters: BN affine and running stats away from 1/0 (the zero-init
    BN weights too), fc and convs as initialised under the seed."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 1.5 + 0.5)
                m.num_batches_tracked.fill_(int(torch.randint(0, 1000, (1,), generator=g)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["init", "random", "forward"])
    ap.add_argument("model", choices=["resnet18", "resnet50d"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--train", type=int)
    ap.add_argument("--drop-rate", type=float, default=0.0)
    ap.add_argument("--drop-path-rate", type=float, default=0.0)
    ap.add_argument("--checkpoint", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)

    if a.command == "init":
        seed, classes, out = int(a.args[0]), int(a.args[1]), a.args[2]
        torch.manual_seed(seed)
        state = build(a.model, classes).state_dict()
        st.save_file(state, out)
        print("\n".join(state))  # the state_dict's order (the real save_file orders the file by dtype, then name)
        return

    if a.command == "random":
        seed, classes, inp, weights, out = int(a.args[0]), int(a.args[1]), a.args[2], a.args[3], a.args[4]
        torch.manual_seed(seed)
        model = build(a.model, classes)
        randomize(model, seed)
        st.save_file(model.state_dict(), weights)
        with torch.no_grad():
            st.save_file({"logits": model.eval()(st.load_file(inp)["x"])}, out)
        return

    weights, inp, out = a.args
    state = st.load_file(weights)
    model = build(a.model, state["fc.weight"].shape[0], a.drop_rate, a.drop_path_rate)
    model.load_state_dict(state, strict=True)
    data = st.load_file(inp)
    if a.train is None:
        with torch.no_grad():
            st.save_file({"logits": model.eval()(data["x"])}, out)
        return
    model.train()
    if a.checkpoint:
        model.set_grad_checkpointing(True)
    torch.manual_seed(a.train)
    logits = model(data["x"])
    (logits * data["dy"]).sum().backward()
    result = {"logits": logits.detach()}
    result.update({"grad." + k: p.grad for k, p in model.named_parameters()})
    result.update({"state." + k: v for k, v in model.state_dict().items()})
    st.save_file(result, out)


if __name__ == "__main__":
    main()
