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

// pos_weight: auto as torch's pos_weight= reads it: negatives / positives of each class over the
// training split, the numbers the recipe then holds.
YAML::Node auto_pos_weight(const Job& job, int64_t classes) {
  const std::vector<int64_t> positives = positive_counts(*job.data.train, classes);
  const int64_t n = int64_t(job.data.train->size());
  YAML::Node list(YAML::NodeType::Sequence);
  for (std::size_t c = 0; c < positives.size(); ++c) {
    if (positives[c] == 0)
      throw RecipeError("train.loss.pos_weight: auto: class " + class_name(job, c) +
                        " has no positive training example, so negatives / positives has no value; give the weights as a list");
    list.push_back(YAML::Node(fmt::format("{}", double(n - positives[c]) / double(positives[c]))));
  }
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

// train.task against the data and the loss: a multilabel run needs a multi-label dataset, and per-
// class weights and the weighted sampler count single labels.
void check_task(const Job& job, bool have_data) {
  const bool multilabel = job.config.train.task == "multilabel";
  const YAML::Node loss = job.recipe.root["train"]["loss"];
  const YAML::Node scheduler = job.recipe.root["scheduler"];
  if (scheduler["metric"] && scheduler["metric"].IsScalar()) {
    const std::string m = scheduler["metric"].Scalar(), name = m.rfind("eval_", 0) == 0 ? m.substr(5) : m;
    if (std::string why = metric_task_mismatch(job.config.train.task, name); !why.empty())
      throw RecipeError("scheduler.metric: " + why);
  }
  if (have_data && job.data.train && job.data.train->multilabel() != multilabel)
    throw RecipeError(multilabel ? "train.task: multilabel, but data.dataset gives one label per image (image_csv reads "
                                   "a set of labels per image)"
                                 : "train.task: single_label, but data.dataset gives a set of labels per image; set "
                                   "train.task: multilabel");
  if (!multilabel) return;
  if (loss["weight"] && !loss["weight"].IsNull())
    throw RecipeError("train.loss.weight: per-class weights of a softmax loss; a multilabel loss weighs a class's "
                      "positives with pos_weight");
  if (job.config.data.sampler == "weighted")
    throw RecipeError("data.sampler: weighted draws by each image's one class; train.task: multilabel has a set per "
                      "image (use train.loss.pos_weight for rare classes)");
}

}  // namespace

void resolve_class_balance(Job& job, bool have_data) {
  check_task(job, have_data);
  YAML::Node loss = job.recipe.root["train"]["loss"];
  const int64_t classes = loss_classes(job);
  if (loss["pos_weight"] && loss["pos_weight"].IsScalar() && loss["pos_weight"].Scalar() == "auto")
    loss["pos_weight"] = have_data ? auto_pos_weight(job, classes) : YAML::Node();
  if (loss["pos_weight"] && loss["pos_weight"].IsSequence() && int64_t(loss["pos_weight"].size()) != classes)
    throw RecipeError("train.loss.pos_weight: " + std::to_string(loss["pos_weight"].size()) + " weights for " +
                      std::to_string(classes) + " classes (model.num_classes); give one per class, or auto");
  if (loss["weight"] && loss["weight"].IsScalar() && loss["weight"].Scalar() == "balanced")
    loss["weight"] = have_data ? balanced_weights(job, classes) : YAML::Node();
  if (loss["weight"] && loss["weight"].IsSequence()) check_weight_list(loss["weight"], classes);
  if (have_data && job.config.data.sampler == "weighted")
    job.sample_weights = inverse_class_frequency_weights(*job.data.train, classes);
}

}  // namespace trainrun
