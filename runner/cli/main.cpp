// trainrun's command line (docs/reference/cli.md). Exit codes (runner/distributed/exit_codes.h): 0 done, 2 bad
// recipe or command line (nothing started), 1 a run that failed after starting, 130 interrupted and
// 138 pre-empted after a clean checkpoint; a launcher's code for its workers is returned as is.
#include "runner/cli/commands.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/io/thresholds.h"
#include "registry/plugin.h"
#include "registry/registry.h"
#include "runner/recipe/overrides.h"
#include "runner/recipe/resolve.h"
#include "runner/distributed/error_file.h"
#include "support/safetensors.h"
#include "runner/logging/logging.h"
#include "support/errors.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>

namespace trainrun::cli {

Recipe load_recipe_of(const std::vector<std::string>& args) {
  if (args.empty()) throw RecipeError("no recipe given (usage: trainrun RECIPE.yaml [key.path=value ...])");
  std::error_code ec;
  if (args[0].find('=') != std::string::npos && !std::filesystem::exists(args[0], ec))
    throw RecipeError(args[0] + ": the recipe file comes first: trainrun RECIPE.yaml [key=value ...]");
  return load_recipe(args[0], std::vector<std::string>(args.begin() + 1, args.end()));
}

RunConfig run_config_of(const Recipe& recipe) {
  YAML::Node root = YAML::Clone(recipe.root);
  resolve_auto_values(root);
  return RunConfig::from(root);
}

Job load_job(const std::vector<std::string>& args, const JobOptions& options) {
  return build_job(load_recipe_of(args), options);
}

namespace {

// What CLI11 fills in as it parses: every option's value and which subcommand was given.
struct Options {
  std::vector<std::string> args, check_args, eval_args, predict_args, export_args, shards_args, images;
  std::string kind, component, checkpoint, model, format, output, repo, license;
  std::string max_size = "3e9";
  std::string describe_format = "text", reference_dir;
  bool ema = false;
  bool tune_thresholds = false;
  double threshold = std::nan("");  // predict --threshold: none given
  bool schedule = false;
  bool origin = false;
  bool download = false;
  int64_t top_k = 5;
  int64_t steps_per_epoch = 0;
  int64_t max_count = 100000;
  uint64_t seed = 0;
  bool no_shuffle = false;
  PushOptions push;
  LrFindCommand lr_find;
  std::vector<std::string> lr_find_args, sweep_args, cv_args;
  SweepCommand sweep;
  CvCommand cv;
  CLI::App *pusher = nullptr, *lr_finder = nullptr, *sweeper = nullptr, *cross_validation = nullptr;
  CLI::App *check = nullptr, *eval = nullptr, *predict = nullptr, *exporter = nullptr, *shards = nullptr, *list = nullptr,
           *describe = nullptr;
};

void add_push(CLI::App& app, Options& o) {
  o.pusher = app.add_subcommand("push", "upload a run's model to a Hugging Face Hub repository (HF_TOKEN, HF_ENDPOINT), "
                                        "with a model card, as timm's push_to_hf_hub");
  o.pusher->add_option("run", o.push.run_dir, "the run folder (output.dir of a finished run)")->required();
  o.pusher->add_option("--repo", o.push.repo, "ORG/NAME, created if missing")->required();
  o.pusher->add_option("--revision", o.push.revision, "the branch to commit to, created from main if missing (default main)");
  o.pusher->add_flag("--private", o.push.private_repo, "a repository this push creates is private");
  o.pusher->add_option("--message", o.push.message, "the commit message (default: Upload <run> with trainrun)");
  o.pusher->add_option("--checkpoint", o.push.checkpoint,
                       "the weights: the run's final model.safetensors (default), best (checkpoint-best), last (the "
                       "newest checkpoint) or a checkpoint folder");
  o.pusher->add_option("--include", o.push.include, "also the model as onnx (model.onnx) and/or torchscript (model.pt)")
      ->delimiter(',')
      ->check(CLI::IsMember({"onnx", "torchscript"}));
  o.pusher->add_option("--license", o.push.license, "the model card's license, a Hub license id (default: other)");
}

void add_export(CLI::App& app, Options& o) {
  o.exporter = app.add_subcommand("export", "write a checkpoint's model as TorchScript or ONNX, with its preprocessing and labels");
  o.exporter->add_option("recipe", o.export_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.exporter->add_option("--checkpoint", o.checkpoint, "checkpoint or run folder, or .safetensors file")->required();
  o.exporter->add_option("--format", o.format,
                         "torchscript | onnx | hub (the files of a Hugging Face Hub model repository, as timm's "
                         "push_to_hf_hub lays them out, with a model card)")
      ->required();
  o.exporter->add_option("--output", o.output,
                         "the file to write (default: beside the weights, model.pt / model.onnx), or hub's folder "
                         "(new or empty; default: hub/ beside the weights)");
  o.exporter->add_option("--repo", o.repo, "hub: the repository ORG/NAME the model card's snippets load from "
                                           "(default: local-dir:FOLDER)");
  o.exporter->add_option("--license", o.license, "hub: the model card's license, a Hub license id (default: other)");
  o.exporter->add_flag("--ema", o.ema, std::string("the EMA weights (") + kEmaModelFile + " of a checkpoint or run folder)");
}

void add_shards(CLI::App& app, Options& o) {
  o.shards = app.add_subcommand("shards", "write the recipe's data.dataset as WebDataset tar shards, with sizes.json and classes.txt");
  o.shards->add_option("recipe", o.shards_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.shards->add_option("--output", o.output, "the folder to write (new or empty): train-000000.tar ..., "
                                             "<eval split>-000000.tar ..., sizes.json, classes.txt")
      ->required();
  o.shards->add_option("--max-count", o.max_count, "samples per shard at most (default 100000, as webdataset's ShardWriter)")
      ->check(CLI::PositiveNumber);
  o.shards->add_option("--max-size", o.max_size,
                       "bytes per shard file at most: 256MB, 1GB, 512KB (powers of 1000), 1GiB, or a number (default "
                       "3e9, as ShardWriter); a larger sample gets a shard of its own");
  o.shards->add_option("--seed", o.seed, "the sample order: torch.randperm(n) seeded with it (default 0)");
  o.shards->add_flag("--no-shuffle", o.no_shuffle, "keep the dataset's order (a class-sorted folder makes one-class shards)");
}

void add_lr_find(CLI::App& app, Options& o) {
  o.lr_finder = app.add_subcommand("lr-find", "the learning-rate range test (fastai's lr_find) on the recipe's model, data, "
                                              "optimizer and world: lr_find.csv, lr_find.png and suggested rates");
  o.lr_finder->add_option("recipe", o.lr_find_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.lr_finder->add_option("--start", o.lr_find.start, "the first step's lr (default 1e-7)");
  o.lr_finder->add_option("--end", o.lr_find.end, "the lr the steps rise towards (default 10)");
  o.lr_finder->add_option("--steps", o.lr_find.steps, "optimizer steps at most (default 100); the test stops "
                                                      "earlier when the smoothed loss passes 4x its best");
  o.lr_finder->add_option("--mode", o.lr_find.mode, "exp (the default: lr grows geometrically) | linear")
      ->check(CLI::IsMember({"exp", "linear"}));
  o.lr_finder->add_option("--output", o.lr_find.output, "the folder for lr_find.csv and lr_find.png (default: "
                                                        "output.dir/lr_find; nothing else of output.dir is touched)");
}

void add_sweep_and_cv(CLI::App& app, Options& o) {
  o.sweeper = app.add_subcommand("sweep", "one run per combination of overrides given as key=a,b,c (Hydra's -m syntax), "
                                          "each in OUTPUT_DIR/sweep/NNN-key=value,.../; then sweep_report.csv/.md and "
                                          "sweep_plot.png");
  o.sweeper->add_option("recipe", o.sweep_args, "RECIPE.yaml, then key=value overrides and key=a,b,c sweeps")->required();
  o.sweeper->add_flag("--grid", "every combination (the default)");
  o.sweeper->add_option("--random", o.sweep.count, "N combinations drawn from the grid, without repetition, instead");
  o.sweeper->add_option("--seed", o.sweep.seed, "the draw of --random (default 0)");
  o.sweeper->add_option("--parallel", o.sweep.parallel,
                        "runs at a time (default 1); runs x processes x threads must fit the machine's CPUs "
                        "(threads_per_proc: auto is shared out)");
  o.cross_validation = app.add_subcommand("cv", "k-fold cross-validation: K runs in OUTPUT_DIR/fold-I/, each evaluating on "
                                                "one part of the training split; cv_report.json, the table of "
                                                "every fold and oof_predictions.csv");
  o.cross_validation->add_option("recipe", o.cv_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.cross_validation->add_option("--folds", o.cv.folds, "K (default 5)")->check(CLI::Range(2, 1000));
  o.cross_validation->add_flag("--stratified", o.cv.stratified,
                               "each fold keeps the classes' proportions (scikit-learn's StratifiedKFold)");
  o.cross_validation->add_option("--fold", o.cv.fold,
                                 "run fold I only (0 .. K-1; one task of a job array); the report waits for every fold")
      ->check(CLI::NonNegativeNumber);
}

void add_commands(CLI::App& app, Options& o) {
  app.add_option("recipe", o.args, "RECIPE.yaml followed by key.path=value overrides");
  o.check = app.add_subcommand("check", "validate, print the resolved recipe, build model and data (no training)");
  o.check->add_option("recipe", o.check_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.check->add_flag("--schedule", o.schedule, "print `step lr [momentum]` for every optimizer step of the run instead");
  o.check->add_flag("--origin", o.origin,
                    "print each value of the resolved recipe with where it came from (file:line, command line, "
                    "default, auto)");
  o.check->add_flag("--download", o.download,
                    "fetch what the run would download (datasets with download: true, Hub weights) first");
  o.check->add_option("--steps-per-epoch", o.steps_per_epoch,
                      "optimizer steps per epoch, for the schedule of a recipe whose data is not downloaded yet")
      ->check(CLI::PositiveNumber);
  o.eval = app.add_subcommand("eval", "evaluate a checkpoint folder or .safetensors file on the eval split");
  o.eval->add_option("recipe", o.eval_args, "RECIPE.yaml [key.path=value ...]")->required();
  o.eval->add_option("--checkpoint", o.checkpoint, "checkpoint folder or .safetensors file")->required();
  o.eval->add_flag("--tune-thresholds", o.tune_thresholds,
                   std::string("multilabel: per class, the threshold with the best F1 on the eval split, written to ") +
                       kThresholdsFile + " beside the weights (predict and export use it)");
  o.predict = app.add_subcommand("predict", "classify image files; one JSON line per image on stdout");
  o.predict->add_option("recipe", o.predict_args, "RECIPE.yaml [key.path=value ...] (not with --model)");
  o.predict->add_option("--checkpoint", o.checkpoint, "checkpoint folder or .safetensors file (with a recipe)");
  o.predict->add_option("--model", o.model, "a `trainrun export --format torchscript` file: no recipe, no dataset");
  o.predict->add_option("--top-k", o.top_k, "classes listed per image (default 5)");
  o.predict->add_option("--threshold", o.threshold,
                        std::string("multilabel: one threshold for every class, instead of the model's (") +
                            kThresholdsFile + " beside the weights, else train.threshold)")
      ->check(CLI::Range(0.0, 1.0));
  o.predict->add_option("--images", o.images,
                         "image files, folders (their images, recursively) or quoted patterns (also accepted after "
                         "the recipe and its overrides)");
  o.predict->add_option("--output", o.output,
                        "also write every image's top k to FILE.csv or FILE.jsonl, in the columns of timm's "
                        "inference.py (filename, index, label, prob)");
  add_export(app, o);
  add_push(app, o);
  add_lr_find(app, o);
  add_sweep_and_cv(app, o);
  add_shards(app, o);
  o.list = app.add_subcommand("list", "what the registries hold");
  std::string kind_names;  // the registries' kinds, not a list kept here
  for (auto& [name, _] : kinds()) kind_names += (kind_names.empty() ? "" : " | ") + name;
  o.list->add_option("kind", o.kind, kind_names);
  o.describe = app.add_subcommand("describe", "one component's parameters, e.g. describe optimizers/adamw");
  o.describe->add_option("component", o.component, "KIND/NAME (or recipe/SECTION); none with --format markdown");
  o.describe->add_option("--format", o.describe_format,
                         "text (the default): the component's parameters on stdout | markdown: every reference page "
                         "of the documentation (recipe, components, command line, exit codes) into --output DIR")
      ->check(CLI::IsMember({"text", "markdown"}));
  o.describe->add_option("--output", o.reference_dir,
                         "the folder --format markdown writes recipe.md, components.md, cli.md and exit-codes.md to "
                         "(made if missing; required with markdown)");
  app.require_subcommand(0, 1);
}

int run_command(const CLI::App& app, const Options& o, const std::vector<std::string>& argv, TrainState& state) {
  if (*o.list) return cmd_list(o.kind);
  if (*o.describe) return cmd_describe(o.component, o.describe_format, o.reference_dir, app);
  if (*o.check) return cmd_check(o.check_args, o.schedule, o.origin, o.download, o.steps_per_epoch);
  if (*o.eval) return cmd_eval(o.eval_args, o.checkpoint, o.tune_thresholds);
  if (*o.predict) return cmd_predict(o.predict_args, o.checkpoint, o.model, o.top_k, o.images, o.output, o.threshold);
  if (*o.exporter) return cmd_export(o.export_args, o.checkpoint, o.format, o.output, o.ema, o.repo, o.license);
  if (*o.pusher) return cmd_push(o.push);
  if (*o.lr_finder) return cmd_lr_find(o.lr_find_args, o.lr_find, argv, state);
  if (*o.sweeper) {
    SweepCommand c = o.sweep;
    c.random = o.sweeper->count("--random") > 0;
    if (c.random && o.sweeper->count("--grid"))
      throw RecipeError("sweep: --grid and --random N are two ways to choose the runs; give one");
    return cmd_sweep(o.sweep_args, c);
  }
  if (*o.cross_validation) return cmd_cv(o.cv_args, o.cv);
  if (*o.shards) return cmd_shards(o.shards_args, o.output, o.max_count, o.max_size, o.seed, o.no_shuffle);
  if (o.args.empty()) {
    std::cout << app.help();
    return kExitBadInput;
  }
  return cmd_train(o.args, argv, state);
}

// The value of an unknown option: `--key=VALUE`, or the argument after it.
std::string option_value(const std::string& given, const std::vector<std::string>& argv) {
  const std::size_t eq = given.find('=');
  if (eq != std::string::npos) return given.substr(eq + 1);
  const auto at = std::find(argv.begin(), argv.end(), given);
  if (at != argv.end() && at + 1 != argv.end() && (at + 1)->rfind("--", 0) != 0) return *(at + 1);
  return "VALUE";
}

// What CLI11 left unparsed (the app allows extras): a recipe key given as an option, timm's and
// the Trainer's habit (`--epochs 3`), is answered with the override to write when the option's
// name is a key's last part (a near name would be a guess); anything else is CLI11's own error.
// `argv` finds the option's value, which CLI11 took as a positional.
void answer_unparsed(const CLI::App& app, const Options& o, const std::vector<std::string>& argv) {
  const std::vector<std::string> rest = app.remaining(true);
  if (rest.empty()) return;
  const std::string& first = rest.front();
  const bool takes_recipe = !*o.list && !*o.describe;
  if (takes_recipe && first.rfind("--", 0) == 0) {
    const std::string option = first.substr(0, first.find('='));
    std::string name = option.substr(2);
    std::replace(name.begin(), name.end(), '-', '_');  // --batch-size is batch_size
    const std::string key = closest(name, recipe_key_paths(), /*by_last_part=*/true);
    if (!key.empty() && key.substr(key.rfind('.') + 1) == name)
      throw RecipeError(option + ": not an option; recipe keys are overrides: use " + key + "=" + option_value(first, argv));
  }
  throw CLI::ExtrasError(rest);
}

// An exception's first line, without LibTorch's "Exception raised from" trace. gloo's errors
// start with where in gloo they were raised ("[./gloo/transport/tcp/pair.cc:598] Connection closed
// by peer [127.0.0.1]:35203" when another rank died): the user needs to know that the world broke.
std::string plain_error(const std::string& what) {
  std::string line = what.substr(0, what.find('\n'));
  static const std::regex gloo(R"(^\[[^\]]*gloo/[^\]]*\] (.*)$)");
  std::smatch m;
  if (std::regex_match(line, m, gloo)) return "lost contact with another rank (gloo: " + m[1].str() + ")";
  return line;
}

// The one line the user reads, on stderr and (under torchrun) in its error file; the exit code.
int fail(const std::string& message, int code, bool print = true) {
  // One write: ranks share the terminal, and two writes from two ranks interleave mid-line.
  if (print) std::cerr << message + "\n";
  record_error_for_launcher(message);
  return code;
}

int run_cli(int argc, char** argv) {
  // As the Python interpreter does for every PyTorch script: a write to a socket (gloo, the
  // store) or pipe whose other end is gone fails with EPIPE, which the caller reports, instead
  // of killing the process with SIGPIPE (exit 141, no message).
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"trainrun: declarative training jobs on LibTorch.\n"
               "  trainrun RECIPE.yaml [key.path=value ...]    train and evaluate as the recipe says"};
  app.set_version_flag("--version", std::string("trainrun ") + TRAINRUN_VERSION);
  app.allow_extras();  // before the subcommands, which inherit it: answer_unparsed answers them
  Options options;
  add_commands(app, options);
  try {
    app.parse(argc, argv);
    answer_unparsed(app, options, std::vector<std::string>(argv, argv + argc));
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const RecipeError& e) {
    return fail(e.what(), kExitBadInput);
  }
  setup_console_logging();
  TrainState state;
  try {
    load_plugins_from_environment();
  } catch (const std::runtime_error& e) {
    return fail(e.what(), kExitBadInput);
  }
  try {
    return run_command(app, options, std::vector<std::string>(argv, argv + argc), state);
  } catch (const RecipeError& e) {
    return fail(e.what(), kExitBadInput);
  } catch (const DataError& e) {
    return state.started ? fail("rank " + std::to_string(state.rank) + ": " + e.what(), kExitFailed)
                         : fail(e.what(), kExitBadInput);
  } catch (const WeightsError& e) {
    return state.started ? fail("rank " + std::to_string(state.rank) + ": " + e.what(), kExitFailed)
                         : fail(e.what(), kExitBadInput);
  } catch (const TrainingInterrupted& e) {
    return fail("rank " + std::to_string(state.rank) + ": " + e.what(), e.exit_code);
  } catch (const WorldFailure& e) {
    // Every rank stopped at the same step; rank 0 says why, once.
    return fail("rank " + std::to_string(state.rank) + ": " + e.what(), kExitFailed, /*print=*/state.rank == 0);
  } catch (const TrainingError& e) {
    return fail("rank " + std::to_string(state.rank) + ": " + e.what(), kExitFailed);
  } catch (const std::exception& e) {
    return fail("rank " + std::to_string(state.rank) + ": " + plain_error(e.what()), kExitFailed);
  }
}

// Ends the process once everything it wrote is flushed, without running static destructors:
// LibTorch's unregister each of its thousands of operator kernels. In a worker forked from the
// launcher (launcher.h) the dispatcher's pages are still shared with the launcher, so each write
// copies a page: ~1.1 s of the end of every forked rank on the 2-core VM (2026-11-30, perf). As
// Python's multiprocessing ends a forked child (os._exit). Under a sanitizer, exit() as usual: the
// leak check runs at exit.
[[noreturn]] void end_process(int code) {
  if (auto logger = spdlog::default_logger()) logger->flush();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  std::exit(code);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  std::exit(code);
#endif
#endif
  ::_exit(code);
}

}  // namespace
}  // namespace trainrun::cli

int main(int argc, char** argv) { trainrun::cli::end_process(trainrun::cli::run_cli(argc, argv)); }
