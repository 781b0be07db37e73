"""The expected numbers of tests/components/timm_models_test.cpp, made with the real timm.

timm is not packaged for Debian and is never committed here: this script runs it from a source
tree given with --timm (a checkout of github.com/huggingface/pytorch-image-models; timm 1.0 runs on
Debian 12's python3-torch 1.13 without huggingface_hub or safetensors). What it writes is data:

  tests/data/timm/NAME.json   per model, from timm.create_model(NAME, **KWARGS):
    timm_commit, timm_version, torch_version  what made the numbers
    pretrained_cfg   the default tag's hf_hub_id, input_size, interpolation, crop_pct, mean, std,
                     num_classes (what trainrun's input_config() / published_weights() must say)
    params           [name, shape, dtype, init] per state_dict entry in timm's order; init = [sum,
                     sum of squares, first 4 values, last value] (float64) of the tensor as
                     torch.manual_seed(0); timm.create_model(NAME) draws it
    layer_ids        timm's layer-decay layer id of each named parameter, in named_parameters()
                     order (group_parameters(model, model.group_matcher(coarse=False), reverse=True),
                     layer_max where nothing matches, as param_groups_layer_decay), num_layers
    logits           eval-mode logits [2, 1000] for formula_weights() on formula_input(), 1 thread,
                     oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA, set below before torch loads; its
                     AVX-512 convolutions sum in another order: resnet152 differs by 1.5e-4)

Formula weights and input use no RNG, only IEEE-exact arithmetic (multiply, add, floor), so
LibTorch computes the same tensors from the same formula on any version (the C++ side is
timm_models_test.cpp's formula_weights / formula_input: keep the two in step).

  tests/data/timm/torch2/NAME.json   (--init-only, run with python3-torch 2.x: Debian 13's 2.6)
                   model, timm_spec, timm_commit, timm_version, torch_version and params only: the
                   seeded init as torch 2.x draws it, where it differs from 1.13's. torch.erfinv
                   (timm's trunc_normal_) gives other last bits on 2.6: 57,395 of 10^6 seeded
                   values differ, by up to 2.3 ulps, the uniform draws being equal. So the
                   ConvNeXts and ViTs get a file here; timm_models_test.cpp reads it on LibTorch 2.x.

usage: timm_ref.py --timm SRC [--out DIR] [--init-only] SPEC...
  SPEC = NAME[.TAG][:key=value,...]   e.g. convnext_tiny, resnet18.tv_in1k:zero_init_last=False
  (TAG picks the pretrained_cfg when trainrun publishes another tag than timm's default; the keys
  are create_model arguments where trainrun's defaults differ from timm's, recorded in the file)
"""
import argparse
import json
import math
import os
import subprocess
import sys

# Before torch loads oneDNN, which reads it once (see logits above and timm_models_test.cpp).
os.environ["ONEDNN_MAX_CPU_ISA"] = "AVX2"

import torch

A = 0.7548776662466927  # 1/plastic number: a low-discrepancy step, values spread over [0, 1)
B = 0.5698402909980532


def frac(n, offset):
    """frac(k * A + offset) - 0.5 for k = 0..n-1: float64 values in [-0.5, 0.5)."""
    x = torch.arange(n, dtype=torch.float64) * A + offset
    return x - x.floor() - 0.5


def formula_value(name, shape, index):
    """The formula tensor for state_dict entry `index` named `name` (float64; the caller casts)."""
    n = math.prod(shape)
    v = frac(n, (index + 1) * B).reshape(shape)
    if name.endswith("running_var"):
        return 1.0 + v                       # [0.5, 1.5)
    if name.endswith("running_mean"):
        return 0.2 * v
    if len(shape) >= 2 and shape[0] > 1:     # conv / linear weights: He-uniform bound sqrt(6 / fan_in)
        return 2.0 * v * math.sqrt(6.0 / (n // shape[0]))
    if name.endswith("bias"):
        return 0.2 * v
    if len(shape) >= 2:                      # cls_token, pos_embed ([1, ...])
        return 0.4 * v
    return 1.0 + 0.4 * v                     # norm weights, layer scales


def formula_weights(model):
    sd = model.state_dict()
    out = {}
    for i, (k, t) in enumerate(sd.items()):
        out[k] = t if not t.is_floating_point() else formula_value(k, list(t.shape), i).to(t.dtype)
    return out


def formula_input(shape):
    n = math.prod(shape)
    return (4.0 * frac(n, 0.1)).reshape(shape).to(torch.float32)


def init_stats(t):
    d = t.detach().to(torch.float64).flatten()
    if d.numel() == 0:
        return [0.0, 0.0, [], 0.0]
    return [d.sum().item(), (d * d).sum().item(), d[:4].tolist(), d[-1].item()]


def parse_spec(spec):
    name, _, args = spec.partition(":")
    kwargs = {}
    for kv in filter(None, args.split(",")):
        k, v = kv.split("=")
        kwargs[k] = {"True": True, "False": False}.get(v, v)
        if isinstance(kwargs[k], str):
            try:
                kwargs[k] = float(v) if "." in v else int(v)
            except ValueError:
                pass
    return name, kwargs


def reference(spec, commit):
    import timm
    from timm.models._manipulate import named_apply  # noqa: F401  (timm's own, imported to fail early)
    from timm.models import group_parameters

    full, kwargs = parse_spec(spec)
    name = full.split(".")[0]
    torch.manual_seed(0)
    model = timm.create_model(full, **kwargs)
    params = [[k, list(t.shape), str(t.dtype).replace("torch.", ""), init_stats(t)]
              for k, t in model.state_dict().items()]

    cfg = model.pretrained_cfg
    pretrained = {k: cfg.get(k) for k in ("hf_hub_id", "input_size", "interpolation", "crop_pct", "mean", "std",
                                          "num_classes")}
    layer_map = group_parameters(model, model.group_matcher(coarse=False), reverse=True)
    num_layers = max(layer_map.values()) + 1
    layer_ids = [[k, layer_map.get(k, num_layers - 1)] for k, _ in model.named_parameters()]

    model.load_state_dict(formula_weights(model), strict=True)
    model.eval()
    torch.set_num_threads(1)
    with torch.no_grad():
        logits = model(formula_input([2, 3, 224, 224]))
    print(f"{spec}: {len(params)} tensors, logits |max| {logits.abs().max().item():.4g}, std {logits.std().item():.4g}",
          file=sys.stderr)
    return {
        "model": name, "timm_spec": spec, "timm_kwargs": kwargs,
        "timm_commit": commit, "timm_version": timm.__version__, "torch_version": torch.__version__,
        "pretrained_cfg": pretrained, "params": params,
        "layer_ids": layer_ids, "num_layers": num_layers,
        "input_shape": [2, 3, 224, 224],
        "logits": [[float(f"{x:.9g}") for x in row] for row in logits.tolist()],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timm", required=True, help="timm source tree (the folder holding timm/)")
    ap.add_argument("--commit", help="the timm commit (default: git rev-parse HEAD in --timm)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "timm"))
    ap.add_argument("--init-only", action="store_true", help="write only the seeded init (tests/data/timm/torch2/)")
    ap.add_argument("specs", nargs="+")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.timm))
    commit = a.commit or subprocess.run(["git", "-C", a.timm, "rev-parse", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
    if not commit:
        sys.exit("timm_ref.py: name the timm commit with --commit (the source tree is not a git checkout)")
    os.makedirs(a.out, exist_ok=True)
    for spec in a.specs:
        data = reference(spec, commit)
        if a.init_only:
            data = {k: data[k] for k in ("model", "timm_spec", "timm_commit", "timm_version", "torch_version", "params")}
        with open(os.path.join(a.out, data["model"] + ".json"), "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
