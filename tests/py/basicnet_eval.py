"""Loads trainrun's model.safetensors into PyTorch's own MNIST example Net (strict=True) and
evaluates it on the first N Fashion-MNIST test images with torchvision's transforms.
Prints JSON {"eval_loss", "eval_accuracy", "examples", "eval_f1_macro", "eval_balanced_accuracy"}
(the last two scikit-learn's f1_score(average="macro") and balanced_accuracy_score).

usage: basicnet_eval.py MODEL.safetensors FASHION_MNIST_DIR N
"""
import gzip
import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import balanced_accuracy_score, f1_score

from st import load_file


class Net(nn.Module):  # pytorch/examples mnist/main.py
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def idx(path):
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    weights, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    net = Net()
    net.load_state_dict(load_file(weights), strict=True)
    net.eval()
    images = torch.from_numpy(idx(f"{root}/t10k-images-idx3-ubyte.gz")[:n].copy()).float().div(255).unsqueeze(1)
    labels = torch.from_numpy(idx(f"{root}/t10k-labels-idx1-ubyte.gz")[:n].astype(np.int64))
    x = (images - 0.1307) / 0.3081  # transforms.Normalize((0.1307,), (0.3081,))
    with torch.no_grad():
        out = net(x)
    pred = out.argmax(1)
    print(json.dumps({"eval_loss": F.nll_loss(out, labels).item(),
                      "eval_accuracy": (pred == labels).sum().item() / n, "examples": n,
                      "eval_f1_macro": f1_score(labels.numpy(), pred.numpy(), average="macro", zero_division=0),
                      "eval_balanced_accuracy": balanced_accuracy_score(labels.numpy(), pred.numpy())}))


if __name__ == "__main__":
    main()
