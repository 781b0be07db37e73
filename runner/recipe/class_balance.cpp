#include "runner/recipe/class_balance.h"

#include "components/data/loader/sampler.h"
#include "support/errors.h"

#include <fmt/format.h>

#include <algorithm>

namespace trainrun {
namespace {

// The outputs the loss sees: model.num_classes (resolved from `auto` by now), or the dataset's
// classes for a model without that key.
int64_t loss_classes(const Job& job) {
  const YAML::Node n = job.recipe.root["model"]["num_classes"];
  return n && n.IsScalar() && n.Scalar() != "auto" ? n.as<int64_t>() : int64_t(job.data.classes.size());
}

std::string class_name(const Job& job, std::size_t c) {
  if (c < job.data.classes.size()) return "'" + job.data.classes[c] + "' (label " + std::to_string(c) + ")";
  return "output " + std::to_string(c) + " (beyond the dataset's " + std::to_string(job.data.classes.size()) +
         " classes)";
}

// sklearn's weights from the training split, as the numbers the recipe then holds. Each is
// written in the shortest text that reads back as the same double (Python's repr).
YAML::Node balanced_weights(const Job& job, int64_t classes) {
  const std::vector<int64_t> counts = class_counts(*job.data.train, classes);
  for (std::size_t c = 0; c < counts.size(); ++c)
    if (counts[c] == 0)
      throw RecipeError("train.loss.weight: balanced: class " + class_name(job, c) +
                        " has no training examples, so n_samples / (n_classes * count) has no value "
                        "(sklearn refuses it too); give the weights as a list");
  YAML::Node list(YAML::NodeType::Sequence);
  for (double w : balanced_class_weights(counts)) list.push_back(YAML::Node(fmt::format("{}", w)));
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

// A weight list the schema has checked item by item (numbers >= 0): one per class, not all 0.
void check_weight_list(const YAML::Node& weight, int64_t classes) {
  if (int64_t(weight.size()) != classes)
    throw RecipeError("train.loss.weight: " + std::to_string(weight.size()) + " weights for " + std::to_string(classes) +
                      " classes (model.num_classes); give one per class, or balanced");
  const auto values = weight.as<std::vector<double>>();
  if (std::all_of(values.begin(), values.end(), [](double w) { return w == 0; }))
    throw RecipeError("train.loss.weight: every weight is 0, so the weighted mean loss is 0 / 0; give some class a weight > 0");
}

}  // namespace

void resolve_class_balance(Job& job, bool have_data) {
  YAML::Node loss = job.recipe.root["train"]["loss"];
  const int64_t classes = loss_classes(job);
  if (loss["weight"] && loss["weight"].IsScalar() && loss["weight"].Scalar() == "balanced")
    loss["weight"] = have_data ? balanced_weights(job, classes) : YAML::Node();
  if (loss["weight"] && loss["weight"].IsSequence()) check_weight_list(loss["weight"], classes);
  if (have_data && job.config.data.sampler == "weighted")
    job.sample_weights = inverse_class_frequency_weights(*job.data.train, classes);
}

}  // namespace trainrun
