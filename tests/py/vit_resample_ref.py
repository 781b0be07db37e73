"""timm's resample_abs_pos_embed, the reference for a ViT's pos_embed resampled to another img_size
(tests/components/vit_test.cpp, ViT.PretrainedPosEmbedIsResampledAsTimm).

usage: vit_resample_ref.py --timm TIMM_SRC --out tests/data/vit_pos_embed_resample.json

Runs the real timm (huggingface/pytorch-image-models at aa4b5850c1543fa488abf260f18390eda46cf85d,
timm 1.0.29.dev0, its source unpacked at TIMM_SRC; not committed here) and writes the numbers:
a formula pos_embed [1, 1 + 14 * 14, 4] (class token first, as vit_*_patch16_224's) resampled as
timm's checkpoint_filter_fn does for a model of another img_size: resample_abs_pos_embed(posemb,
new_size=model.patch_embed.grid_size, num_prefix_tokens=1, interpolation='bicubic',
antialias=True), to a 24 x 24 grid (img_size 384) and to a 7 x 7 one (img_size 112: there the
antialias filter widens). The class token's entry must come through as it is.
"""
import argparse
import json
import sys

import torch

TIMM_COMMIT = "aa4b5850c1543fa488abf260f18390eda46cf85d"


def formula_pos_embed(grid, dim):
    """Smooth in the grid, different per channel, the class token apart: what an image resize keeps."""
    t = torch.arange(1 + grid * grid, dtype=torch.float64)[:, None]
    d = torch.arange(dim, dtype=torch.float64)[None, :]
    v = torch.sin(0.37 * t + 1.3 * d) * 0.02 + 0.001 * d
    return v.to(torch.float32)[None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timm", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.timm)
    import timm
    from timm.layers import resample_abs_pos_embed

    posemb = formula_pos_embed(14, 4)
    cases = []
    for img_size in (384, 112):
        grid = img_size // 16
        out = resample_abs_pos_embed(posemb, new_size=[grid, grid], num_prefix_tokens=1,
                                     interpolation="bicubic", antialias=True)
        cases.append({"img_size": img_size, "grid": grid, "shape": list(out.shape),
                      "pos_embed": out.flatten().tolist()})
    doc = {"timm_commit": TIMM_COMMIT, "timm_version": timm.__version__, "torch": torch.__version__,
           "input_shape": list(posemb.shape), "input": posemb.flatten().tolist(), "cases": cases}
    with open(a.out, "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()
