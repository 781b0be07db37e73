// trainrun's command line (SPEC §1). Exit codes: 0 done, 2 bad recipe or command line (nothing
// started), 1 a run that failed after starting, 130 interrupted after a clean checkpoint.
#include "components/data/image.h"
#include "components/data/loader.h"
#include "runner/distributed/accelerator.h"
#include "runner/io/checkpoint.h"
#include "runner/io/durable_file.h"
#include "runner/distributed/error_file.h"
#include "runner/recipe/job.h"
#include "runner/distributed/launcher.h"
#include "runner/logging/logging.h"
#include "runner/recipe/preflight.h"
#include "runner/recipe/recipe.h"
#include "runner/logging/report.h"
#include "runner/train/trainer.h"
#include "runner/io/weights.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// Splits `RECIPE.yaml key=value ...` into the recipe and its overrides.
std::pair<std::string, std::vector<std::string>> recipe_args(const std::vector<std::string>& args) {
  if (args.empty()) throw RecipeError("no recipe given (usage: trainrun RECIPE.yaml [key.path=value ...])");
  return {args[0], std::vector<std::string>(args.begin() + 1, args.end())};
}

Job load_job(const std::vector<std::string>& args) {
  auto [file, overrides] = recipe_args(args);
  return build_job(load_recipe(file, overrides));
}

std::string class_counts(const Dataset& d, const std::vector<std::string>& classes) {
  std::vector<int64_t> counts(classes.size(), 0);
  for (std::size_t i = 0; i < d.size(); ++i) ++counts.at(std::size_t(d.label(i)));
  std::string s;
  for (std::size_t c = 0; c < classes.size(); ++c) s += (c ? ", " : "") + classes[c] + ": " + std::to_string(counts[c]);
  return s;
}

LaunchOptions launch_options(const WorldConfig& w) {
  LaunchOptions o;
  o.nproc_per_node = w.nproc_per_node;
  o.nnodes = w.nnodes;
  o.node_rank = w.node_rank;
  o.master_addr = w.master_addr;
  o.master_port = w.master_port;
  o.init_method = w.init_method;
  o.max_restarts = w.max_restarts;
  o.timeout_s = int64_t(w.timeout_s);
  return o;
}

// `check --schedule`: line `step lr [momentum]` is the state after `step` optimizer steps
// (torch's get_last_lr() after that many scheduler.step() calls; step 0 is what the first
// optimizer step uses), so the pairs match metrics.jsonl's step / learning_rate.
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

int cmd_check(const std::vector<std::string>& args, bool schedule) {
  Job job = load_job(args);
  const RunConfig& c = job.config;
  int64_t batch = c.data.batch_size, accum = c.train.grad_accum_steps;
  int64_t nproc = c.world.nproc_per_node, nnodes = c.world.nnodes, world = c.world.world_size();
  // What a run checks before it starts: optimizer, scheduler, one example through each pipeline.
  RunLength length = preflight(job, world);
  const int64_t steps = length.steps_per_epoch, total = length.total_steps;
  if (schedule) {
    auto optimizer = build_optimizer(job);
    auto scheduler = build_scheduler(job, *optimizer, total, steps);
    print_schedule(job, *optimizer, *scheduler, total);
    return 0;
  }
  std::cout << "# resolved recipe (" << job.recipe.file << ")\n" << job.recipe.dump() << "\n";
  std::cout << "model: " << c.model << ", " << thousands(job.total_parameters())
            << " parameters, " << thousands(job.trainable_parameters()) << " trainable\n";
  std::cout << "data: " << c.dataset << ", " << job.data.classes.size()
            << " classes, " << thousands(int64_t(job.data.train->size())) << " train / "
            << thousands(int64_t(job.data.eval->size())) << " " << job.data.eval_split_name << " examples\n";
  std::cout << "  train class counts: " << class_counts(*job.data.train, job.data.classes) << "\n";
  std::cout << "  " << job.data.eval_split_name << " class counts: " << class_counts(*job.data.eval, job.data.classes)
            << "\n";
  std::cout << "steps per epoch: " << steps << " (batch " << batch << " x " << world << " process"
            << (world > 1 ? "es" : "") << (accum > 1 ? " x " + std::to_string(accum) + " accumulated" : "") << "), total " << total << " optimizer steps\n";
  std::cout << "world: " << nnodes << " node" << (nnodes > 1 ? "s" : "") << " x " << nproc << " process"
            << (nproc > 1 ? "es" : "") << ", backend " << c.world.backend << ", " << job.threads
            << " threads per process, device " << job.device << ", precision " << job.precision << "\n";
  for (auto& note : job.notes) std::cout << "note: " << note << "\n";
  return 0;
}

// The weights file of `--checkpoint`: a .safetensors file, or a folder holding model.safetensors.
std::string weights_file(const std::string& checkpoint) {
  if (fs::is_directory(checkpoint)) return (fs::path(checkpoint) / "model.safetensors").string();
  return checkpoint;
}

// The run's labels.json beside the weights (a run folder) or one level up (a checkpoint folder
// inside one); empty when there is none.
std::vector<std::string> run_labels(const std::string& weights) {
  fs::path dir = fs::path(weights).parent_path();
  for (const fs::path& candidate : {dir / "labels.json", dir.parent_path() / "labels.json"}) {
    if (!fs::is_regular_file(candidate)) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(std::ifstream(candidate));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(candidate.string() + ": not a labels file: " + e.what());
    }
    std::vector<std::string> labels(j.size());
    for (auto& [index, name] : j.items()) {
      std::size_t i = std::stoul(index);
      if (i >= labels.size() || !name.is_string()) throw DataError(candidate.string() + ": not a labels file (index " + index + ")");
      labels[i] = name.get<std::string>();
    }
    return labels;
  }
  return {};
}

int cmd_eval(const std::vector<std::string>& args, const std::string& checkpoint) {
  auto [recipe, overrides] = recipe_args(args);
  JobOptions options;
  options.pretrained = false;  // the checkpoint's weights replace them
  Job job = build_job(load_recipe(recipe, overrides), options);
  std::string file = weights_file(checkpoint);
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  DataLoader loader(job.data.eval, job.eval_transforms, loader_options(job, /*train=*/false));
  Accelerator acc(WorldInfo{}, accelerator_options(job));
  EvalResult r = evaluate(*job.model, loader, *job.loss, job, acc, /*keep_predictions=*/true);
  std::vector<std::pair<std::string, double>> shown(r.metrics.begin(), r.metrics.end());
  shown.emplace_back("eval_examples", double(r.examples));
  spdlog::info("{}", python_dict(shown));

  ClassificationReport report = classification_report(r.targets, r.ranked, job.data.classes);
  std::cout << "\n" << report.text() << "\n" << "top-1 accuracy " << fmt::format("{:.4f}", report.accuracy)
            << ", top-5 accuracy " << fmt::format("{:.4f}", report.top5_accuracy) << "\n";
  nlohmann::ordered_json out;
  out["checkpoint"] = checkpoint;
  out["split"] = job.data.eval_split_name;
  for (auto& [key, value] : r.metrics) out[key] = value;
  out.update(report.json());
  // Next to the weights it describes; written whole or not at all.
  fs::path report_path = fs::path(file).parent_path() / "eval_report.json";
  try {
    write_file_atomic(report_path, out.dump(2) + "\n");
  } catch (const FileWriteError& e) {
    throw TrainingError(std::string(e.what()) + " (the report)");
  }
  spdlog::info("Wrote {}", report_path.string());
  return 0;
}

// `predict`: one JSON line per image, in the order given (SPEC §1). Scores are softmax
// probabilities; "logits" is the model's raw output (log-probabilities for basicnet).
int cmd_predict(const std::vector<std::string>& args, const std::string& checkpoint, int64_t top_k,
                const std::vector<std::string>& images) {
  for (auto& image : images)
    if (!fs::is_regular_file(image)) throw RecipeError("predict: " + image + ": no such file");
  if (top_k < 1) throw RecipeError("predict: --top-k must be at least 1");
  auto [recipe, overrides] = recipe_args(args);
  std::string file = weights_file(checkpoint);
  JobOptions options;
  options.pretrained = false;
  options.classes = run_labels(file);
  options.data = options.classes.empty();  // without labels.json the dataset names the classes
  Job job = build_job(load_recipe(recipe, overrides), options);
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  job.model->eval();
  torch::NoGradGuard no_grad;
  const bool skip_bad = job.config.data.skip_bad_files;
  const int64_t channels = job.model->input_config().input_size.at(0);
  int64_t skipped = 0;
  for (auto& image : images) {
    at::Tensor pixels;
    try {
      pixels = decode_image(image, channels);
    } catch (const DataError& e) {
      if (!skip_bad) throw;
      std::cerr << "warning: " << e.what() << " (skipped)\n";  // stdout holds only the JSON lines
      ++skipped;
      continue;
    }
    Rng rng(0);  // eval transforms draw nothing
    at::Tensor out = job.model->forward(job.eval_transforms(pixels, rng).unsqueeze(0).to(job.device))[0].to(at::kFloat).cpu();
    at::Tensor probs = job.model->outputs_log_probs() ? out.exp() : out.softmax(0);
    auto [scores, indices] = probs.topk(std::min<int64_t>(top_k, probs.size(0)));
    auto label = [&](int64_t i) { return std::size_t(i) < job.data.classes.size() ? job.data.classes[std::size_t(i)] : std::to_string(i); };
    nlohmann::ordered_json topk = nlohmann::ordered_json::array();
    for (int64_t k = 0; k < indices.size(0); ++k)
      topk.push_back({{"label", label(indices[k].item<int64_t>())}, {"index", indices[k].item<int64_t>()}, {"score", scores[k].item<double>()}});
    std::vector<double> logits(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
    nlohmann::ordered_json line{{"file", image}, {"label", topk[0]["label"]}, {"index", topk[0]["index"]},
                                {"score", topk[0]["score"]}, {"topk", topk}, {"logits", logits}};
    std::cout << line.dump() << std::endl;
  }
  return skipped ? 1 : 0;
}

int cmd_list(const std::string& kind) {
  bool found = false;
  for (auto& [name, view] : kinds()) {
    if (!kind.empty() && kind != name) continue;
    found = true;
    std::cout << name << ":\n";
    for (auto* e : view->entries()) std::cout << "  " << e->name << std::string(e->name.size() < 18 ? 18 - e->name.size() : 1, ' ') << e->doc << "\n";
  }
  if (!found) {
    std::vector<std::string> all;
    for (auto& [name, _] : kinds()) all.push_back(name);
    throw RecipeError("list: unknown kind '" + kind + "'" + did_you_mean(kind, all));
  }
  return 0;
}

void print_schema(const Schema& schema) {
  if (schema.params().empty()) std::cout << "  (no parameters)\n";
  for (auto& p : schema.params()) {
    std::string type = type_name(p.type);
    for (auto& w : p.choices) type += " | " + w;
    std::cout << "  " << p.name << "  (" << type << ", default " << p.default_text() << ")\n      " << p.doc << "\n";
  }
}

int cmd_describe(const std::string& what) {
  auto slash = what.find('/');
  std::string kind = what.substr(0, slash), name = slash == std::string::npos ? "" : what.substr(slash + 1);
  if (kind == "recipe") {
    std::string section = name == "top" ? "" : name;
    auto sections = section_names();
    if (section != "" && std::find(sections.begin(), sections.end(), section) == sections.end())
      throw RecipeError("describe: unknown recipe section '" + name + "' (one of: top, data, train, output, world)");
    std::cout << "recipe/" << (name.empty() ? "top" : name) << "\n";
    print_schema(section_schema(section));
    return 0;
  }
  auto it = kinds().find(kind);
  if (it == kinds().end() && kinds().count(kind + "s")) it = kinds().find(kind + "s");
  if (it == kinds().end() || name.empty())
    throw RecipeError("describe: expected KIND/NAME such as models/basicnet or optimizers/adamw, got '" + what + "'");
  const EntryInfo* e = it->second->find(name);
  if (!e) {
    throw RecipeError("describe: no " + it->first + "/" + name + did_you_mean(name, it->second->names()));
  }
  std::cout << it->first << "/" << e->name << ": " << e->doc << "\n";
  print_schema(e->schema);
  return 0;
}

}  // namespace
}  // namespace trainrun

int main(int argc, char** argv) {
  using namespace trainrun;
  CLI::App app{"trainrun: declarative training jobs on LibTorch.\n"
               "  trainrun RECIPE.yaml [key.path=value ...]    train and evaluate as the recipe says"};
  app.set_version_flag("--version", std::string("trainrun ") + TRAINRUN_VERSION);
  std::vector<std::string> args, check_args, eval_args;
  std::string kind, component, checkpoint;
  app.add_option("recipe", args, "RECIPE.yaml followed by key.path=value overrides");
  auto* check = app.add_subcommand("check", "validate, print the resolved recipe, build model and data (no training)");
  check->add_option("recipe", check_args, "RECIPE.yaml [key.path=value ...]")->required();
  bool schedule = false;
  check->add_flag("--schedule", schedule, "print `step lr [momentum]` for every optimizer step of the run instead");
  auto* eval = app.add_subcommand("eval", "evaluate a checkpoint folder or .safetensors file on the eval split");
  eval->add_option("recipe", eval_args, "RECIPE.yaml [key.path=value ...]")->required();
  eval->add_option("--checkpoint", checkpoint, "checkpoint folder or .safetensors file")->required();
  auto* predict = app.add_subcommand("predict", "classify image files; one JSON line per image on stdout");
  std::vector<std::string> predict_args, images;
  int64_t top_k = 5;
  predict->add_option("recipe", predict_args, "RECIPE.yaml [key.path=value ...]")->required();
  predict->add_option("--checkpoint", checkpoint, "checkpoint folder or .safetensors file")->required();
  predict->add_option("--top-k", top_k, "classes listed per image (default 5)");
  predict->add_option("--images", images, "image files (also accepted after the recipe and its overrides)");
  auto* list = app.add_subcommand("list", "what the registries hold");
  list->add_option("kind", kind, "models | datasets | optimizers | schedulers | transforms | losses");
  auto* describe = app.add_subcommand("describe", "one component's parameters, e.g. describe optimizers/adamw");
  describe->add_option("component", component, "KIND/NAME (or recipe/SECTION)")->required();
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  setup_console_logging();
  bool started = false;
  int64_t rank = 0;
  // The one line the user reads, on stderr and (under torchrun) in its error file; the exit code.
  auto fail = [](const std::string& message, int code, bool print = true) {
    if (print) std::cerr << message << "\n";
    record_error_for_launcher(message);
    return code;
  };
  try {
    if (*list) return cmd_list(kind);
    if (*describe) return cmd_describe(component);
    if (*check) return cmd_check(check_args, schedule);
    if (*eval) return cmd_eval(eval_args, checkpoint);
    if (*predict) {
      // `predict RECIPE [overrides] IMAGE...`: overrides contain '=', image paths are the rest.
      std::vector<std::string> recipe_part, files = images;
      for (std::size_t i = 0; i < predict_args.size(); ++i)
        (i == 0 || predict_args[i].find('=') != std::string::npos ? recipe_part : files).push_back(predict_args[i]);
      if (files.empty()) throw RecipeError("predict: no image files given (usage: trainrun predict RECIPE.yaml --checkpoint PATH IMAGE...)");
      return cmd_predict(recipe_part, checkpoint, top_k, files);
    }
    if (args.empty()) {
      std::cout << app.help();
      return 2;
    }
    auto world = WorldInfo::from_env();  // set when a launcher (ours, torchrun, SLURM, mpirun) started us
    if (world) {
      rank = world->rank;
      setup_console_logging(rank);
    }
    Job job = load_job(args);
    check_resume_option(job.config.output);
    const int64_t world_size = world ? world->world_size : job.config.world.world_size();
    preflight(job, world_size);  // every recipe mistake is exit 2 before anything is started or written
    if (world || world_size == 1) {
      started = true;
      train(job, world.value_or(WorldInfo{}));
      return 0;
    }
    LaunchOptions o = launch_options(job.config.world);
    o.master_port = reserve_master_port(o);
    std::vector<std::string> argv_copy(argv, argv + argc);
    started = true;
    return launch(argv_copy, o);
  } catch (const RecipeError& e) {
    return fail(e.what(), 2);
  } catch (const DataError& e) {
    return fail(e.what(), started ? 1 : 2);
  } catch (const WeightsError& e) {
    return fail(e.what(), started ? 1 : 2);
  } catch (const TrainingInterrupted& e) {
    return fail("rank " + std::to_string(rank) + ": " + e.what(), e.exit_code);
  } catch (const WorldFailure& e) {
    // Every rank stopped at the same step; rank 0 says why, once.
    return fail("rank " + std::to_string(rank) + ": " + e.what(), 1, /*print=*/rank == 0);
  } catch (const TrainingError& e) {
    return fail("rank " + std::to_string(rank) + ": " + e.what(), 1);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return fail("rank " + std::to_string(rank) + ": " + what.substr(0, what.find("\nException raised from")), 1);
  }
}
