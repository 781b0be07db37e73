#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace trainrun {

const PretrainedCfg& default_cfg(const std::vector<PretrainedCfg>& cfgs, const std::string& name) {
  for (const auto& cfg : cfgs)
    if (cfg.tag.rfind(name + ".", 0) == 0) return cfg;
  throw std::logic_error("no published weights for model " + name + " in its family's default_cfgs");
}

std::string hub_id(const PretrainedCfg& cfg) { return "hf-hub:timm/" + cfg.tag; }

InputConfig input_config(const PretrainedCfg& cfg) {
  InputConfig in;
  const bool inception = cfg.mean_std == MeanStd::Inception;
  in.mean = inception ? std::vector<double>{0.5, 0.5, 0.5} : std::vector<double>{0.485, 0.456, 0.406};
  in.std = inception ? std::vector<double>{0.5, 0.5, 0.5} : std::vector<double>{0.229, 0.224, 0.225};
  in.input_size = {3, cfg.input_size, cfg.input_size};
  in.interpolation = cfg.interpolation;
  in.crop_pct = cfg.crop_pct;
  return in;
}

std::string describe_input(const PretrainedCfg& cfg) {
  const std::string size = std::to_string(cfg.input_size);
  return (cfg.mean_std == MeanStd::Inception ? "mean/std 0.5, " : "ImageNet mean/std, ") + size + "x" + size;
}

Schema& add_timm_head_keys(Schema& schema, const std::string& key_names, const std::string& more) {
  return schema.add("num_classes", Type::Int, yaml("auto"), "output classes; auto = the dataset's")
      .min(1).choices({"auto"})
      .add("pretrained", Type::Path, YAML::Node(),
           "weights to start from: a .safetensors file (" + key_names + " key names), hf-hub:ORG/NAME[@REVISION] "
           "(model.safetensors from the Hugging Face Hub, through its shared cache), or true (the published weights: "
           "timm's default tag). A classifier of another shape is re-initialised" + more);
}

Schema& add_timm_drop_keys(Schema& schema, const std::string& drop_rate_doc, const std::string& drop_path_doc) {
  return schema.add("drop_rate", Type::Float, yaml("0.0"), drop_rate_doc).range(0, 1)
      .add("drop_path_rate", Type::Float, yaml("0.0"),
           (drop_path_doc.empty() ? "stochastic depth, rising linearly to this over the blocks (timm's drop_path_rate)"
                                  : drop_path_doc) +
               "; 1 would divide by the keep probability 0")
      .min(0).below(1);
}

void read_timm_keys(const Config& config, TimmKeys& keys) {
  keys.num_classes = config.get<int64_t>("num_classes");
  keys.drop_rate = config.get<double>("drop_rate");
  keys.drop_path_rate = config.get<double>("drop_path_rate");
}

at::Tensor drop_path(const at::Tensor& x, double p, bool training) {
  if (p == 0.0 || !training) return x;
  double keep = 1.0 - p;
  std::vector<int64_t> shape(std::size_t(x.dim()), 1);
  shape[0] = x.size(0);
  at::Tensor mask = torch::empty(shape, x.options()).bernoulli_(keep);
  return x * mask.div_(keep);
}

void trunc_normal_(at::Tensor t, double std, double a, double b) {
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = norm_cdf(a / std), u = norm_cdf(b / std);
  t.uniform_(2 * l - 1, 2 * u - 1);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.0));
  t.add_(0.0);  // timm's add_(mean): also turns -0.0 into 0.0
  t.clamp_(a, b);
}

}  // namespace trainrun
