#!/usr/bin/env python3
"""A multi-label image set with a known answer, made from Fashion-MNIST: each picture is two
28x28 articles side by side (56 wide, 28 high, grayscale PNG), labelled with both classes (one
label when the two are of the same class). recipes/multilabel_resnet18.yaml trains on it.

    scripts/tiled-fashion-mnist.py OUT_DIR [--train N] [--eval N] [--source DIR] [--seed S]

Writes OUT_DIR/images/{train,eval}_NNNNN.png, OUT_DIR/train.csv and OUT_DIR/eval.csv
(`image,labels`, the labels separated by `|`: Fashion-MNIST's class names hold spaces and `/`).
The left article of training picture i is training image 2i, the right one 2i + 1 of a seeded
permutation of Fashion-MNIST's training split (eval pictures: of its test split), so the set is
the same on every machine. Needs python3-numpy and python3-pil; the source is Debian's
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist: the IDX files, gzipped).
"""
import argparse
import gzip
import os

import numpy as np
from PIL import Image

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(source, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(source, name)):
            return os.path.join(source, name)
    raise SystemExit(f"tiled-fashion-mnist: no {stem}[.gz] in {source} (apt-get install dataset-fashion-mnist)")


def write(out, split, images, labels, n, rng):
    order = rng.permutation(len(images))
    if 2 * n > len(order):
        raise SystemExit(f"tiled-fashion-mnist: {n} {split} pictures need {2 * n} images; the source has {len(order)}")
    rows = ["image,labels"]
    for i in range(n):
        a, b = order[2 * i], order[2 * i + 1]
        name = f"images/{split}_{i:05d}.png"
        Image.fromarray(np.concatenate([images[a], images[b]], axis=1)).save(os.path.join(out, name))
        names = sorted({CLASSES[labels[a]], CLASSES[labels[b]]}, key=CLASSES.index)
        rows.append(f"{name},{'|'.join(names)}")
    with open(os.path.join(out, f"{split}.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=6000, help="training pictures (default 6000)")
    ap.add_argument("--eval", type=int, default=1000, help="evaluation pictures (default 1000)")
    ap.add_argument("--source", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    rng = np.random.default_rng(args.seed)
    write(args.out, "train", idx(find(args.source, "train-images-idx3-ubyte")),
          idx(find(args.source, "train-labels-idx1-ubyte")), args.train, rng)
    write(args.out, "eval", idx(find(args.source, "t10k-images-idx3-ubyte")),
          idx(find(args.source, "t10k-labels-idx1-ubyte")), args.eval, rng)
    print(f"{args.out}: {args.train} training and {args.eval} evaluation pictures (train.csv, eval.csv)")


if __name__ == "__main__":
    main()
