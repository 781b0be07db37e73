"""Reference outputs of torchvision's transforms on PIL images, for tests/components/transforms_test.cpp.

usage: transforms_ref.py OUTDIR
Writes OUTDIR/image.jpg (a 500x375 photo-like JPEG: smooth colour fields, edges, noise), then for
each case OUTDIR/<case>.bin (the uint8 H x W x C result, row-major) and prints one JSON line
{"case", "shape"}. The C++ test decodes image.jpg itself and applies the same transforms.
"""
import json
import sys

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import functional as F
from torchvision import transforms as T

out = sys.argv[1]
rng = np.random.default_rng(0)
h, w = 375, 500
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
img = np.stack([
    128 + 100 * np.sin(x / 37.0 + 1.3) * np.cos(y / 53.0),
    128 + 90 * np.sin((x + y) / 71.0),
    128 + 80 * np.cos(x / 23.0 - y / 41.0),
], axis=-1)
img[100:220, 150:330] = [230, 40, 40]            # a sharp-edged block
img[250:260, :] = [10, 200, 10]                  # a thin line
img += rng.normal(0, 6, img.shape)               # sensor-like noise
Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(f"{out}/image.jpg", quality=90)

pil = Image.open(f"{out}/image.jpg").convert("RGB")

# The same picture tagged "rotate 90 on display" (EXIF orientation 6): torchvision's loader
# ignores the tag, so must we.
exif = Image.Exif()
exif[0x0112] = 6
pil.save(f"{out}/image_exif.jpg", quality=90, exif=exif)


def emit(case, result):
    a = np.asarray(result)
    if a.ndim == 2:
        a = a[:, :, None]
    a = np.ascontiguousarray(a, dtype=np.uint8)
    a.tofile(f"{out}/{case}.bin")
    print(json.dumps({"case": case, "shape": list(a.shape)}))


emit("decode_rgb", pil)
emit("decode_exif", Image.open(f"{out}/image_exif.jpg").convert("RGB"))
emit("decode_gray", Image.open(f"{out}/image.jpg").convert("L"))
emit("resize_224", T.Resize(224)(pil))                  # shorter side 224: 224 x 298
emit("resize_100x150", T.Resize([100, 150])(pil))
emit("resize_32", T.Resize(32)(pil))                    # strong shrink
emit("resize_600x800", T.Resize([600, 800])(pil))      # enlarge
emit("resize_200x700", T.Resize([200, 700])(pil))      # shrink h, enlarge w
emit("center_crop_224", T.CenterCrop(224)(pil))
emit("center_crop_301x199", T.CenterCrop([301, 199])(pil))
emit("center_crop_400x600", T.CenterCrop([400, 600])(pil))   # larger than the image: padded
emit("resized_crop_50_60_200_150_224", F.resized_crop(pil, 50, 60, 200, 150, [224, 224]))
emit("resized_crop_10_20_80_90_224", F.resized_crop(pil, 10, 20, 80, 90, [224, 224]))  # enlarges
emit("resized_crop_30_40_330_410_224", F.resized_crop(pil, 30, 40, 330, 410, [224, 224]))  # shrinks
emit("resized_crop_5_0_370_180_224", F.resized_crop(pil, 5, 0, 370, 180, [224, 224]))  # shrinks h, enlarges w
emit("hflip", F.hflip(pil))

# RandomResizedCrop.get_params over many draws (default scale and ratio): the statistics the
# C++ sampler must reproduce.
torch.manual_seed(0)
ph, pw, draws = 375, 500, 20000
boxes = np.array([T.RandomResizedCrop.get_params(torch.empty(3, ph, pw), [0.08, 1.0], [3 / 4, 4 / 3])
                  for _ in range(draws)], dtype=np.float64)  # i, j, h, w
print(json.dumps({"case": "rrc_stats", "height": ph, "width": pw, "draws": draws,
                  "mean_area": float((boxes[:, 2] * boxes[:, 3]).mean() / (ph * pw)),
                  "mean_log_ratio": float(np.log(boxes[:, 3] / boxes[:, 2]).mean()),
                  "mean_top": float((boxes[:, 0] / ph).mean()), "mean_left": float((boxes[:, 1] / pw).mean())}))

# Shapes where no try can fit (scale >= 0.9 with an extreme aspect): the centre fallback.
fallback = []
for fh, fw in [(10, 1000), (1000, 10), (7, 333), (401, 9)]:
    i, j, bh, bw = T.RandomResizedCrop.get_params(torch.empty(3, fh, fw), [0.9, 1.0], [3 / 4, 4 / 3])
    fallback.append([fh, fw, i, j, bh, bw])
print(json.dumps({"case": "rrc_fallback", "boxes": fallback}))
