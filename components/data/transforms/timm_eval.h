// `data.eval_transforms: model`: the evaluation preprocessing pretrained weights were published
// with, as timm builds it: resolve_data_config(pretrained_cfg=...) then
// create_transform(**data_config, is_training=False), i.e. transforms_imagenet_eval
// (timm/data/config.py and timm/data/transforms_factory.py, huggingface/pytorch-image-models at
// aa4b5850c1543fa488abf260f18390eda46cf85d), written as a list of this project's transforms:
//
//   scale = [floor(H / crop_pct), floor(W / crop_pct)]      (input_size = C, H, W)
//   crop_mode center, H == W:  resize {size: scale[0], interpolation}    (the shorter side, as
//                              torchvision's Resize(int))
//   crop_mode center, H != W:  resize_keep_ratio {size: scale}           (timm's ResizeKeepRatio;
//                              bilinear, as timm constructs it there without the interpolation)
//   crop_mode squash:          resize {size: scale, interpolation}       (both sides, aspect not kept)
//   then                       center_crop {size: [H, W]}, to_tensor, normalize {mean, std}
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

// The keys of timm's pretrained_cfg that decide evaluation preprocessing (its data_config).
struct EvalDataConfig {
  std::vector<int64_t> input_size;  // C, H, W
  std::string interpolation = "bicubic";
  double crop_pct = 0.875;
  std::string crop_mode = "center";
  std::vector<double> mean, std;
  // false: no resize and no crop, the images are evaluated at the size they come in
  // (BasicNet, whose MNIST example evaluates with ToTensor + Normalize only).
  bool resize_and_crop = true;
};

// timm's config.json as push_to_hf_hub writes it ({"architecture", "num_classes",
// "pretrained_cfg": {...}}), or the older flat form timm still reads (the pretrained_cfg keys at
// the top, beside "architecture"). input_size, interpolation, crop_pct, mean and std are required;
// crop_mode defaults to center (timm's DEFAULT_CROP_MODE; configs written before timm 0.9 have
// none). std::invalid_argument naming the key at fault ("pretrained_cfg.crop_pct: ...").
EvalDataConfig eval_data_config_from_json(const std::string& text);

// The transform list above, as `data.eval_transforms` holds it ([{name: {params}}, ...]).
YAML::Node timm_eval_transform_list(const EvalDataConfig& config);

}  // namespace trainrun
