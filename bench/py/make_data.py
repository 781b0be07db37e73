"""Synthetic data sets for bench/compare, written once into its work folder (kept between runs).

  stl10 ROOT --train N --test M   ROOT/train_X.bin ... in STL-10's binary layout: per image 3 planes
                                  (R, G, B) of 96x96 uint8, each plane column-major; labels one
                                  byte each, 1..10 (components/data/sources/stl10.cpp reads it so).
  pets ROOT --images N            N 500x375 JPEG "photos" named like Oxford-IIIT Pet's files
                                  (Abyssinian_1.jpg, beagle_1.jpg, ...; 4 breeds): smooth colour
                                  fields plus sensor-like noise, so that they decode and compress
                                  like photographs rather than like flat or random images.
                                  --jobs J: J processes, each image from its own seed (other
                                  pixels than --jobs 1's single stream; the same cost).
  mnist ROOT                      60,000 + 10,000 random 28x28 images and labels 0..9 in the
                                  IDX .gz files of (Fashion-)MNIST, for machines without Debian's
                                  dataset-fashion-mnist (GPU boxes): the basicnet rows' speed only.

  fashion-pets ROOT --images N     the first N Fashion-MNIST training images (Debian's
                                  dataset-fashion-mnist), real pictures with real labels, as
                                  RGB JPEGs of --size pixels named like the pets files
                                  (Trouser_17.jpg): the pets recipe's folder layout and label
                                  regex on data a model can learn, for accuracy at convergence.

For stl10 and pets the content only has to cost what real images cost to read: the labels are random.
"""
import argparse
import gzip
import os
from multiprocessing import Pool

import numpy as np
from PIL import Image

BREEDS = ["Abyssinian", "Bengal", "beagle", "pug"]


def write_stl10(root, n_train, n_test, seed=0):
    rng = np.random.default_rng(seed)
    os.makedirs(root, exist_ok=True)
    for split, n in (("train", n_train), ("test", n_test)):
        x_path, y_path = os.path.join(root, f"{split}_X.bin"), os.path.join(root, f"{split}_y.bin")
        if os.path.exists(y_path) and os.path.getsize(y_path) == n and os.path.getsize(x_path) == n * 3 * 96 * 96:
            continue
        with open(x_path + ".tmp", "wb") as f:
            for start in range(0, n, 256):
                hwc = rng.integers(0, 256, (min(256, n - start), 96, 96, 3), dtype=np.uint8)
                f.write(np.ascontiguousarray(hwc.transpose(0, 3, 2, 1)).tobytes())  # [y][x][c] -> [c][x][y]
        rng.integers(1, 11, n, dtype=np.uint8).tofile(y_path + ".tmp")
        os.replace(x_path + ".tmp", x_path)
        os.replace(y_path + ".tmp", y_path)


def photo(rng, width=500, height=375):
    """A smooth random colour field (a bicubic blow-up of a few control points), a light gradient and noise."""
    coarse = rng.integers(0, 256, (rng.integers(3, 7), rng.integers(4, 9), 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse).resize((width, height), Image.BICUBIC), dtype=np.float32)
    field += np.linspace(-30, 30, width, dtype=np.float32)[None, :, None] * rng.uniform(-1, 1)
    field += rng.normal(0, 6, field.shape).astype(np.float32)
    return Image.fromarray(np.clip(field, 0, 255).astype(np.uint8))


def write_pets(root, n, seed=0, jobs=1):
    os.makedirs(root, exist_ok=True)
    names = [f"{BREEDS[i % len(BREEDS)]}_{i // len(BREEDS) + 1}.jpg" for i in range(n)]
    for stale in set(f for f in os.listdir(root) if f.endswith(".jpg")) - set(names):
        os.remove(os.path.join(root, stale))  # the split sizes depend on the file count
    if all(os.path.exists(os.path.join(root, name)) for name in names):
        return
    if jobs > 1:
        with Pool(jobs) as pool:
            pool.starmap(write_photo, [(os.path.join(root, name), (seed, i)) for i, name in enumerate(names)])
        return
    rng = np.random.default_rng(seed)
    for name in names:
        photo(rng).save(os.path.join(root, name), quality=90)


def write_photo(path, seed):
    photo(np.random.default_rng(seed)).save(path, quality=90)


def write_idx(path, array):
    """An IDX file (MNIST's format): 0, 0, type 0x08 (ubyte), the rank, big-endian dims, the bytes."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path + ".tmp", "wb", compresslevel=1) as f:
        f.write(header + array.tobytes())
    os.replace(path + ".tmp", path)


def write_mnist(root, seed=0):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(seed)
    for prefix, n in (("train", 60000), ("t10k", 10000)):
        images = os.path.join(root, f"{prefix}-images-idx3-ubyte.gz")
        if not os.path.exists(images):
            write_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"), rng.integers(0, 10, n, dtype=np.uint8))
            write_idx(images, rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))


FASHION = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle-boot"]


def write_fashion_pets(root, n, size, source="/usr/share/datasets/fashion-mnist"):
    os.makedirs(root, exist_ok=True)
    with gzip.open(os.path.join(source, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with gzip.open(os.path.join(source, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    for i, (image, label) in enumerate(zip(images, labels)):
        path = os.path.join(root, f"{FASHION[label]}_{i + 1}.jpg")
        if not os.path.exists(path):
            Image.fromarray(image).convert("RGB").resize((size, size), Image.BICUBIC).save(path, quality=95)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["stl10", "pets", "fashion-pets", "mnist"])
    ap.add_argument("root")
    ap.add_argument("--train", type=int, default=3200)
    ap.add_argument("--test", type=int, default=64)
    ap.add_argument("--images", type=int, default=320)
    ap.add_argument("--size", type=int, default=64, help="fashion-pets: image side in pixels")
    ap.add_argument("--jobs", type=int, default=1, help="pets: processes writing images")
    args = ap.parse_args()
    if args.kind == "stl10":
        write_stl10(args.root, args.train, args.test)
    elif args.kind == "pets":
        write_pets(args.root, args.images, jobs=args.jobs)
    elif args.kind == "mnist":
        write_mnist(args.root)
    else:
        write_fashion_pets(args.root, args.images, args.size)


if __name__ == "__main__":
    main()
