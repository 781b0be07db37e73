// timm's _efficientnet_builder.py (efficientnet_builder.h): the block strings decoded as
// _decode_block_str and decode_arch_def read them, each stage's depth scaled, and the blocks built
// stage by stage as EfficientNetBuilder does.
#include "components/models/efficientnet_builder.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace trainrun::effnet {
namespace {

// One block string, as timm's _decode_block_str reads it (the options these models use).
struct BlockDef {
  std::string type;  // ds = DepthwiseSeparableConv, ir = InvertedResidual, cn = ConvBnAct
  int64_t repeat = 1, kernel = 3, stride = 1, out_chs = 0;
  double exp_ratio = 1.0, se_ratio = 0.0;
  bool noskip = false, skip = false;
  std::optional<Act> act;  // n<re|hs|sw>: the block's own activation, else the model's
};

BlockDef decode_block(const std::string& text) {
  std::istringstream in(text);
  BlockDef d;
  std::getline(in, d.type, '_');
  if (d.type != "ds" && d.type != "ir" && d.type != "cn") throw std::invalid_argument("block type " + d.type + " in " + text);
  for (std::string op; std::getline(in, op, '_');) {
    if (op == "noskip" || op == "skip") {
      (op == "skip" ? d.skip : d.noskip) = true;
    } else if (op == "nre" || op == "nhs" || op == "nsw") {
      d.act = op == "nre" ? Act::ReLU : op == "nhs" ? Act::HardSwish : Act::SiLU;
    } else {
      std::size_t digit = op.find_first_of("0123456789");
      std::string key = op.substr(0, digit);
      double value = digit == std::string::npos ? 0.0 : std::stod(op.substr(digit));
      if (key == "r") d.repeat = int64_t(value);
      else if (key == "k") d.kernel = int64_t(value);
      else if (key == "s") d.stride = int64_t(value);
      else if (key == "e") d.exp_ratio = value;
      else if (key == "c") d.out_chs = int64_t(value);
      else if (key == "se") d.se_ratio = value;
      else throw std::invalid_argument("block option " + op + " in " + text);
    }
  }
  if (d.type == "ds") d.exp_ratio = 1.0;  // timm's ds block args carry no exp_ratio
  return d;
}

// timm's decode_arch_def + _scale_stage_depth (depth_trunc 'ceil'): each stage's repeats scaled by
// the depth multiplier, the extra repeats handed out from the stage's last block string backwards.
std::vector<std::vector<BlockDef>> decode_arch_def(const std::vector<std::vector<std::string>>& arch, double depth_multiplier) {
  std::vector<std::vector<BlockDef>> stages;
  for (const auto& strings : arch) {
    std::vector<BlockDef> defs;
    int64_t repeats = 0;
    for (const auto& s : strings) {
      defs.push_back(decode_block(s));
      repeats += defs.back().repeat;
    }
    int64_t scaled = int64_t(std::ceil(double(repeats) * depth_multiplier));
    std::vector<int64_t> counts(defs.size());
    for (std::size_t i = defs.size(); i-- > 0;) {
      int64_t r = defs[i].repeat;
      counts[i] = std::max<int64_t>(1, python_round(double(r) / double(repeats) * double(scaled)));
      repeats -= r;
      scaled -= counts[i];
    }
    std::vector<BlockDef> stage;
    for (std::size_t i = 0; i < defs.size(); ++i) stage.insert(stage.end(), std::size_t(counts[i]), defs[i]);
    stages.push_back(stage);
  }
  return stages;
}

}  // namespace

int64_t round_channels(int64_t channels, double multiplier) {
  return multiplier == 0.0 ? channels : make_divisible(double(channels) * multiplier);
}

std::vector<std::vector<std::shared_ptr<Block>>> build_blocks(const Options& o, int64_t& in_chs) {
  const EfficientNetArgs& a = o.arch;
  auto stages = decode_arch_def(a.arch_def, a.depth_multiplier);
  int64_t count = 0, index = 0;
  for (const auto& s : stages) count += int64_t(s.size());
  std::vector<std::vector<std::shared_ptr<Block>>> built;
  for (const auto& stage : stages) {
    std::vector<std::shared_ptr<Block>> blocks;
    for (std::size_t b = 0; b < stage.size(); ++b, ++index) {
      const BlockDef& d = stage[b];
      BlockOptions bo;
      bo.in_chs = in_chs;
      bo.out_chs = round_channels(d.out_chs, a.channel_multiplier);
      bo.kernel = d.kernel;
      bo.stride = b == 0 ? d.stride : 1;
      bo.exp_ratio = d.exp_ratio;
      bo.act = d.act.value_or(a.act);
      bool same_shape = bo.stride == 1 && bo.in_chs == bo.out_chs;
      bo.has_skip = d.type == "cn" ? d.skip && same_shape : same_shape && !d.noskip;
      bo.se_ratio = a.se.from_exp ? d.se_ratio : d.se_ratio / d.exp_ratio;
      bo.se = a.se;
      bo.drop_path = o.drop_path_rate * double(index) / double(count);
      if (d.type == "ds") blocks.push_back(DepthwiseSeparableConv(bo).ptr());
      else if (d.type == "ir") blocks.push_back(InvertedResidual(bo).ptr());
      else blocks.push_back(ConvBnAct(bo).ptr());
      in_chs = bo.out_chs;
    }
    built.push_back(blocks);
  }
  return built;
}

}  // namespace trainrun::effnet
