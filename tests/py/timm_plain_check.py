"""Checks a plain-PyTorch rebuild of a timm model (tests/py/timm_<family>.py, which bench/compare's
Python sides train) against the numbers the real timm wrote (tests/data/timm/NAME.json, made by
tests/py/timm_ref.py): state_dict keys in timm's order, shapes and dtypes; the initial weights
under torch.manual_seed(0) (sum, sum of squares, first 4 and last value of every tensor); and
the eval logits of timm_ref.py's formula weights on its formula input, 1 thread.

Prints one line per check and `max logit diff X`; exits 1 on the first mismatch.

usage: timm_plain_check.py tests/data/timm/NAME.json [--tol 1e-4]
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timm_ref import formula_input, formula_weights, init_stats  # noqa: E402
import timm_convnext  # noqa: E402
import timm_efficientnet  # noqa: E402
import timm_resnet  # noqa: E402
import timm_vit  # noqa: E402

MODELS = {
    "resnet18": timm_resnet.resnet18, "resnet50d": timm_resnet.resnet50d,
    "convnext_tiny": timm_convnext.convnext_tiny, "convnext_small": timm_convnext.convnext_small,
    "convnext_base": timm_convnext.convnext_base,
    "vit_tiny_patch16_224": timm_vit.vit_tiny_patch16_224, "vit_small_patch16_224": timm_vit.vit_small_patch16_224,
    "vit_base_patch16_224": timm_vit.vit_base_patch16_224,
    "efficientnet_b0": timm_efficientnet.efficientnet_b0, "efficientnet_b1": timm_efficientnet.efficientnet_b1,
    "efficientnet_b2": timm_efficientnet.efficientnet_b2, "efficientnet_b3": timm_efficientnet.efficientnet_b3,
}


def close(a, b, rel=1e-9, abs_=1e-12):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def check(ref, tol):
    name = ref["model"]
    torch.manual_seed(0)
    model = MODELS[name](**ref.get("timm_kwargs", {}))  # create_model's arguments, where the file has any
    sd = model.state_dict()
    keys = [p[0] for p in ref["params"]]
    if list(sd) != keys:
        missing, extra = [k for k in keys if k not in sd], [k for k in sd if k not in keys]
        fail(f"{name}: state_dict keys differ from timm's (missing {missing[:5]}, extra {extra[:5]}, or order)")
    for key, shape, dtype, init in ref["params"]:
        t = sd[key]
        if list(t.shape) != shape or str(t.dtype).replace("torch.", "") != dtype:
            fail(f"{name}: {key} is {list(t.shape)} {t.dtype}, timm's {shape} {dtype}")
        ours = init_stats(t)
        same = close(ours[0], init[0], 1e-9, 1e-9) and close(ours[1], init[1], 1e-9, 1e-9) and \
            all(close(a, b) for a, b in zip(ours[2] + [ours[3]], init[2] + [init[3]])) and len(ours[2]) == len(init[2])
        if not same:
            fail(f"{name}: seeded init of {key} differs: ours {ours}, timm's {init}")
    print(f"{name}: {len(keys)} state_dict entries: keys, order, shapes, dtypes and seeded init are timm's")

    model.load_state_dict(formula_weights(model), strict=True)
    model.eval()
    torch.set_num_threads(1)
    with torch.no_grad():
        logits = model(formula_input(ref["input_shape"]))
    expected = torch.tensor(ref["logits"], dtype=torch.float32)
    diff = (logits - expected).abs().max().item()
    print(f"{name}: max logit diff {diff:.3g} (max |logit| {expected.abs().max().item():.4g})")
    if not diff <= tol:
        fail(f"{name}: logits differ from timm's by {diff:.3g} > {tol}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    for path in a.json:
        with open(path) as f:
            ref = json.load(f)
        # On torch 2.x the seeded init of the models whose init calls erfinv (trunc_normal_) is
        # torch2/NAME.json's: erfinv rounds other last bits there (tests/py/timm_ref.py).
        torch2 = os.path.join(os.path.dirname(path), "torch2", os.path.basename(path))
        if int(torch.__version__.split(".")[0]) >= 2 and os.path.exists(torch2):
            with open(torch2) as f:
                ref["params"] = json.load(f)["params"]
        check(ref, a.tol)


if __name__ == "__main__":
    main()
