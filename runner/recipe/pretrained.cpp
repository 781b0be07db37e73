// model.pretrained (pretrained.h).
#include "runner/recipe/pretrained.h"

#include "runner/io/weights.h"
#include "support/download.h"
#include "support/hf_hub.h"

#include <filesystem>
#include <optional>

namespace trainrun {

namespace {

// model.pretrained as a file to load: a .safetensors path; hf-hub:ORG/NAME[@REVISION] (its
// model.safetensors through the Hub cache huggingface_hub shares, downloaded if missing); true
// (the architecture's published weights). Empty when there is nothing to load (none asked for,
// or `check`, which only says whether a Hub file is cached).
std::string pretrained_file(Job& job, const JobOptions& options) {
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
  std::optional<HubFile> hub;
  try {
    hub = parse_hf_hub(spec);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model.pretrained: ") + e.what());
  }
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

}  // namespace

void load_pretrained(Job& job, const JobOptions& options) {
  const std::string file = pretrained_file(job, options);
  if (file.empty()) return;
  LoadReport report;
  try {
    report = load_state_dict(*job.model, load_safetensors(file), file, job.model->classifier_pattern());
  } catch (const WeightsError& e) {
    throw WeightsError(std::string("model.pretrained: ") + e.what());
  }
  for (auto& r : report.reinitialised)
    job.notes.push_back("classifier " + r + " re-initialised for " +
                        std::to_string(job.recipe.root["model"]["num_classes"].as<int64_t>()) + " classes");
}

}  // namespace trainrun
