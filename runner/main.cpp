// trainrun's command line (SPEC §1). Exit codes: 0 done, 2 bad recipe or command line (nothing
// started), 1 a run that failed after starting, 130 interrupted after a clean checkpoint.
#include "components/data/loader.h"
#include "runner/accelerator.h"
#include "runner/checkpoint.h"
#include "runner/job.h"
#include "runner/launcher.h"
#include "runner/logging.h"
#include "runner/recipe.h"
#include "runner/trainer.h"
#include "runner/weights.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <filesystem>
#include <iostream>

namespace trainrun {
namespace {

std::string thousands(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(std::size_t(i), ",");
  return s;
}

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

LaunchOptions launch_options(const YAML::Node& w) {
  LaunchOptions o;
  o.nproc_per_node = w["nproc_per_node"].as<int64_t>();
  o.nnodes = w["nnodes"].as<int64_t>();
  o.node_rank = w["node_rank"].as<int64_t>();
  o.master_addr = w["master_addr"].as<std::string>();
  o.master_port = w["master_port"].as<int64_t>();
  o.init_method = w["init_method"].as<std::string>();
  o.max_restarts = w["max_restarts"].as<int64_t>();
  o.timeout_s = int64_t(w["timeout_s"].as<double>());
  return o;
}

// `check --schedule`: line `step lr [momentum]` is the state after `step` optimizer steps
// (torch's get_last_lr() after that many scheduler.step() calls; step 0 is what the first
// optimizer step uses), so the pairs match metrics.jsonl's step / learning_rate.
void print_schedule(const Job& job, torch::optim::Optimizer& optimizer, Scheduler& scheduler, int64_t total) {
  bool momentum = scheduler.cycles_momentum();
  std::cout << "# " << job.recipe.root["scheduler"]["name"].as<std::string>() << ": step lr"
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
  const YAML::Node& root = job.recipe.root;
  int64_t batch = root["data"]["batch_size"].as<int64_t>();
  const YAML::Node& w = root["world"];
  int64_t nproc = w["nproc_per_node"].as<int64_t>(), nnodes = w["nnodes"].as<int64_t>(), world = nproc * nnodes;
  // DistributedSampler's shard (padded), then batches of it, as the trainer counts them.
  int64_t per_rank = (int64_t(job.data.train->size()) + world - 1) / world;
  int64_t accum = root["train"]["grad_accum_steps"].as<int64_t>();
  int64_t steps = ((per_rank + batch - 1) / batch + accum - 1) / accum;
  int64_t total = steps * root["train"]["epochs"].as<int64_t>();
  // Built here too so that optimizer and scheduler mistakes surface before a run starts.
  auto optimizer = build_optimizer(job);
  auto scheduler = build_scheduler(job, *optimizer, total, steps);
  if (schedule) {
    print_schedule(job, *optimizer, *scheduler, total);
    return 0;
  }
  std::cout << "# resolved recipe (" << job.recipe.file << ")\n" << job.recipe.dump() << "\n";
  std::cout << "model: " << root["model"]["name"].as<std::string>() << ", " << thousands(job.total_parameters())
            << " parameters, " << thousands(job.trainable_parameters()) << " trainable\n";
  std::cout << "data: " << root["data"]["dataset"]["name"].as<std::string>() << ", " << job.data.classes.size()
            << " classes, " << thousands(int64_t(job.data.train->size())) << " train / "
            << thousands(int64_t(job.data.eval->size())) << " " << job.data.eval_split_name << " examples\n";
  std::cout << "  train class counts: " << class_counts(*job.data.train, job.data.classes) << "\n";
  std::cout << "  " << job.data.eval_split_name << " class counts: " << class_counts(*job.data.eval, job.data.classes)
            << "\n";
  std::cout << "steps per epoch: " << steps << " (batch " << batch << " x " << world << " process"
            << (world > 1 ? "es" : "") << (accum > 1 ? " x " + std::to_string(accum) + " accumulated" : "") << "), total " << total << " optimizer steps\n";
  std::cout << "world: " << nnodes << " node" << (nnodes > 1 ? "s" : "") << " x " << nproc << " process"
            << (nproc > 1 ? "es" : "") << ", backend " << w["backend"].as<std::string>() << ", " << job.threads
            << " threads per process, device " << job.device << ", precision " << job.precision << "\n";
  for (auto& note : job.notes) std::cout << "note: " << note << "\n";
  return 0;
}

int cmd_eval(const std::vector<std::string>& args, const std::string& checkpoint) {
  Job job = load_job(args);
  std::string file = checkpoint;
  if (std::filesystem::is_directory(file)) file = (std::filesystem::path(file) / "model.safetensors").string();
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  LoaderOptions o;
  o.batch_size = job.recipe.root["data"]["eval_batch_size"].as<int64_t>();
  o.workers = job.recipe.root["data"]["workers"].as<int64_t>();
  o.shard.shuffle = o.shard.pad = false;
  DataLoader loader(job.data.eval, job.eval_transforms, o);
  Accelerator acc(WorldInfo{}, accelerator_options(job));
  EvalResult r = evaluate(*job.model, loader, *job.loss, job, acc);
  std::vector<std::pair<std::string, double>> shown(r.metrics.begin(), r.metrics.end());
  shown.emplace_back("eval_examples", double(r.examples));
  spdlog::info("{}", python_dict(shown));
  return 0;
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
    std::string hint = closest(kind, all);
    throw RecipeError("list: unknown kind '" + kind + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  return 0;
}

void print_schema(const Schema& schema) {
  if (schema.params().empty()) std::cout << "  (no parameters)\n";
  for (auto& p : schema.params()) {
    std::string type = type_name(p.type);
    for (auto& w : p.choices) type += (p.type == Type::String ? " | " : " | ") + w;
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
    std::string hint = closest(name, it->second->names());
    throw RecipeError("describe: no " + it->first + "/" + name + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
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
  try {
    if (*list) return cmd_list(kind);
    if (*describe) return cmd_describe(component);
    if (*check) return cmd_check(check_args, schedule);
    if (*eval) return cmd_eval(eval_args, checkpoint);
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
    check_resume_option(job.recipe.root["output"]);
    if (world || job.recipe.root["world"]["nproc_per_node"].as<int64_t>() * job.recipe.root["world"]["nnodes"].as<int64_t>() == 1) {
      started = true;
      train(job, world.value_or(WorldInfo{}));
      return 0;
    }
    LaunchOptions o = launch_options(job.recipe.root["world"]);
    o.master_port = reserve_master_port(o);
    std::vector<std::string> argv_copy(argv, argv + argc);
    started = true;
    return launch(argv_copy, o);
  } catch (const RecipeError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const DataError& e) {
    std::cerr << e.what() << "\n";
    return started ? 1 : 2;
  } catch (const WeightsError& e) {
    std::cerr << e.what() << "\n";
    return started ? 1 : 2;
  } catch (const TrainingInterrupted& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
    return 130;
  } catch (const TrainingError& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::cerr << "rank " << rank << ": " << what.substr(0, what.find("\nException raised from")) << "\n";
    return 1;
  }
}
