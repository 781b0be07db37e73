"""Reference outputs of torchvision's augmentation ops on PIL images, for tests/components/augment_test.cpp.

usage: augment_ref.py OUTDIR
Writes OUTDIR/<image>.bin (uint8 H x W x C inputs, row-major: `rgb` 120 x 157, `gray` its luma,
`square` 64 x 64) and, for each case, OUTDIR/<case>.bin with torchvision's result on the PIL image;
prints one JSON line per case: {"case", "image", "kind", "params", "shape"}. The C++ test runs the
same kind with the same params (every random draw forced) and compares bit for bit.
Also prints the policies' magnitude tables ({"case": "magnitudes", ...}) and RandomErasing's box
statistics over many draws ({"case": "erasing_stats", ...}).
"""
import json
import math
import sys

import numpy as np
import torch
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode, autoaugment
from torchvision.transforms import functional as F

out = sys.argv[1]


def photo(h, w, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([
        128 + 100 * np.sin(x / 17.0 + 1.3) * np.cos(y / 23.0),
        128 + 90 * np.sin((x + y) / 31.0),
        110 + 80 * np.cos(x / 13.0 - y / 19.0),
    ], axis=-1)
    img[20:60, 40:90] = [230, 40, 40]   # a sharp-edged block
    img[80:84, :] = [10, 200, 10]       # a thin line
    img += rng.normal(0, 8, img.shape)  # noise
    return np.clip(img, 0, 255).astype(np.uint8)


def save(name, array):
    a = np.asarray(array)
    if a.ndim == 2:
        a = a[:, :, None]
    a = np.ascontiguousarray(a, dtype=np.uint8)
    a.tofile(f"{out}/{name}.bin")
    return list(a.shape)


images = {
    "rgb": Image.fromarray(photo(120, 157, 0)),
    "square": Image.fromarray(photo(64, 64, 1)),
}
images["gray"] = images["rgb"].convert("L")
for name, im in images.items():
    print(json.dumps({"case": "input", "image": name, "shape": save(name, im)}))

count = 0


def emit(kind, image, params, result):
    global count
    count += 1
    case = f"{kind}_{count}"
    print(json.dumps({"case": case, "image": image, "kind": kind, "params": params, "shape": save(case, result)}))


NEAREST = InterpolationMode.NEAREST

# Every op of the policies with magnitudes from RandAugment's (31 bins) and TrivialAugmentWide's
# spaces, both signs, on RGB and greyscale images, as autoaugment._apply_op applies them.
ra = T.RandAugment()._augmentation_space(31, (120, 157))
ta = T.TrivialAugmentWide()._augmentation_space(31)
ops = list(ra.keys()) + ["Invert"]
for op in ops:
    mags = set()
    for space, bins in ((ra, (0, 5, 9, 17, 30)), (ta, (7, 30))):
        if op in space and space[op][0].ndim > 0:
            for b in bins:
                m = float(space[op][0][b].item())
                mags.add(m)
                if space[op][1]:
                    mags.add(-m)
    if not mags:
        mags = {0.0}
    for m in sorted(mags):
        for image in ("rgb", "gray"):
            emit("op", image, {"op": op, "magnitude": m},
                 autoaugment._apply_op(images[image], op, m, interpolation=NEAREST, fill=None))
for op, m in (("ShearX", 0.2), ("TranslateY", -30.0), ("Rotate", 25.0)):  # a fill colour
    emit("op", "rgb", {"op": op, "magnitude": m, "fill": [10, 20, 30]},
         autoaugment._apply_op(images["rgb"], op, m, interpolation=NEAREST, fill=[10, 20, 30]))
for angle in (90.0, 180.0, 270.0, -90.0, 45.0):  # PIL's transpose shortcuts on a square image
    emit("op", "square", {"op": "Rotate", "magnitude": angle},
         autoaugment._apply_op(images["square"], "Rotate", angle, interpolation=NEAREST, fill=None))

# The policies' magnitude tables.
for name, space in (("rand_augment", T.RandAugment()._augmentation_space(31, (120, 157))),
                    ("rand_augment_10", T.RandAugment()._augmentation_space(10, (120, 157))),
                    ("auto_augment", T.AutoAugment()._augmentation_space(10, (120, 157))),
                    ("trivial_augment_wide", T.TrivialAugmentWide()._augmentation_space(31))):
    table = {op: [float(v) for v in mags.tolist()] for op, (mags, _) in space.items() if mags.ndim > 0}
    print(json.dumps({"case": "magnitudes", "space": name, "bins": len(next(iter(table.values()))),
                      "height": 120, "width": 157, "table": table}))

# ColorJitter's four functions with forced factors.
for image in ("rgb", "gray"):
    for f in (0.0, 0.35, 0.8, 1.0, 1.27, 1.9):
        emit("brightness", image, {"factor": f}, F.adjust_brightness(images[image], f))
        emit("contrast", image, {"factor": f}, F.adjust_contrast(images[image], f))
        emit("saturation", image, {"factor": f}, F.adjust_saturation(images[image], f))
    for f in (-0.5, -0.31, -0.02, 0.0, 0.1, 0.25, 0.5):
        emit("hue", image, {"factor": f}, F.adjust_hue(images[image], f))

# Grayscale, Gaussian blur, rotation and affine with forced parameters.
for n in (1, 3):
    emit("grayscale", "rgb", {"channels": n}, F.rgb_to_grayscale(images["rgb"], n))
for image in ("rgb", "gray"):
    for k, s in (([5, 3], [1.3, 0.7]), ([9, 9], [2.0, 2.0]), ([3, 3], [0.1, 0.1])):
        emit("gaussian_blur", image, {"kernel": k, "sigma": s}, F.gaussian_blur(images[image], k, s))
for angle, expand, center in ((30.0, False, None), (-47.5, True, None), (123.4, True, None), (90.0, True, None),
                              (12.0, False, [10.0, 20.0]), (200.0, False, None)):
    emit("rotate", "rgb", {"angle": angle, "expand": expand, "center": center, "fill": [0, 128, 255]},
         F.rotate(images["rgb"], angle, NEAREST, expand, center, [0, 128, 255]))
for angle, translate, scale, shear in ((17.0, [5, -8], 0.8, [10.0, -5.0]), (-3.5, [0, 0], 1.25, [0.0, 0.0]),
                                       (0.0, [12, 3], 1.0, [0.0, 0.0]), (45.0, [-20, 10], 0.6, [30.0, 15.0])):
    for image in ("rgb", "gray"):
        emit("affine", image, {"angle": angle, "translate": translate, "scale": scale, "shear": shear},
             F.affine(images[image], angle, translate, scale, shear, NEAREST))

# Resize with PIL's bicubic and nearest (and bilinear, which trainrun only approximates, for the note).
for mode in ("bicubic", "nearest"):
    im = InterpolationMode(mode)
    for image in ("rgb", "gray"):
        for size in ([60, 79], [37, 41], [200, 300], [90, 250], [120, 157]):
            emit("resize", image, {"size": size, "interpolation": mode}, F.resize(images[image], size, im))
    emit("resized_crop", "rgb", {"box": [10, 20, 80, 90], "size": [64, 64], "interpolation": mode},
         F.resized_crop(images["rgb"], 10, 20, 80, 90, [64, 64], im))

# RandomErasing.get_params over many draws (default scale and ratio), for the box statistics.
torch.manual_seed(0)
img = torch.zeros(3, 120, 157)
boxes = []
for _ in range(20000):
    i, j, h, w, _v = T.RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3), [0.0])
    boxes.append((i, j, h, w))
b = np.array(boxes, dtype=np.float64)
erased = b[:, 2] < 120  # a miss returns the whole image
print(json.dumps({"case": "erasing_stats", "height": 120, "width": 157, "draws": len(b),
                  "hit_rate": float(erased.mean()),
                  "mean_area": float((b[erased, 2] * b[erased, 3]).mean() / (120 * 157)),
                  "mean_log_ratio": float(np.log(b[erased, 2] / b[erased, 3]).mean())}))
