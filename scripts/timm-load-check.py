#!/usr/bin/python3
"""Loads a model that trainrun wrote for timm, with timm itself, and compares its logits with
trainrun's: the check that what `trainrun export --format hub` writes, and what `trainrun push`
commits, is what timm's create_model reads. MODEL is either an export folder (loaded as
"local-dir:FOLDER") or hf-hub:ORG/NAME (loaded from HF_ENDPOINT, https://huggingface.co unless
set, with huggingface_hub). Run by hand where timm is importable (it is not a Debian package: put
a timm source tree on PYTHONPATH, and for hf-hub: a huggingface_hub source tree's src folder too;
where Debian 12's filelock 3.9 lacks the FileLock `mode` argument that huggingface_hub passes,
the script drops it). Debian 12 has no python3-safetensors, so give --st-shim to read
model.safetensors with tests/py/st.py instead.

    scripts/timm-load-check.py MODEL IMAGE PREDICT_JSONL [--st-shim]

PREDICT_JSONL: `trainrun predict ... IMAGE` output (its first line's "logits"). The image goes
through PIL -> RGB -> [0, 1] -> (x - mean) / std with the mean and std of the loaded model's
pretrained_cfg (config.json's), the eval pipeline of a recipe whose eval_transforms are to_tensor
and normalize: model (such as recipes/multilabel_resnet18.yaml); a pipeline that resizes or crops
needs that step added here. Prints one JSON line: timm's and torch's versions, the model class
and the largest absolute logit difference.
"""
import inspect
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


def shim_filelock():
    """filelock before 3.10 has no FileLock(mode=...), which huggingface_hub's WeakFileLock passes."""
    import filelock
    if "mode" in inspect.signature(filelock.FileLock.__init__).parameters:
        return

    class FileLock(filelock.FileLock):
        def __init__(self, lock_file, timeout=-1, mode=None, **kw):
            super().__init__(lock_file, timeout, **kw)
    filelock.FileLock = FileLock


def main():
    args = [a for a in sys.argv[1:] if a != "--st-shim"]
    if "--st-shim" in sys.argv:
        shim_safetensors()
    source, image, predicted = args
    if source.startswith("hf-hub:"):
        shim_filelock()
    else:
        source = "local-dir:" + os.path.abspath(source)
    import numpy as np
    import timm
    import torch
    from PIL import Image
    model = timm.create_model(source, pretrained=True).eval()
    cfg = model.pretrained_cfg
    x = torch.from_numpy(np.asarray(Image.open(image).convert("RGB")).copy()).permute(2, 0, 1).float().div(255)
    x = (x - torch.tensor(cfg["mean"]).view(-1, 1, 1)) / torch.tensor(cfg["std"]).view(-1, 1, 1)
    with torch.no_grad():
        out = model(x.unsqueeze(0))[0]
    want = torch.tensor(json.loads(open(predicted).readline())["logits"])
    print(json.dumps({"timm": timm.__version__, "torch": torch.__version__, "model": type(model).__name__,
                      "source": source, "max_abs_difference": (out - want).abs().max().item()}))


if __name__ == "__main__":
    main()
