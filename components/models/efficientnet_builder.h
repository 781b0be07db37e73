// timm's _efficientnet_builder.py for the EfficientNet and MobileNetV3 family (efficientnet.cpp),
// internal to components/models: an architecture's arguments, and the builder that decodes its
// block strings and builds the blocks (efficientnet_builder.cpp).
#pragma once

#include "components/models/efficientnet_blocks.h"
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainrun::effnet {

enum class Head { EfficientNet, MobileNetV3 };

// The architecture, as the arguments of timm's _gen_efficientnet / _gen_mobilenet_v3.
struct EfficientNetArgs {
  Head head = Head::EfficientNet;
  std::vector<std::vector<std::string>> arch_def{};  // timm's block strings, one list per stage
  double channel_multiplier = 1.0;
  double depth_multiplier = 1.0;
  int64_t stem_size = 32;
  bool fix_stem = false;        // stem channels not scaled by the width multiplier
  int64_t num_features = 1280;  // conv_head's output channels (EfficientNet: scaled by the width multiplier)
  Act act = Act::SiLU;          // the model's default activation
  SEStyle se{};
};

struct Options : TimmKeys {
  EfficientNetArgs arch;
  PretrainedCfg weights;
};

// timm's round_channels: a channel count under the width multiplier.
int64_t round_channels(int64_t channels, double multiplier);

// timm's EfficientNetBuilder.__call__ + _make_block: stage by stage, only a stage's first block
// strides; stochastic depth drop_path_rate * block_idx / block_count over all blocks. `in_chs`
// goes from the stem's channels to the last block's (timm's builder.in_chs).
std::vector<std::vector<std::shared_ptr<Block>>> build_blocks(const Options& o, int64_t& in_chs);

}  // namespace trainrun::effnet
