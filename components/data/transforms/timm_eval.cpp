// timm's eval preprocessing (timm_eval.h) and the one transform of it torchvision has no name
// for, timm's ResizeKeepRatio.
#include "components/data/transforms/timm_eval.h"

#include "components/data/transform.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace trainrun {
namespace {

using nlohmann::json;

// A list in flow style, numbers as the shortest text that reads back the same (0.485, not
// 0.48499999999999999), as normalize's `mean: model` is written into the resolved recipe.
template <class T>
YAML::Node flow_list(const std::vector<T>& values) {
  YAML::Node out(YAML::NodeType::Sequence);
  for (const T& v : values) out.push_back(fmt::format("{}", v));
  out.SetStyle(YAML::EmitterStyle::Flow);
  return out;
}

YAML::Node transform_entry(const std::string& name, const YAML::Node& params) {
  YAML::Node entry(YAML::NodeType::Map);
  entry[name] = params;
  return entry;
}

// One pretrained_cfg key, read as timm's PretrainedCfg fields are typed; `where` is the key's
// name as the user reads it in config.json ("pretrained_cfg.crop_pct").
class CfgReader {
 public:
  CfgReader(const json& cfg, std::string prefix) : cfg_(cfg), prefix_(std::move(prefix)) {}

  bool has(const std::string& key) const { return cfg_.contains(key) && !cfg_.at(key).is_null(); }

  const json& required(const std::string& key) const {
    if (!has(key)) fail(key, "missing (timm writes it in every pretrained_cfg)");
    return cfg_.at(key);
  }

  std::vector<int64_t> input_size() const {
    const json& v = required("input_size");
    if (!v.is_array() || v.size() != 3)
      fail("input_size", "expected [channels, height, width], got " + v.dump());
    std::vector<int64_t> out;
    for (const json& x : v) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        fail("input_size", "expected three positive integers, got " + v.dump());
      out.push_back(x.get<int64_t>());
    }
    return out;
  }

  std::string word(const std::string& key, const json& v, const std::vector<std::string>& supported,
                   const std::string& others) const {
    if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
    std::string s = v.get<std::string>(), all;
    for (const auto& w : supported) {
      if (s == w) return s;
      all += (all.empty() ? "" : ", ") + w;
    }
    fail(key, v.dump() + " is not supported here (" + all + ")" + others);
  }

  double crop_pct() const {
    const json& v = required("crop_pct");
    if (!v.is_number()) fail("crop_pct", "expected a number, got " + v.dump());
    double x = v.get<double>();
    if (!(x > 0.0 && x <= 1.0)) fail("crop_pct", "must be in (0, 1], got " + v.dump());
    return x;
  }

  std::vector<double> per_channel(const std::string& key, std::size_t channels, bool positive) const {
    const json& v = required(key);
    if (!v.is_array() || v.size() != channels)
      fail(key, "expected " + std::to_string(channels) + " numbers (one per input channel), got " + v.dump());
    std::vector<double> out;
    for (const json& x : v) {
      if (!x.is_number() || (positive && !(x.get<double>() > 0.0)))
        fail(key, std::string("expected ") + (positive ? "positive " : "") + "numbers, got " + v.dump());
      out.push_back(x.get<double>());
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw std::invalid_argument(prefix_ + key + ": " + why);
  }

 private:
  const json& cfg_;
  std::string prefix_;
};

// timm's ResizeKeepRatio.get_params with longest=0 and no random scale or aspect: one factor for
// both sides, the one that brings the side relatively closest to its target onto it (the other
// ends at or beyond its own), sides rounded as Python's round() (halves to even).
std::pair<int64_t, int64_t> keep_ratio_size(int64_t height, int64_t width, int64_t target_h, int64_t target_w) {
  double ratio = std::min(double(height) / double(target_h), double(width) / double(target_w));
  return {int64_t(std::nearbyint(double(height) / ratio)), int64_t(std::nearbyint(double(width) / ratio))};
}

class ResizeKeepRatio : public Transform {
 public:
  ResizeKeepRatio(int64_t h, int64_t w) : h_(h), w_(w) {}
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    const auto [height, width] = keep_ratio_size(x.size(0), x.size(1), h_, w_);
    if (height == x.size(0) && width == x.size(1)) return x;
    return resized_crop(x, CropBox{0, 0, x.size(0), x.size(1)}, height, width);
  }

 private:
  int64_t h_, w_;
};

}  // namespace

EvalDataConfig eval_data_config_from_json(const std::string& text) {
  json top;
  try {
    top = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string why = e.what();
    throw std::invalid_argument("not JSON: " + why.substr(why.find("] ") == std::string::npos ? 0 : why.find("] ") + 2));
  }
  if (!top.is_object()) throw std::invalid_argument("expected a JSON object (timm's config.json), got " + top.dump());
  // As timm's _parse_model_cfg: pretrained_cfg nested, or the whole object in the legacy form.
  const bool nested = top.contains("pretrained_cfg");
  if (!nested && !top.contains("architecture"))
    throw std::invalid_argument("pretrained_cfg: missing (not a timm config.json: it has neither pretrained_cfg nor architecture)");
  const json& cfg = nested ? top.at("pretrained_cfg") : top;
  if (!cfg.is_object()) throw std::invalid_argument("pretrained_cfg: expected an object, got " + cfg.dump());
  CfgReader read(cfg, nested ? "pretrained_cfg." : "");

  EvalDataConfig c;
  c.input_size = read.input_size();
  c.interpolation = read.word("interpolation", read.required("interpolation"), {"bilinear", "bicubic", "nearest"}, "");
  c.crop_pct = read.crop_pct();
  if (read.has("crop_mode"))
    c.crop_mode = read.word("crop_mode", cfg.at("crop_mode"), {"center", "squash"},
                            "; 'border' pads with the mean colour, which center_crop does not do");
  c.mean = read.per_channel("mean", std::size_t(c.input_size[0]), false);
  c.std = read.per_channel("std", std::size_t(c.input_size[0]), true);
  return c;
}

YAML::Node timm_eval_transform_list(const EvalDataConfig& config) {
  YAML::Node list(YAML::NodeType::Sequence);
  if (config.resize_and_crop) {
    const int64_t height = config.input_size.at(1), width = config.input_size.at(2);
    // transforms_imagenet_eval's scale_size: math.floor(x / crop_pct) per side, in doubles as Python.
    const std::vector<int64_t> scale{int64_t(std::floor(double(height) / config.crop_pct)),
                                     int64_t(std::floor(double(width) / config.crop_pct))};
    YAML::Node resize(YAML::NodeType::Map);
    if (config.crop_mode == "squash") {
      resize["size"] = flow_list(scale);
      resize["interpolation"] = config.interpolation;
      list.push_back(transform_entry("resize", resize));
    } else if (scale[0] == scale[1]) {
      resize["size"] = scale[0];
      resize["interpolation"] = config.interpolation;
      list.push_back(transform_entry("resize", resize));
    } else {
      resize["size"] = flow_list(scale);
      list.push_back(transform_entry("resize_keep_ratio", resize));
    }
    YAML::Node crop(YAML::NodeType::Map);
    crop["size"] = flow_list(std::vector<int64_t>{height, width});
    list.push_back(transform_entry("center_crop", crop));
  }
  list.push_back(transform_entry("to_tensor", YAML::Node(YAML::NodeType::Map)));
  YAML::Node normalize(YAML::NodeType::Map);
  normalize["mean"] = flow_list(config.mean);
  normalize["std"] = flow_list(config.std);
  list.push_back(transform_entry("normalize", normalize));
  return list;
}

TRAINRUN_REGISTER(Transform, "resize_keep_ratio",
                  "scale both sides by one factor so that each is at least its target and one equals it "
                  "(timm's ResizeKeepRatio, bilinear; what eval_transforms: model uses for a non-square input_size)",
                  Schema().required("size", Type::IntList, "[height, width] targets, or one number for both").scalar_ok().min(1),
                  [](const Config& c, const ModelInput&) {
                    const YAML::Node size = c.node()["size"];
                    std::vector<int64_t> hw = size.IsScalar() ? std::vector<int64_t>(2, size.as<int64_t>())
                                                              : size.as<std::vector<int64_t>>();
                    if (hw.size() != 2) throw std::invalid_argument("size: expected one number or [height, width]");
                    return std::make_shared<ResizeKeepRatio>(hw[0], hw[1]);
                  });

}  // namespace trainrun
