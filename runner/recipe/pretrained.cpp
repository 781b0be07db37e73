// model.pretrained (pretrained.h).
#include "runner/recipe/pretrained.h"

#include "components/data/transforms/timm_eval.h"
#include "runner/io/weights.h"
#include "support/download.h"
#include "support/hf_hub.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace trainrun {

namespace {

// model.pretrained as written, with `true` resolved to the architecture's published weights
// (and so written into the recipe); empty when none are asked for.
std::string pretrained_spec(Job& job) {
  YAML::Node p = job.recipe.root["model"]["pretrained"];
  if (!p || p.IsNull() || p.as<std::string>() == "false") return "";
  std::string spec = p.as<std::string>();
  if (spec == "true") {
    spec = job.model->published_weights();
    if (spec.empty())
      throw RecipeError("model.pretrained: true: " + job.config.model +
                        " has no published weights; name a .safetensors file or hf-hub:ORG/NAME");
    p = spec;  // the resolved recipe says which
  }
  return spec;
}

// The Hub file model.pretrained names, if it names one.
std::optional<HubFile> pretrained_hub_file(const std::string& spec) {
  try {
    return parse_hf_hub(spec);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model.pretrained: ") + e.what());
  }
}

// model.pretrained as a file to load: a .safetensors path; hf-hub:ORG/NAME[@REVISION] (its
// model.safetensors through the Hub cache huggingface_hub shares, downloaded if missing); true
// (the architecture's published weights). Empty when there is nothing to load (none asked for,
// or `check`, which only says whether a Hub file is cached).
std::string pretrained_file(Job& job, const JobOptions& options) {
  const std::string spec = pretrained_spec(job);
  if (spec.empty()) return "";
  std::optional<HubFile> hub = pretrained_hub_file(spec);
  if (!hub) return spec;
  if (!options.download) {
    std::optional<std::filesystem::path> cached = hub_cached(*hub);
    job.notes.push_back("model.pretrained: " + hub->spec() +
                        (cached ? " is cached at " + cached->string() : " would be downloaded from " + hub_url(*hub)));
    return cached ? cached->string() : "";
  }
  try {
    return hf_hub_download(*hub).string();
  } catch (const DownloadError& e) {
    throw WeightsError(std::string("model.pretrained: ") + e.what());
  }
}

// The architecture's own pretrained_cfg (its InputConfig: the published weights' one).
EvalDataConfig architecture_data_config(const Classifier& model) {
  const InputConfig in = model.input_config();
  EvalDataConfig c;
  c.input_size = in.input_size;
  c.interpolation = in.interpolation;
  c.crop_pct = in.crop_pct;
  c.mean = in.mean;
  c.std = in.std;
  c.resize_and_crop = in.resize_and_crop;
  return c;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  return text.str();
}

// What `check` and the log say about the resolved pipeline's source.
std::string describe(const EvalDataConfig& c) {
  if (!c.resize_and_crop) return fmt::format("mean {}, std {}, no resize or crop", fmt::join(c.mean, ", "), fmt::join(c.std, ", "));
  return fmt::format("input_size [{}], interpolation {}, crop_pct {}, crop_mode {}", fmt::join(c.input_size, ", "),
                     c.interpolation, c.crop_pct, c.crop_mode);
}

}  // namespace

void resolve_eval_transforms(Job& job, const JobOptions& options) {
  YAML::Node data = job.recipe.root["data"];
  if (!data["eval_transforms"].IsScalar()) return;  // a list, as written
  const std::string key = "data.eval_transforms: model: ";
  EvalDataConfig config = architecture_data_config(*job.model);
  const std::string published = job.model->published_weights();
  std::string from = job.config.model + "'s default pretrained_cfg" + (published.empty() ? "" : " (" + published + "'s)");
  const std::string spec = pretrained_spec(job);
  if (std::optional<HubFile> hub = pretrained_hub_file(spec)) {
    hub->filename = "config.json";
    const std::string what = hub->spec() + ": config.json";
    std::optional<std::filesystem::path> file;
    if (options.download) {
      try {
        file = hf_hub_download(*hub);
      } catch (const DownloadError& e) {
        throw RecipeError(key + e.what());
      }
    } else if (!(file = hub_cached(*hub))) {
      job.notes.push_back(key + what + " would be downloaded from " + hub_url(*hub));
      job.eval_transforms_pending = true;
      return;
    }
    try {
      config = eval_data_config_from_json(read_text(*file));
    } catch (const std::invalid_argument& e) {
      throw RecipeError(key + what + ": " + e.what());
    }
    from = what;
    const InputConfig own = job.model->input_config();
    if (own.fixed_input_size && config.input_size != own.input_size) {
      config.input_size = own.input_size;
      from += " at the model's input_size";
    }
  }
  data["eval_transforms"] = check_transform_list(job.recipe, timm_eval_transform_list(config), "data.eval_transforms");
  job.eval_transforms_from = from + " (" + describe(config) + ")";
}

void load_pretrained(Job& job, const JobOptions& options) {
  const std::string file = pretrained_file(job, options);
  if (file.empty()) return;
  LoadReport report;
  try {
    TensorList tensors = load_safetensors(file);
    for (auto& note : job.model->adapt_pretrained(tensors)) job.notes.push_back("model.pretrained: " + note);
    report = load_state_dict(*job.model, tensors, file, job.model->classifier_pattern());
  } catch (const WeightsError& e) {
    throw WeightsError(std::string("model.pretrained: ") + e.what());
  }
  for (auto& r : report.reinitialised)
    job.notes.push_back("classifier " + r + " re-initialised for " +
                        std::to_string(job.recipe.root["model"]["num_classes"].as<int64_t>()) + " classes");
}

}  // namespace trainrun
