#include "runner/export/model_card.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace trainrun {
namespace {

std::string scalar(const YAML::Node& n, const std::string& fallback = "") {
  return n && n.IsScalar() && n.Scalar() != "~" && n.Scalar() != "null" ? n.Scalar() : fallback;
}

// The Hub id of the weights the run started from: model.pretrained as hf-hub:ORG/NAME, or
// `true` with the architecture's published ones (timm's default tag); empty from scratch or a file.
std::string base_model(const YAML::Node& recipe, const std::string& published) {
  const std::string p = scalar(recipe["model"]["pretrained"]);
  if (p.rfind("hf-hub:", 0) == 0) return p.substr(7);
  if (p == "true") return published.rfind("hf-hub:", 0) == 0 ? published.substr(7) : published;
  return "";
}

// Hub datasets the shards came from (hf-hub:datasets/ORG/NAME/...).
std::vector<std::string> hub_datasets(const YAML::Node& dataset) {
  std::set<std::string> out;
  for (const char* key : {"urls", "eval_urls"}) {
    const YAML::Node n = dataset[key];
    std::vector<std::string> urls;
    if (n && n.IsScalar()) urls.push_back(n.Scalar());
    if (n && n.IsSequence())
      for (const auto& u : n) urls.push_back(u.Scalar());
    for (const std::string& u : urls) {
      if (u.rfind("hf-hub:datasets/", 0) != 0) continue;
      const std::string rest = u.substr(16);
      const std::size_t slash = rest.find('/', rest.find('/') + 1);
      out.insert(rest.substr(0, std::min(slash, rest.find('@'))));
    }
  }
  return {out.begin(), out.end()};
}

std::string front_matter(const ModelCardInputs& in, const std::string& base) {
  const YAML::Node& r = in.recipe;
  YAML::Emitter e;
  const bool timm = !in.published.empty();  // an architecture timm publishes weights for: timm builds it
  e << YAML::BeginMap << YAML::Key << "library_name" << YAML::Value << (timm ? "timm" : "trainrun");
  e << YAML::Key << "license" << YAML::Value << in.license;
  e << YAML::Key << "tags" << YAML::Value << YAML::BeginSeq << "image-classification" << "trainrun";
  if (timm) e << "timm";
  if (scalar(r["train"]["task"]) == "multilabel") e << "multi-label-classification";
  e << YAML::EndSeq;
  if (auto datasets = hub_datasets(r["data"]["dataset"]); !datasets.empty())
    e << YAML::Key << "datasets" << YAML::Value << datasets;
  std::vector<std::string> metrics;
  for (const auto& m : r["train"]["metrics"])
    if (m.Scalar() != "per_class") metrics.push_back(m.Scalar());
  e << YAML::Key << "metrics" << YAML::Value << metrics;
  if (!base.empty()) e << YAML::Key << "base_model" << YAML::Value << base;
  e << YAML::Key << "pipeline_tag" << YAML::Value << "image-classification";
  e << YAML::EndMap;
  return std::string("---\n") + e.c_str() + "\n---\n";
}

std::string number(const nlohmann::json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.4f}", v.get<double>());
  return v.dump();
}

// The last evaluation's metrics, and the best of output.best_metric over every evaluation.
std::string evaluation_section(const ModelCardInputs& in) {
  const nlohmann::json* last = nullptr;
  for (const auto& line : in.lines)
    if (line.contains("eval_loss")) last = &line;
  if (!last) return "## Evaluation\n\nThe run did not evaluate (`train.eval_every: never`).\n\n";
  std::string out = fmt::format("## Evaluation\n\nOn the evaluation split ({} images), at step {} (epoch {:.2f}):\n\n"
                                "| metric | value |\n|---|---|\n",
                                number(last->value("eval_examples", nlohmann::json())), number((*last)["step"]),
                                last->value("epoch", 0.0));
  for (const auto& [key, value] : last->items())
    if (key.rfind("eval_", 0) == 0 && key != "eval_runtime" && key != "eval_samples_per_second" && key != "eval_examples")
      out += fmt::format("| `{}` | {} |\n", key, number(value));
  const std::string best = scalar(in.recipe["output"]["best_metric"]);
  const std::string key = best.empty() || best.rfind("eval_", 0) == 0 ? best : "eval_" + best;
  const nlohmann::json* top = nullptr;
  const bool lower = key.find("loss") != std::string::npos;
  for (const auto& line : in.lines)
    if (line.contains(key) && line[key].is_number() &&
        (!top || (lower ? line[key].get<double>() < (*top)[key].get<double>() : line[key].get<double>() > (*top)[key].get<double>())))
      top = &line;
  if (top) out += fmt::format("\nBest `{}` (`output.best_metric`): {} at step {}.\n", key, number((*top)[key]), number((*top)["step"]));
  return out + "\n";
}

std::string training_section(const ModelCardInputs& in) {
  const YAML::Node& r = in.recipe;
  const YAML::Node world = r["world"];
  const int64_t procs = std::max<int64_t>(1, std::stoll(scalar(world["nproc_per_node"], "1"))) *
                        std::max<int64_t>(1, std::stoll(scalar(world["nnodes"], "1")));
  std::string out = "## Training\n\n| setting | value |\n|---|---|\n";
  auto row = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) out += fmt::format("| {} | {} |\n", k, v);
  };
  row("epochs", scalar(r["train"]["epochs"]));
  row("batch size", fmt::format("{} per process x {} process{} x {} accumulation step(s)", scalar(r["data"]["batch_size"]),
                                procs, procs == 1 ? "" : "es", scalar(r["train"]["grad_accum_steps"], "1")));
  row("optimizer", fmt::format("`{}`, lr {}, weight decay {}", scalar(r["optimizer"]["name"]), scalar(r["optimizer"]["lr"]),
                               scalar(r["optimizer"]["weight_decay"], "0")));
  row("scheduler", "`" + scalar(r["scheduler"]["name"], "constant") + "`");
  row("loss", "`" + scalar(r["train"]["loss"]["name"], scalar(r["train"]["loss"], "cross_entropy")) + "`");
  row("precision", scalar(r["precision"]));
  row("seed", scalar(r["seed"]));
  row("device", scalar(world["device"]));
  for (auto it = in.lines.rbegin(); it != in.lines.rend(); ++it)
    if (it->contains("train_runtime")) {
      row("training time", fmt::format("{:.0f} s ({:.1f} samples/s; the last session's)", (*it)["train_runtime"].get<double>(),
                                       it->value("train_samples_per_second", 0.0)));
      row("final training loss", number((*it)["train_loss"]));
      break;
    }
  out += "\nThe whole resolved recipe is `recipe.yaml`; `trainrun recipe.yaml` trains the model again.\n\n";
  if (in.curves) out += "![Training and evaluation loss by step](training_curves.png)\n\n";
  return out;
}

std::string use_section(const ModelCardInputs& in) {
  const std::string name = scalar(in.recipe["model"]["name"]);
  if (in.published.empty())  // trainrun reads hf-hub: weights; a local-dir: folder's file is named
    return fmt::format("## Use it\n\n`{0}` is not a timm architecture: load `model.safetensors` into your own `{0}` "
                       "(`safetensors.torch.load_file`), or with trainrun, in a recipe: `model: {{name: {0}, pretrained: "
                       "{1}}}`. The classes are in `labels.json` (and `config.json`'s `label_names`).\n",
                       name, in.load_id.rfind("hf-hub:", 0) == 0 ? in.load_id : "model.safetensors");
  return fmt::format(
      "## Use it\n\nIn Python, with timm:\n\n```python\nimport timm, torch\n\n"
      "model = timm.create_model(\"{0}\", pretrained=True).eval()\n"
      "transform = timm.data.create_transform(**timm.data.resolve_data_config({{}}, model=model))\n"
      "# scores = model(transform(image).unsqueeze(0)).{1}\n```\n\n"
      "With trainrun, in a recipe: `model: {{name: {2}, pretrained: {0}}}`; the classes are in `labels.json` "
      "(and `config.json`'s `label_names`).\n",
      in.load_id, scalar(in.recipe["train"]["task"]) == "multilabel" ? "sigmoid()" : "softmax(-1)", name);
}

}  // namespace

std::string model_card(const ModelCardInputs& in) {
  const std::string name = scalar(in.recipe["name"], scalar(in.recipe["model"]["name"]));
  const std::string base = base_model(in.recipe, in.published);
  const YAML::Node dataset = in.recipe["data"]["dataset"];
  std::string data = "`" + scalar(dataset["name"]) + "`";
  if (!scalar(dataset["root"]).empty()) data += " (" + scalar(dataset["root"]) + ")";
  const bool multilabel = scalar(in.recipe["train"]["task"]) == "multilabel";
  std::string out = front_matter(in, base);
  out += fmt::format("\n# {}\n\nA `{}` image classifier ({} classes, {}) trained with trainrun {} on {}; its weights are `{}` "
                     "of the run.\n\n",
                     name, scalar(in.recipe["model"]["name"]), in.classes.size(),
                     multilabel ? "several labels per image: one sigmoid per class" : "one label per image",
                     base.empty() ? "from scratch" : "from `" + base + "`", data, in.weights_from);
  return out + evaluation_section(in) + training_section(in) + use_section(in);
}

}  // namespace trainrun
