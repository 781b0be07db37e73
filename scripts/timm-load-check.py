#!/usr/bin/python3
"""Loads a `trainrun export --format hub` folder with timm itself and compares its logits with
trainrun's: the check that the folder is what timm's create_model reads. Run by hand where timm is
importable (it is not a Debian package: put a timm source tree on PYTHONPATH); Debian 12 has no
python3-safetensors, so give --st-shim to read model.safetensors with tests/py/st.py instead.

    scripts/timm-load-check.py HUB_FOLDER IMAGE PREDICT_JSONL [--st-shim]

PREDICT_JSONL: `trainrun predict ... IMAGE` output (its first line's "logits"). The image goes
through PIL -> RGB -> [0, 1] -> (x - mean) / std with config.json's pretrained_cfg mean and std,
the eval pipeline of a recipe whose eval_transforms are to_tensor and normalize: model (such as
recipes/multilabel_resnet18.yaml); a pipeline that resizes or crops needs that step added here.
Prints timm's and torch's versions, the model class and the largest absolute logit difference.
"""
import json
import os
import sys
import tempfile


def shim_safetensors():
    here = os.path.dirname(os.path.abspath(__file__))
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "safetensors"))
    open(os.path.join(root, "safetensors", "__init__.py"), "w").close()
    with open(os.path.join(root, "safetensors", "torch.py"), "w") as f:
        f.write("import sys\nsys.path.insert(0, %r)\nfrom st import load_file as _load\n"
                "def load_file(path, device='cpu'):\n    return _load(path)\n" % os.path.join(here, "..", "tests", "py"))
    sys.path.insert(0, root)


def main():
    args = [a for a in sys.argv[1:] if a != "--st-shim"]
    if "--st-shim" in sys.argv:
        shim_safetensors()
    folder, image, predicted = args
    import numpy as np
    import timm
    import torch
    from PIL import Image
    model = timm.create_model("local-dir:" + os.path.abspath(folder), pretrained=True).eval()
    cfg = json.load(open(os.path.join(folder, "config.json")))["pretrained_cfg"]
    x = torch.from_numpy(np.asarray(Image.open(image).convert("RGB")).copy()).permute(2, 0, 1).float().div(255)
    x = (x - torch.tensor(cfg["mean"]).view(-1, 1, 1)) / torch.tensor(cfg["std"]).view(-1, 1, 1)
    with torch.no_grad():
        out = model(x.unsqueeze(0))[0]
    want = torch.tensor(json.loads(open(predicted).readline())["logits"])
    print(json.dumps({"timm": timm.__version__, "torch": torch.__version__, "model": type(model).__name__,
                      "max_abs_difference": (out - want).abs().max().item()}))


if __name__ == "__main__":
    main()
