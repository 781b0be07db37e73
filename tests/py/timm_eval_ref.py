"""timm's eval preprocessing on real torchvision transforms, for tests/components/timm_eval_test.cpp.

usage: timm_eval_ref.py CASES.json

CASES.json: [{"input_size": [C, H, W], "crop_pct": p, "crop_mode": "center"|"squash",
              "interpolation": "bilinear", "image": [h, w]}, ...]
Prints one JSON line per case: {"scale_size": [sh, sw], "first": ["Resize"|"ResizeKeepRatio", size],
"resized": [h, w], "output": [C, H, W]}: the transform list transforms_imagenet_eval builds for the
pretrained_cfg, and the sizes a PIL image of h x w has after the resize and at the end.

timm is not packaged for Debian, so its code is re-derived here, from huggingface/pytorch-image-models
at aa4b5850c1543fa488abf260f18390eda46cf85d:
  - timm/data/config.py resolve_data_config: the pretrained_cfg's input_size, interpolation,
    crop_pct, crop_mode, mean, std taken as they are (args empty, use_test_size=False);
  - timm/data/transforms_factory.py create_transform(is_training=False) -> img_size =
    input_size[-2:] -> transforms_imagenet_eval (its crop_mode 'center' and 'squash' branches);
  - timm/data/transforms.py ResizeKeepRatio.get_params (longest=0., no random scale or aspect).
torchvision's own Resize, CenterCrop, ToTensor and Normalize do the rest, as in timm.
"""
import json
import math
import sys

import torch
from PIL import Image
from torchvision import transforms
from torchvision.transforms import functional as F

DEFAULT_CROP_PCT = 0.875  # timm/data/constants.py


class ResizeKeepRatio:
    """timm.data.transforms.ResizeKeepRatio(size) as transforms_imagenet_eval constructs it."""

    def __init__(self, size, longest=0., interpolation="bilinear"):
        self.size = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
        self.longest = float(longest)
        self.interpolation = F.InterpolationMode(interpolation)

    @staticmethod
    def get_params(img, target_size, longest):
        img_h, img_w = img_size = F.get_dimensions(img)[1:]
        target_h, target_w = target_size
        ratio_h = img_h / target_h
        ratio_w = img_w / target_w
        ratio = max(ratio_h, ratio_w) * longest + min(ratio_h, ratio_w) * (1. - longest)
        ratio_factor = (1., 1.)
        return [round(x * f / ratio) for x, f in zip(img_size, ratio_factor)]

    def __call__(self, img):
        return F.resize(img, self.get_params(img, self.size, self.longest), self.interpolation)


def transforms_imagenet_eval(img_size, crop_pct, crop_mode, interpolation, mean, std):
    crop_pct = crop_pct or DEFAULT_CROP_PCT
    if isinstance(img_size, (tuple, list)):
        assert len(img_size) == 2
        scale_size = tuple([math.floor(x / crop_pct) for x in img_size])
    else:
        scale_size = math.floor(img_size / crop_pct)
        scale_size = (scale_size, scale_size)
    interp = F.InterpolationMode(interpolation)
    if crop_mode == "squash":
        tfl = [transforms.Resize(scale_size, interpolation=interp), transforms.CenterCrop(img_size)]
    else:
        assert crop_mode == "center"
        if scale_size[0] == scale_size[1]:
            tfl = [transforms.Resize(scale_size[0], interpolation=interp)]
        else:
            tfl = [ResizeKeepRatio(scale_size)]  # no interpolation passed: bilinear, as in timm
        tfl += [transforms.CenterCrop(img_size)]
    tfl += [transforms.ToTensor(), transforms.Normalize(mean=torch.tensor(mean), std=torch.tensor(std))]
    return scale_size, transforms.Compose(tfl)


def main():
    for case in json.load(open(sys.argv[1])):
        input_size = case["input_size"]
        img_size = input_size[-2:]  # create_transform
        channels = input_size[0]
        scale_size, tf = transforms_imagenet_eval(img_size, case["crop_pct"], case.get("crop_mode", "center"),
                                                  case.get("interpolation", "bilinear"), [0.5] * channels,
                                                  [0.25] * channels)
        first = tf.transforms[0]
        h, w = case["image"]
        img = Image.new("RGB" if channels == 3 else "L", (w, h))
        resized = first(img)
        out = tf(img)
        print(json.dumps({
            "scale_size": list(scale_size),
            "first": [type(first).__name__, first.size if isinstance(first.size, int) else list(first.size)],
            "resized": [resized.height, resized.width],
            "output": list(out.shape),
        }))


if __name__ == "__main__":
    main()
