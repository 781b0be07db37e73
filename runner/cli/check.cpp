// `trainrun check RECIPE.yaml [--schedule] [--origin]`: validate, build model and data, print what
// a run would do (or its learning-rate schedule) without training.
#include "runner/cli/commands.h"

#include "components/data/shards/webdataset.h"
#include "components/data/sources/torchvision_download.h"
#include "components/data/streaming_dataset.h"
#include "runner/logging/logging.h"
#include "runner/recipe/param_groups.h"
#include "runner/recipe/preflight.h"
#include "runner/recipe/resolve.h"
#include "runner/recipe/resume_plan.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <future>

#include <iostream>
#include <map>
#include <variant>

namespace trainrun::cli {
namespace {

// One line per transform with every parameter, as the run builds it.
void print_transforms(const char* title, const YAML::Node& list, const std::string& from) {
  std::cout << title << (from.empty() ? "" : " (data.eval_transforms: model, from " + from + ")") << ":\n";
  for (const auto& item : list) {
    YAML::Emitter params;
    params << YAML::Flow << item.begin()->second;
    std::cout << "  " << item.begin()->first.as<std::string>() << " " << params.c_str() << "\n";
  }
}

// A webdataset split: how many shards, the first and the last, how many open (each opened and
// its first sample read, 8 at a time); the problems of those that do not.
int64_t print_shards(const std::string& split, const wds::ShardSet& set, int64_t world) {
  std::vector<std::future<std::string>> probes;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < set.urls.size(); ++i) {
    probes.push_back(std::async(std::launch::async, wds::open_problem, set.urls[i], set.open));
    if (probes.size() == 8 || i + 1 == set.urls.size()) {
      for (auto& p : probes)
        if (std::string why = p.get(); !why.empty()) problems.push_back(why);
      probes.clear();
    }
  }
  const int64_t n = int64_t(set.urls.size());
  std::cout << "  " << split << " shards: " << n << " (" << set.urls.front()
            << (n > 1 ? " ... " + set.urls.back() : "") << "), " << n - int64_t(problems.size()) << " of " << n << " open";
  if (set.num_samples > 0)
    std::cout << "; " << thousands(set.num_samples) << " samples"
              << (set.sizes.empty() ? " (num_samples)" : " (sizes.json)");
  if (split == "train") std::cout << ", " << thousands(set.num_samples / world) << " per process an epoch";
  std::cout << "\n";
  for (std::size_t i = 0; i < problems.size() && i < 5; ++i) std::cout << "    cannot open: " << problems[i] << "\n";
  if (problems.size() > 5) std::cout << "    ... and " << problems.size() - 5 << " more\n";
  return int64_t(problems.size());
}

// Examples per class; of a multi-label dataset, the examples that have each class.
std::string class_counts_line(const Dataset& d, const std::vector<std::string>& classes) {
  const std::vector<int64_t> counts =
      d.multilabel() ? positive_counts(d, int64_t(classes.size())) : class_counts(d, int64_t(classes.size()));
  std::string s;
  for (std::size_t c = 0; c < classes.size(); ++c) s += (c ? ", " : "") + classes[c] + ": " + std::to_string(counts[c]);
  return s;
}

// `check --schedule`: line `step lr [momentum]` is the state after `step` optimizer steps
// (torch's get_last_lr() after that many scheduler.step() calls; step 0 is what the first
// optimizer step uses), so the pairs match metrics.jsonl's step / learning_rate.
// The optimizer's parameter groups as a PyTorch user would list optimizer.param_groups: what
// optimizer.no_decay / layer_decay / groups and the freeze rules' lr_scale made of the
// trainable parameters (groups that join when a freeze rule unfreezes are not listed).
void print_param_groups(const Job& job) {
  const YAML::Node opt = job.recipe.root["optimizer"];
  // A plugin's optimizer may have neither key.
  const double lr = opt["lr"] ? opt["lr"].as<double>() : 0.0, wd = opt["weight_decay"] ? opt["weight_decay"].as<double>() : 0.0;
  ParamGroups plan = job_param_groups(job, job.trainable());
  std::cout << "optimizer: " << opt["name"].as<std::string>() << ", " << plan.size() << " parameter group"
            << (plan.size() == 1 ? "" : "s") << "\n";
  std::cout << fmt::format("  {:<24} {:>7} {:>12} {:>9} {:>12} {:>12}\n", "group", "tensors", "parameters", "lr_scale", "lr",
                           "weight_decay");
  for (const ParamGroup& g : plan) {
    int64_t n = 0;
    for (const auto& [name, p] : g.params) n += p.numel();
    std::cout << fmt::format("  {:<24} {:>7} {:>12} {:>9.6g} {:>12.6g} {:>12.6g}\n", g.name, g.params.size(), thousands(n),
                             g.lr_scale, lr * g.lr_scale, g.weight_decay.value_or(wd));
  }
}

void print_schedule(const Job& job, torch::optim::Optimizer& optimizer, Scheduler& scheduler, int64_t total) {
  bool momentum = scheduler.cycles_momentum();
  std::cout << "# " << job.config.scheduler << ": step lr"
            << (momentum ? " momentum" : "") << "\n";
  for (int64_t s = 0; s <= total; ++s) {
    if (s > 0) scheduler.step();
    std::cout << fmt::format("{} {:.17g}", s, current_lr(optimizer));
    if (momentum) std::cout << fmt::format(" {:.17g}", current_momentum(optimizer).value());
    std::cout << "\n";
  }
}

// One value of a recipe, as `check --origin` prints it.
struct ValueOrigin {
  std::string path, value, origin;
};

std::string flow_text(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// The leaves of `node` (scalars, nulls, lists of scalars, empty mappings) under `path`, each with
// where it was written ("" for a default).
void collect_values(const Recipe& recipe, const YAML::Node& node, const std::string& path, std::vector<ValueOrigin>& out) {
  bool flat = node.IsSequence();
  for (std::size_t i = 0; flat && i < node.size(); ++i) flat = !node[i].IsMap() && !node[i].IsSequence();
  if (node.IsMap() && node.size() > 0) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      collect_values(recipe, it->second, path.empty() ? key : path + "." + key, out);
    }
  } else if (node.IsSequence() && !flat) {
    for (std::size_t i = 0; i < node.size(); ++i) collect_values(recipe, node[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out.push_back({path, flow_text(node), written_at(recipe.sources, recipe.overrides, path, node)});
  }
}

std::vector<ValueOrigin> recipe_values(const Recipe& recipe) {
  std::vector<ValueOrigin> out;
  collect_values(recipe, recipe.root, "", out);
  for (auto& v : out)
    if (v.origin.empty()) v.origin = "default";
  return out;
}

// `check --origin`: each value of the resolved recipe and where it came from: FILE:LINE:COL (the
// recipe or a base), the command line's override, `default` (the schema's), or `auto (WHERE)`
// when the job computed it for this machine, launch or dataset from what WHERE held (`auto`,
// null, `model`). `loaded` is the recipe's values before the job was built.
std::vector<ValueOrigin> resolved_values(const Recipe& recipe, const std::vector<ValueOrigin>& loaded) {
  std::map<std::string, const ValueOrigin*> before;
  for (const auto& v : loaded) before[v.path] = &v;
  std::vector<ValueOrigin> now = recipe_values(recipe);
  for (auto& v : now) {
    auto was = before.find(v.path);
    if (was != before.end() && was->second->value == v.value) {
      v.origin = was->second->origin;
      continue;
    }
    // Computed: named after the value it replaced (eval_transforms: model became a list).
    std::string at = v.path;
    while (!at.empty() && !before.count(at)) {
      const std::size_t cut = at.find_last_of(".[");
      at = cut == std::string::npos ? "" : at.substr(0, cut);
    }
    v.origin = "auto (" + (before.count(at) ? before[at]->origin : std::string("default")) + ")";
  }
  return now;
}

void print_values(const std::string& file, const std::vector<ValueOrigin>& values) {
  std::size_t width = 0;
  for (const auto& v : values) width = std::max(width, v.path.size() + 2 + v.value.size());
  width = std::min<std::size_t>(width, 64);
  std::cout << "# resolved recipe (" << file << "), each value with where it came from\n";
  for (const auto& v : values) {
    std::string line = v.path + ": " + v.value;
    std::cout << line << std::string(line.size() < width ? width - line.size() : 0, ' ') << "  # " << v.origin << "\n";
  }
  std::cout << "\n";
}

// The train and eval transforms, one per line (`eval_transforms: model` not fetched yet: said so).
void print_pipelines(const Job& job) {
  print_transforms("train transforms", job.recipe.root["data"]["train_transforms"], "");
  if (job.eval_transforms_pending)
    std::cout << "eval transforms: model, from the weights' config.json, not downloaded yet: a run fetches it first "
                 "(or `trainrun check --download`)\n";
  else
    print_transforms("eval transforms", job.recipe.root["data"]["eval_transforms"], job.eval_transforms_from);
}

void print_world(const Job& job) {
  const RunConfig& c = job.config;
  const int64_t nproc = c.world.nproc_per_node, nnodes = c.world.nnodes;
  const std::string backend = job.recipe.root["world"]["backend"].Scalar();
  std::cout << "world: " << nnodes << " node" << (nnodes > 1 ? "s" : "") << " x " << nproc << " process"
            << (nproc > 1 ? "es" : "") << ", " << (nnodes * nproc > 1 ? "backend " + backend : "no process group (one process)")
            << ", " << job.threads << " threads per process, device " << job.device << ", precision " << job.precision
            << (job.precision_reason.empty() ? "" : " (" + job.precision_reason + ")") << ", memory format "
            << (job.channels_last ? "channels_last" : "contiguous")
            << (job.memory_format_reason.empty() ? "" : " (" + job.memory_format_reason + ")") << "\n";
}

// Parameters of the classifier head (the model's classifier_pattern): per class, when the model
// was built with one (check without the data).
int64_t head_parameters(const Job& job) {
  int64_t n = 0;
  const std::string pattern = job.model->classifier_pattern();
  for (const auto& p : job.model->named_parameters())
    if (::fnmatch(pattern.c_str(), p.key().c_str(), 0) == 0) n += p.value().numel();
  return n;
}

// What does not need the data, for a recipe whose dataset is not downloaded yet: the model (with
// a one-class head while num_classes is auto), its parameter groups, optimizer, transforms, world
// and, with --steps-per-epoch, the scheduler over the run's length; then what waits for the data.
// `missing`: the data is not where the recipe says (a folder that does not exist), not merely not
// downloaded: the report ends with that line on stderr, and exit 2, as a run would.
int check_without_data(const std::vector<std::string>& args, JobOptions options, const std::string& deferred,
                       bool schedule, int64_t steps_per_epoch, bool missing = false) {
  options.data = false;
  options.placeholder_classes = 1;
  Recipe recipe = load_recipe_of(args);
  const YAML::Node written = recipe.root["model"]["num_classes"];
  const bool auto_classes = written && written.IsScalar() && written.Scalar() == "auto";
  Job job = build_job(std::move(recipe), options);
  if (auto_classes) job.recipe.root["model"]["num_classes"] = "auto";  // the one class is a stand-in
  const RunConfig& c = job.config;
  const int64_t total = steps_per_epoch * c.train.epochs;
  const CheckedOptimization o = checked_optimization(job, total, steps_per_epoch);
  if (schedule) {
    if (!o.scheduler && missing) throw DataError(deferred);
    if (!o.scheduler)
      throw RecipeError("check --schedule: the run's length needs the data (" + deferred +
                        "); give --steps-per-epoch N, or `trainrun check --download`");
    print_schedule(job, *o.optimizer, *o.scheduler, total);
    return kExitOk;
  }
  if (!missing) std::cout << "note: " << deferred << "\n";
  std::cout << "# resolved recipe (" << job.recipe.file << "), before the data\n" << resolved_recipe_text(job) << "\n";
  const int64_t head = head_parameters(job);
  std::cout << "model: " << c.model << ", " << thousands(job.total_parameters()) << " parameters, "
            << thousands(job.trainable_parameters()) << " trainable";
  if (auto_classes)
    std::cout << ", with a one-class head (num_classes: auto: the data names the classes; each class adds "
              << thousands(head) << " parameters to " << job.model->classifier_pattern() << ")";
  std::cout << "\n";
  std::cout << "data: " << c.data.dataset
            << (missing ? ", not found (below)\n" : ", not downloaded yet: a run fetches it first (or `trainrun check --download`)\n");
  print_pipelines(job);
  const int64_t world = c.world.world_size();
  if (steps_per_epoch > 0)
    std::cout << "steps per epoch: " << steps_per_epoch << " (given), total " << total << " optimizer steps\n";
  print_world(job);
  std::cout << "run folder: " << describe(plan_resume(job, world), job, world) << "\n";
  if (auto_classes) std::cout << "parameter groups (one-class head):\n";
  print_param_groups(job);
  for (auto& note : job.notes) std::cout << "note: " << note << "\n";
  std::cout << "needs the data: the classes" << (auto_classes ? " (num_classes)" : "")
            << ", the splits and their class counts, " << (steps_per_epoch > 0 ? "" : "steps per epoch and the schedule (or --steps-per-epoch N), ")
            << "one example through each pipeline" << (world > 1 ? ", enough examples for " + std::to_string(world) + " processes" : "")
            << "\n";
  if (!missing) return kExitOk;
  std::cout.flush();
  std::cerr << deferred << "\n";
  return kExitBadInput;
}

// The job `check` reports on (with the recipe's values and their origins in `loaded` for
// --origin), or, for a dataset not here yet, the exit code of the report printed on what does not
// need it (check_without_data).
std::variant<Job, int> job_or_report_without_data(const std::vector<std::string>& args, bool schedule, bool origin,
                                                  bool download, int64_t steps_per_epoch,
                                                  std::vector<ValueOrigin>& loaded) {
  JobOptions options;
  options.download = download;
  try {
    Recipe recipe = load_recipe_of(args);
    if (origin) loaded = recipe_values(recipe);
    return build_job(std::move(recipe), options);
  } catch (const MissingDataFolder& e) {
    // Everything that does not need the data, then the missing folder, exit 2 (a run's error).
    if (origin) throw;
    return check_without_data(args, options, e.what(), schedule, steps_per_epoch, /*missing=*/true);
  } catch (const DownloadDeferred& e) {
    if (origin) {
      print_values(args[0], loaded);  // as written: the `auto` values wait for the data
      std::cout << "note: " << e.what() << "\n"
                << "data: not downloaded yet: a run fetches it first (or `trainrun check --download`)\n";
      return kExitOk;
    }
    return check_without_data(args, options, e.what(), schedule, steps_per_epoch);
  }
}

}  // namespace

// Without --download nothing is fetched: what a run would download is a note, and for a dataset
// not here yet the report covers what does not need it (check_without_data).
int cmd_check(const std::vector<std::string>& args, bool schedule, bool origin, bool download, int64_t steps_per_epoch) {
  std::vector<ValueOrigin> loaded;
  auto built = job_or_report_without_data(args, schedule, origin, download, steps_per_epoch, loaded);
  if (const int* code = std::get_if<int>(&built)) return *code;
  Job& job = std::get<Job>(built);
  if (steps_per_epoch > 0)
    job.notes.push_back("--steps-per-epoch " + std::to_string(steps_per_epoch) + " ignored: the data gives the run's length");
  fit_global_batch(job, job.config.world.world_size());
  const RunConfig& c = job.config;
  int64_t batch = c.data.batch_size, accum = c.train.grad_accum_steps;
  const int64_t world = c.world.world_size();
  // What a run checks before it starts: optimizer, scheduler, one example through each pipeline.
  RunLength length = preflight(job, world);
  // What output.resume will do with the folder; the optimizer's fit matters only for a resume.
  const ResumePlan plan = plan_resume(job, world);
  if (plan.action == ResumePlan::Action::Resume) check_resume_fits(job);
  const int64_t steps = length.steps_per_epoch, total = length.total_steps;
  if (schedule) {
    const CheckedOptimization o = checked_optimization(job, total, steps);
    print_schedule(job, *o.optimizer, *o.scheduler, total);
    return kExitOk;
  }
  if (origin)
    print_values(job.recipe.file, resolved_values(job.recipe, loaded));
  else
    std::cout << "# resolved recipe (" << job.recipe.file << ")\n" << resolved_recipe_text(job) << "\n";
  std::cout << "model: " << c.model << ", " << thousands(job.total_parameters())
            << " parameters, " << thousands(job.trainable_parameters()) << " trainable\n";
  std::cout << "data: " << c.data.dataset << ", " << job.data.classes.size()
            << " classes, " << thousands(int64_t(job.data.train->size())) << " train / "
            << thousands(int64_t(job.data.eval->size())) << " " << job.data.eval_split_name << " examples\n";
  int64_t unopened = 0;
  if (const StreamingDataset* train = streaming_source(*job.data.train)) {
    unopened += print_shards("train", train->shards(), world);
    if (const auto* eval = streaming_source(*job.data.eval)) unopened += print_shards(job.data.eval_split_name, eval->shards(), world);
  } else {
    // A multi-label image counts once for each of its classes.
    const char* what = job.data.train->multilabel() ? " images per class: " : " class counts: ";
    std::cout << "  train" << what << class_counts_line(*job.data.train, job.data.classes) << "\n";
    std::cout << "  " << job.data.eval_split_name << what << class_counts_line(*job.data.eval, job.data.classes) << "\n";
  }
  print_pipelines(job);
  std::cout << "steps per epoch: " << steps << " (batch " << batch << " x " << world << " process"
            << (world > 1 ? "es" : "") << (accum > 1 ? " x " + std::to_string(accum) + " accumulated" : "") << "), total " << total << " optimizer steps\n";
  print_world(job);
  std::cout << "run folder: " << describe(plan, job, world) << "\n";
  print_param_groups(job);
  for (auto& note : job.notes) std::cout << "note: " << note << "\n";
  if (unopened > 0) {
    std::cerr << "check: " << unopened << " shard" << (unopened > 1 ? "s" : "") << " cannot be opened (listed above)\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace trainrun::cli
