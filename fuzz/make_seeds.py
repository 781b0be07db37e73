#!/usr/bin/python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (committed; run again only to change them).

Each seed is a small valid input of the target's format (see the comment atop each
fuzz/<target>_fuzz.cpp), plus a few near misses, so the fuzzer starts inside the format.
Usage: fuzz/make_seeds.py [CHECKPOINT_FOLDER]  (a checkpoint of recipes/quickstart.yaml, for the
checkpoint target's trainer_state.json; without it that target's seeds are left as they are).
"""
import gzip
import io
import json
import os
import struct
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, arr) in tensors.items():
        raw = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def idx(arr):
    return bytes([0, 0, 8, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape) + arr.astype(np.uint8).tobytes()


def image(fmt, w, h, mode="RGB", **kw):
    rng = np.random.default_rng(w * h)
    arr = rng.integers(0, 256, (h, w, 3) if mode == "RGB" else (h, w), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr, mode).save(out, fmt, **kw)
    return out.getvalue()


def tar(members, fmt=None):
    """A tar of (name, bytes) members, fixed times, as webdataset's TarWriter writes shards."""
    import tarfile
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt or tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o444
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def shard_seeds():
    """shard: WebDataset shards (shards/tar_samples.cpp's ShardReader): samples of png/cls/json fields, odd
    names, a PAX long name, a gzip shard, a truncated one, a duplicate field."""
    import tarfile
    png = io.BytesIO()
    Image.new("RGB", (3, 2), (10, 20, 30)).save(png, "PNG")
    members = [("000000.png", png.getvalue()), ("000000.cls", b"1"), ("000001.jpg", b"\xff\xd8\xff"),
               ("000001.json", b'{"label": 2}'), ("a.b/c.seg.png", b"x"), ("__meta__", b"m"), ("noext", b"n")]
    shard = tar(members)
    put("shard", "shard.tar", shard)
    put("shard", "pax.tar", tar([("d/" + "n" * 150 + ".txt", b"long"), ("d/.x.cls", b"3")], tarfile.PAX_FORMAT))
    put("shard", "shard.tar.gz", gzip.compress(shard, mtime=0))
    put("shard", "truncated.tar", shard[:1300])
    put("shard", "duplicate.tar", tar([("k.cls", b"1"), ("k.CLS", b"2")]))


def label_file_seeds():
    """label_file: image_csv's labels file; the first byte is the format (even: CSV, odd: JSON
    lines) and bit 1 multilabel false. The root has a.png and b.png."""
    put("label_file", "planet.csv", b"\x00image_name,tags\na.png,haze primary\nb.png,clear\n")
    put("label_file", "pipes.csv", b'\x00image,labels\na.png,"dog | outdoor, sunny"\nb.png,dog|cat\n')
    put("label_file", "wide.csv", b"\x00image,sky,sea,sand\na.png,1,0,1\nb.png,0,1,0\n")
    put("label_file", "single.csv", b"\x02id,label\na.png,cat\nb.png,dog\n")
    put("label_file", "bad-rows.csv", b"\x00image,labels\na.png,x\na.png,y\nc.png,x\nb.png,\n")
    put("label_file", "bad-quote.csv", b'\x00image,labels\na.png,"x\ny"z\n')
    put("label_file", "lines.jsonl", b'\x01{"image": "a.png", "labels": ["x", "y"]}\n{"image": "b.png", "label": 3}\n')
    put("label_file", "bad.jsonl", b'\x01{"image": "a.png", "labels": [1.5]}\n[1]\n')


def main():
    shard_seeds()
    label_file_seeds()
    rng = np.random.default_rng(0)
    # recipe: every shipped recipe, and one with overrides and ${...} variables.
    recipes = os.path.join(HERE, "..", "recipes")
    for name in sorted(os.listdir(recipes)):
        if name.endswith(".yaml"):
            put("recipe", name, open(os.path.join(recipes, name)).read())
    put("recipe", "overrides.yaml",
        "#overrides: 3\noptimizer.lr=3e-4\ndata.train_transforms.0.size=32\nworld={nproc_per_node: 2}\n"
        "name: x\nmodel: {name: basicnet}\ndata: {dataset: {name: mnist, root: '${recipe_dir}/d'}}\n"
        "output: {dir: 'runs/${name}'}\noptimizer: {name: adamw, lr: 1e-3}\n")
    put("recipe", "anchors.yaml", "a: &x {name: sgd, lr: 0.1}\noptimizer: *x\nmodel: {name: resnet18, drop_path_rate: 0.5}\n")

    # safetensors: trainrun's own layout, a lying offset, a truncated file, metadata only.
    st = safetensors({"fc.weight": ("F32", rng.standard_normal((4, 3)).astype(np.float32)),
                      "fc.bias": ("F32", np.zeros(4, np.float32)),
                      "bn.num_batches_tracked": ("I64", np.array(3, np.int64)),
                      "half": ("F16", np.ones((2, 2), np.float16)), "bf": ("BF16", np.ones(2, np.uint16))},
                     {"format": "pt"})
    put("safetensors", "model.safetensors", st)
    put("safetensors", "truncated.safetensors", st[:-7])
    lie = json.loads(st[8:8 + struct.unpack("<Q", st[:8])[0]])
    lie["fc.weight"]["shape"] = [4000000000, 4000000000]
    put("safetensors", "lying.safetensors", struct.pack("<Q", len(json.dumps(lie))) + json.dumps(lie).encode() + st[8 + struct.unpack("<Q", st[:8])[0]:])
    put("safetensors", "empty.safetensors", safetensors({}, {"format": "pt"}))

    # idx: images and labels, raw and gzip, and a short one.
    images = idx(rng.integers(0, 256, (3, 4, 5)))
    labels = idx(rng.integers(0, 10, (3,)))
    put("idx", "images-idx3-ubyte", images)
    put("idx", "labels-idx1-ubyte", labels)
    put("idx", "images-idx3-ubyte.gz", gzip.compress(images, mtime=0))
    put("idx", "truncated-idx3-ubyte", images[:-5])

    # stl10: four little-endian lengths, then train_X, train_y, test_X, test_y, class_names.txt.
    side = 96 * 96 * 3
    def stl(n_train, n_test, names=None, bad_label=False):
        tx = rng.integers(0, 256, n_train * side, dtype=np.uint8).tobytes()
        ty = bytes(rng.integers(1, 11, n_train).tolist())
        ex = rng.integers(0, 256, n_test * side, dtype=np.uint8).tobytes()
        ey = bytes([0 if bad_label else 3] * n_test)
        parts = [tx, ty, ex, ey]
        return b"".join(struct.pack("<I", len(p)) for p in parts) + b"".join(parts) + (names or b"")
    put("stl10", "two-and-one", stl(2, 1))
    put("stl10", "class-names", stl(1, 1, b"airplane\nbird\ncar\ncat\n"))
    put("stl10", "bad-label", stl(1, 1, bad_label=True))

    # image: 3 bytes (channels, crop size, crop offset), then the file.
    put("image", "baseline.jpg", b"\x01\x40\x80" + image("JPEG", 40, 30, quality=90))
    put("image", "progressive.jpg", b"\x00\x10\x10" + image("JPEG", 33, 17, quality=50, progressive=True))
    put("image", "gray.jpg", b"\x01\x00\xff" + image("JPEG", 16, 16, mode="L"))
    put("image", "subsampled.jpg", b"\x01\xc0\x20" + image("JPEG", 50, 21, subsampling=2))
    put("image", "image.png", b"\x01\x20\x20" + image("PNG", 12, 9))
    put("image", "truncated.jpg", b"\x01\x40\x40" + image("JPEG", 64, 48)[:300])

    # launcher_env: NUL-separated values in fuzz/launcher_env_fuzz.cpp's order.
    order = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
             "NNODES", "TRAINRUN_LAUNCHER", "TRAINRUN_INIT_METHOD", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID",
             "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_NODELIST",
             "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK"]
    def env(**values):
        return "\0".join(values.get(k, "") for k in order)
    put("launcher_env", "torchrun", env(RANK="1", WORLD_SIZE="4", LOCAL_RANK="1", LOCAL_WORLD_SIZE="2", GROUP_RANK="0",
                                        MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", TRAINRUN_LAUNCHER="torchrun"))
    put("launcher_env", "srun", env(SLURM_PROCID="3", SLURM_NTASKS="4", SLURM_STEP_ID="0", SLURM_LOCALID="1",
                                    SLURM_TASKS_PER_NODE="2(x2)", SLURM_NODEID="1", SLURM_NODELIST="node[003-004,7]"))
    put("launcher_env", "mpirun", env(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="0",
                                      OMPI_COMM_WORLD_LOCAL_SIZE="2", OMPI_COMM_WORLD_NODE_RANK="0", MASTER_PORT="0"))

    # checkpoint: trainer_state.json \0 scheduler.json \0 scaler.json [\0 model.safetensors].
    if len(sys.argv) > 1:
        folder = sys.argv[1]
        state = open(os.path.join(folder, "trainer_state.json"), "rb").read()
        resume = os.path.join(folder, "trainrun_state.json")
        if os.path.exists(resume):  # the target reads trainrun's own state from "trainrun", the older layout
            merged = json.loads(state)
            merged["trainrun"] = json.load(open(resume))
            state = (json.dumps(merged, indent=2) + "\n").encode()
        sched = b'{"base_lrs": [0.001], "step": 7}'
        scaler = b'{"enabled": false, "growth_tracker": 0, "scale": 65536.0}'
        put("checkpoint", "saved", state + b"\0" + sched + b"\0" + scaler)
        put("checkpoint", "state-only", state)
        put("checkpoint", "wrong-model", state + b"\0" + sched + b"\0" + scaler + b"\0" +
            safetensors({"fc1.weight": ("F32", np.zeros((2, 2), np.float32))}))


if __name__ == "__main__":
    main()
