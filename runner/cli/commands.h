// runner/cli/ is the trainrun binary: main.cpp parses the command line and maps errors to exit
// codes; each command lives in its own file (train, check, eval, predict, export, shards, catalog =
// list/describe, reference = describe --format markdown).
#pragma once

#include "runner/distributed/exit_codes.h"
#include "runner/distributed/world_info.h"
#include "runner/recipe/job.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainrun::cli {

// The recipe of `RECIPE.yaml key=value ...` (every command's arguments), and its job built as
// `options` say.
Recipe load_recipe_of(const std::vector<std::string>& args);
Job load_job(const std::vector<std::string>& args, const JobOptions& options = {});
// The recipe's typed sections with the `auto`s that need no job resolved (world, eval batch).
RunConfig run_config_of(const Recipe& recipe);

// The weights file of `--checkpoint`: a .safetensors file, or a folder holding model.safetensors.
std::string weights_file(const std::string& checkpoint);

// What the exit-code mapping needs from a training run: once it has started, a data or weights
// error is exit 1 rather than 2; the rank prefixes the message.
struct TrainState {
  bool started = false;
  int64_t rank = 0;
};

// `trainrun RECIPE.yaml [overrides]`; `argv` relaunches us as the workers.
int cmd_train(const std::vector<std::string>& args, const std::vector<std::string>& argv, TrainState& state);
// The world a launcher (ours, torchrun, SLURM, mpirun) started this process in, with its rank's
// logging; none: one OpenMP thread until the job sets its own (a launcher forks its workers).
std::optional<WorldInfo> launched_world(TrainState& state);
// `body` as this process's part of the job's world: here when a launcher started us (`world`) or
// the world is one process, else in the workers launched with `argv` (this process's command
// line), forked or exec'd as launcher.h says; returns the exit code.
int run_in_world(Job& job, std::optional<WorldInfo> world, int64_t world_size, const std::vector<std::string>& argv,
                 TrainState& state, const std::function<void(Job&, const WorldInfo&)>& body);
// `trainrun lr-find`: the LR range test (runner/train/lr_finder.h) on the recipe's world; writes
// lr_find.csv and lr_find.png into `output` (empty: output.dir/lr_find).
struct LrFindCommand {
  double start = 1e-7, end = 10;
  int64_t steps = 100;
  std::string mode = "exp", output;
};
int cmd_lr_find(const std::vector<std::string>& args, const LrFindCommand& c, const std::vector<std::string>& argv,
                TrainState& state);
// `trainrun sweep` (sweep.cpp): `args` is RECIPE followed by overrides, some of them key=a,b,c.
struct SweepCommand {
  bool random = false;  // --random N (else the grid)
  int64_t count = 0;
  uint64_t seed = 0;
  int64_t parallel = 1;
};
int cmd_sweep(const std::vector<std::string>& args, const SweepCommand& c);
// `trainrun cv` (cv.cpp): K runs, fold I evaluating on the I-th part of the training split;
// `fold` >= 0: that fold only.
struct CvCommand {
  int64_t folds = 5;
  bool stratified = false;
  int64_t fold = -1;
};
int cmd_cv(const std::vector<std::string>& args, const CvCommand& c);
int cmd_check(const std::vector<std::string>& args, bool schedule, bool origin, bool download, int64_t steps_per_epoch);
// `tune_thresholds` (multilabel): thresholds.json from the eval split (runner/io/thresholds.h).
int cmd_eval(const std::vector<std::string>& args, const std::string& checkpoint, bool tune_thresholds);
// `args` is `RECIPE [overrides] [IMAGE...]`, or only images with `exported` (--model); `images`
// are those given with --images (files, folders, patterns: predict_files.h); `output` empty: no
// results file; `threshold` NaN: the model's own (multilabel).
int cmd_predict(const std::vector<std::string>& args, const std::string& checkpoint, const std::string& exported,
                int64_t top_k, const std::vector<std::string>& images, const std::string& output, double threshold);
// `format`: torchscript | onnx | hub; `output` empty: beside the weights; `repo` and `license`:
// the hub folder's model card.
int cmd_export(const std::vector<std::string>& args, const std::string& checkpoint, const std::string& format,
               const std::string& output, bool ema, const std::string& repo, const std::string& license);
// The job of `args` (a recipe) for the model file `weights`: the data not read (labels from the
// run's labels.json), the weights loaded, on the CPU in fp32, in eval mode (export, push).
Job trained_model_job(const std::vector<std::string>& args, const std::string& weights);
// `trainrun push RUN_DIR --repo ORG/NAME`: the run's model as a Hub repository's files
// (hub_folder.h), uploaded and committed (support/hub_upload.h). `checkpoint` empty: the run's
// final model.safetensors; best | last | a checkpoint folder; `include`: onnx, torchscript.
struct PushOptions {
  std::string run_dir, repo, revision = "main", message, checkpoint, license;
  bool private_repo = false;
  std::vector<std::string> include;
};
int cmd_push(const PushOptions& options);
// `trainrun shards`: data.dataset as WebDataset tar shards in `output` (new or empty);
// `max_size` as --max-size takes it ("256MB").
int cmd_shards(const std::vector<std::string>& args, const std::string& output, int64_t max_count,
               const std::string& max_size, uint64_t seed, bool no_shuffle);
int cmd_list(const std::string& kind);
// "int | auto": a parameter's type and the words it also takes, as `describe` and the reference print it.
std::string type_text(const Param& p);
// `format` text: `what` (KIND/NAME or recipe/SECTION) as it prints; markdown: write_reference to
// `output`.
int cmd_describe(const std::string& what, const std::string& format, const std::string& output, const CLI::App& app);

// The reference pages of the documentation site (reference.cpp), written whole into `dir` (made if
// missing): recipe.md, components.md, cli.md (every command and option of `app`, the command line
// that add_commands built) and exit-codes.md. Components that plugins registered are left out.
int write_reference(const CLI::App& app, const std::string& dir);

}  // namespace trainrun::cli
