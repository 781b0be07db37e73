// runner/cli/ is the trainrun binary: main.cpp parses the command line and maps errors to exit
// codes; each command lives in its own file (train, check, eval, predict, export, shards, catalog =
// list/describe, reference = describe --format markdown).
#pragma once

#include "runner/distributed/exit_codes.h"
#include "runner/recipe/job.h"

#include <cstdint>
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
