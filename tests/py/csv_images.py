"""Images listed in CSV files for examples/custom_dataset (tests/install/install_test.cpp): 28x28
grayscale PNGs of two classes, 'dark' (pixels near 50) and 'light' (near 200), written by PIL,
and train.csv / eval.csv of `path,label` rows, paths relative to the CSVs.

    python3 tests/py/csv_images.py OUT_DIR N_TRAIN N_EVAL
"""
import os
import sys

import numpy as np
from PIL import Image

out, n_train, n_eval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(os.path.join(out, "images"), exist_ok=True)
rng = np.random.default_rng(0)
for split, n in (("train", n_train), ("eval", n_eval)):
    rows = ["path,label"]
    for i in range(n):
        label = ("dark", "light")[i % 2]
        level = 50 if label == "dark" else 200
        pixels = np.clip(rng.normal(level, 20, (28, 28)), 0, 255).astype(np.uint8)
        name = f"images/{split}_{i}.png"
        Image.fromarray(pixels).save(os.path.join(out, name))
        rows.append(f"{name},{label}")
    with open(os.path.join(out, f"{split}.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
