"""Reads what `trainrun export --format torchscript` and runner/export/torchscript.cpp write, with
PyTorch's own reader (python3-torch's torch.jit.load, on Debian 12 and 13).

  torchscript_check.py models DIR NAME...
      For each NAME: loads DIR/NAME.pt with its extra files, runs it in eval mode on the tensor
      `input` of DIR/NAME_input.safetensors with 1 and with 2 intra-op threads
      (torch.set_num_threads), writes the outputs to DIR/NAME_python_1.safetensors and
      DIR/NAME_python_2.safetensors and prints one JSON object: {NAME: {"keys": state_dict keys in
      order, "extra": {file: text}, "training": bool}}. Both thread counts, because PyTorch picks
      some convolution kernels by the thread count (see torchscript_test.cpp).
  torchscript_check.py predict MODEL.pt IMAGE...
      Classifies the images as a user would with the file alone: the preprocessing its
      preprocess.json names, built from torchvision's transforms on PIL images, then the model;
      one JSON line per image: {"file", "label" (from labels.json), "logits"}.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402


def load(path, *names):
    files = {name: "" for name in names}
    model = torch.jit.load(path, map_location="cpu", _extra_files=files)
    model.eval()
    return model, {name: text.decode() if isinstance(text, bytes) else text for name, text in files.items()}


def models(folder, names):
    out = {}
    for name in names:
        x = st.load_file(os.path.join(folder, name + "_input.safetensors"))["input"]
        for threads in (1, 2):
            torch.set_num_threads(threads)
            # Loaded afresh for each count, so each run is the module's first call, as the C++ side's
            # is: from the second call on, the profiling executor runs an optimised graph, whose
            # TensorExpr fusion groups LLVM compiles first (minutes a model on LibTorch 2.6).
            model, extra = load(os.path.join(folder, name + ".pt"), "trainrun.json", "preprocess.json", "labels.json")
            with torch.no_grad():
                y = model(x)
            st.save_file({"output": y.contiguous()}, os.path.join(folder, f"{name}_python_{threads}.safetensors"))
        out[name] = {"keys": list(model.state_dict().keys()), "extra": extra, "training": model.training}
    print(json.dumps(out))


def torchvision_pipeline(preprocess):
    from torchvision import transforms as T
    modes = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
             "nearest": T.InterpolationMode.NEAREST}
    steps = []
    for step in preprocess["transforms"]:
        (name, params), = step.items() if isinstance(step, dict) else [(step, {})]
        params = params or {}
        if name == "resize":
            steps.append(T.Resize(params["size"], interpolation=modes[params.get("interpolation", "bilinear")]))
        elif name == "center_crop":
            steps.append(T.CenterCrop(params["size"]))
        elif name == "to_tensor":
            steps.append(T.ToTensor())
        elif name == "normalize":
            steps.append(T.Normalize(params["mean"], params["std"]))
        else:
            raise SystemExit("torchscript_check.py: no torchvision counterpart written here for " + name)
    return T.Compose(steps)


def predict(path, images):
    from PIL import Image
    model, extra = load(path, "preprocess.json", "labels.json")
    preprocess = json.loads(extra["preprocess.json"])
    labels = json.loads(extra["labels.json"])
    pipeline = torchvision_pipeline(preprocess)
    mode = "L" if preprocess["input_size"][0] == 1 else "RGB"
    for image in images:
        x = pipeline(Image.open(image).convert(mode)).unsqueeze(0)
        with torch.no_grad():
            logits = model(x)[0]
        print(json.dumps({"file": image, "label": labels[str(int(logits.argmax()))], "logits": logits.tolist()}))


if __name__ == "__main__":
    if sys.argv[1] == "models":
        models(sys.argv[2], sys.argv[3:])
    else:
        predict(sys.argv[2], sys.argv[3:])
