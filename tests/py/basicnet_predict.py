"""The reference for `trainrun predict`: writes the first N Fashion-MNIST test images as PNG files
to OUT_DIR, then classifies those files as a PyTorch user would (PIL, torchvision's ToTensor and
Normalize, PyTorch's own MNIST Net with the weights loaded strictly). Prints a JSON list of
{"file", "label", "index", "score", "logits"}.

usage: basicnet_predict.py MODEL.safetensors FASHION_MNIST_DIR N OUT_DIR
"""
import json
import sys

import torch
from PIL import Image
from torchvision import transforms

from basicnet_eval import Net, idx
from st import load_file

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def main():
    weights, root, n, out_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    net = Net()
    net.load_state_dict(load_file(weights), strict=True)
    net.eval()
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    out = []
    for i, pixels in enumerate(idx(f"{root}/t10k-images-idx3-ubyte.gz")[:n]):
        path = f"{out_dir}/test_{i}.png"
        Image.fromarray(pixels).save(path)
        with torch.no_grad():
            logits = net(tf(Image.open(path).convert("L")).unsqueeze(0))[0]
        k = int(logits.argmax())
        out.append({"file": path, "label": CLASSES[k], "index": k, "score": float(logits.exp()[k]),
                    "logits": logits.tolist()})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
