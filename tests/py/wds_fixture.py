#!/usr/bin/env python3
"""WebDataset shards for the webdataset tests, written with Python's own tarfile as
webdataset's TarWriter writes them (USTAR, one member per field, <key>.png and <key>.cls):

    wds_fixture.py DIR TRAIN_SAMPLES PER_SHARD [EVAL_SAMPLES] [--no-label I] [--multilabel]

DIR/train-000000.tar ... and DIR/val-000000.tar ..., sizes.json ({shard: samples}) and
classes.txt (4 classes). --no-label I leaves out sample I's .cls (a sample without a label).
--multilabel: sample i has the classes {i % 4, (i // 4) % 4} (one or two), written as a Python
script would: an even i as <key>.json {"labels": [...]}, an odd one as <key>.cls "a b". Sample i is a 20-32 x 20-32 RGB PNG whose colour depends on its label
(i % 4) and on i, so a small network learns something; deterministic: the same bytes every run.
"""
import io
import json
import os
import random
import sys
import tarfile

from PIL import Image

CLASSES = ["circle", "square", "star", "wave"]


def sample_png(i, label, rng):
    w, h = 20 + i % 13, 20 + (i * 7) % 13
    img = Image.new("RGB", (w, h), (label * 60 + rng.randrange(20), rng.randrange(256), 200 - label * 40))
    px = img.load()
    for k in range(w * h // 8):
        px[rng.randrange(w), rng.randrange(h)] = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def label_field(i, multilabel):
    if not multilabel:
        return ("cls", str(i % 4).encode())
    labels = sorted({i % 4, (i // 4) % 4})
    if i % 2 == 0:
        return ("json", json.dumps({"labels": labels}).encode())
    return ("cls", " ".join(str(c) for c in labels).encode())


def write_shard(path, first, count, rng, no_label, multilabel):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(first, first + count):
            label = i % 4
            fields = [("png", sample_png(i, label, rng)), label_field(i, multilabel)]
            for field, data in fields[:1] if i == no_label else fields:
                info = tarfile.TarInfo(f"{i:06d}.{field}")
                info.size, info.mtime, info.mode, info.uname, info.gname = len(data), 0, 0o444, "bigdata", "bigdata"
                tar.addfile(info, io.BytesIO(data))


def main():
    args = sys.argv[1:]
    no_label = -1
    if "--no-label" in args:
        at = args.index("--no-label")
        no_label = int(args[at + 1])
        del args[at : at + 2]
    multilabel = "--multilabel" in args
    args = [a for a in args if a != "--multilabel"]
    out, total, per = args[0], int(args[1]), int(args[2])
    evals = int(args[3]) if len(args) > 3 else total // 4
    os.makedirs(out, exist_ok=True)
    rng = random.Random(0)
    sizes = {}
    for split, n, base in (("train", total, 0), ("val", evals, 1_000_000)):
        for k, start in enumerate(range(0, n, per)):
            name = f"{split}-{k:06d}.tar"
            count = min(per, n - start)
            write_shard(os.path.join(out, name), base + start, count, rng, no_label, multilabel)
            sizes[name] = count
    with open(os.path.join(out, "sizes.json"), "w") as f:
        json.dump(sizes, f, indent=1)
    with open(os.path.join(out, "classes.txt"), "w") as f:
        f.write("\n".join(CLASSES) + "\n")


if __name__ == "__main__":
    main()
