// `trainrun lr-find RECIPE.yaml [overrides] [--start 1e-7 --end 10 --steps 100 --mode exp|linear]
// [--output DIR]`: the learning-rate range test (runner/train/lr_finder.h) on the recipe's model,
// data, optimizer, precision and world. The training loop runs in a temporary folder that is
// removed after; nothing of output.dir's run is read or written but the lr_find/ folder.
#include "runner/cli/commands.h"

#include "runner/export/plot.h"
#include "runner/recipe/preflight.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/lr_finder.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// The loop's run folder, made by the process the user started and inherited by workers it execs.
constexpr const char* kScratchVariable = "TRAINRUN_LR_FIND_SCRATCH";

std::string scratch_folder() {
  if (const char* given = std::getenv(kScratchVariable)) return given;
  std::string pattern = (fs::temp_directory_path() / "trainrun-lr-find-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw RecipeError("lr-find: cannot make a temporary folder in " + fs::temp_directory_path().string());
  ::setenv(kScratchVariable, pattern.c_str(), 1);
  return pattern;
}

LrFindOptions options_of(const LrFindCommand& c) {
  LrFindOptions o;
  o.start = c.start, o.end = c.end, o.steps = c.steps, o.linear = c.mode == "linear";
  if (!(c.start > 0)) throw RecipeError(fmt::format("lr-find: --start {}: must be above 0", c.start));
  if (!(c.end > c.start)) throw RecipeError(fmt::format("lr-find: --end {}: must be above --start ({})", c.end, c.start));
  if (c.steps < 6) throw RecipeError(fmt::format("lr-find: --steps {}: at least 6 (fastai's floor)", c.steps));
  return o;
}

// The recipe's job as a test of `steps` optimizer steps: no evaluation, checkpoint, EMA or push,
// in `scratch`, with as many epochs as the steps take.
void make_test_job(Job& job, const std::string& scratch, int64_t steps, int64_t world_size) {
  job.config.output.dir = scratch;
  job.config.output.save_every = "never";
  job.config.output.resume = "never";
  job.config.output.push_to_hub.reset();
  job.config.output.load_best_model_at_end = false;
  job.config.train.eval_every = "never";
  job.config.train.eval_steps = 0;
  job.config.train.ema.reset();
  job.config.train.log_every_steps = steps + 1;
  const int64_t per_epoch = std::max<int64_t>(run_length(job, world_size).steps_per_epoch, 1);
  job.config.train.epochs = (steps + per_epoch - 1) / per_epoch;
}

std::string curve_csv(const LrFindCurve& c) {
  std::string out = "step,lr,loss,smoothed_loss\n";
  for (std::size_t i = 0; i < c.lrs.size(); ++i)
    out += fmt::format("{},{:.17g},{:.17g},{:.17g}\n", i + 1, c.lrs[i], c.losses[i], c.smoothed[i]);
  return out;
}

std::string curve_png(const LrFindCurve& c, const LrSuggestions& s, const LrFindOptions& o) {
  Plot plot;
  plot.title = "lr-find: smoothed training loss against the learning rate";
  plot.x_label = "learning rate";
  plot.y_label = "loss";
  plot.log_x = !o.linear;
  // As fastai's plot_lr_find: without the last 5 points, where the divergence would set the scale.
  const std::size_t shown = c.lrs.size() > 5 ? c.lrs.size() - 5 : c.lrs.size();
  plot.series = {{"", {c.lrs.begin(), c.lrs.begin() + std::ptrdiff_t(shown)},
                  {c.smoothed.begin(), c.smoothed.begin() + std::ptrdiff_t(shown)}}};
  if (s.steep) plot.markers.push_back({s.steep->lr, fmt::format("steep {:.2e}", s.steep->lr), {200, 60, 40}});
  if (s.minimum) plot.markers.push_back({s.minimum->lr, fmt::format("minimum/10 {:.2e}", s.minimum->lr), {40, 150, 60}});
  return plot_png({plot});
}

void report(const LrFindCurve& c, const LrFindOptions& o, const fs::path& output) {
  const LrSuggestions s = suggest_lrs(c, o.steps);
  fs::create_directories(output);
  write_file_atomic(output / "lr_find.csv", curve_csv(c));
  const std::string png = curve_png(c, s, o);
  if (!png.empty()) write_file_atomic(output / "lr_find.png", png);
  spdlog::info("lr-find: lr {:.2e} to {:.2e} ({}), stopped: {}", o.start, c.lrs.empty() ? o.start : c.lrs.back(),
               o.linear ? "linear" : "exponential", c.stopped);
  if (!s.minimum) {
    spdlog::warn("lr-find: too few steps for a suggestion ({} taken; the first --steps/10 and the last 5 are left out)",
                 c.lrs.size());
  } else {
    std::string lines = "Suggested learning rates (fastai's suggestion functions):\n";
    if (s.steep)
      lines += fmt::format("  steep    {:.2e}  where the smoothed loss falls fastest (loss {:.4g})\n", s.steep->lr, s.steep->loss);
    lines += fmt::format("  minimum  {:.2e}  the lowest smoothed loss ({:.4g} at lr {:.2e}), divided by 10", s.minimum->lr,
                         s.minimum->loss, s.minimum->at_lr);
    spdlog::info("{}", lines);
  }
  spdlog::info("Wrote {} and lr_find.png", (output / "lr_find.csv").string());
}

}  // namespace

int cmd_lr_find(const std::vector<std::string>& args, const LrFindCommand& c, const std::vector<std::string>& argv,
                TrainState& state) {
  const LrFindOptions o = options_of(c);
  std::optional<WorldInfo> world = launched_world(state);
  Job job = load_job(args);
  const int64_t world_size = world ? world->world_size : job.config.world.world_size();
  fit_global_batch(job, world_size);
  preflight(job, world_size);
  const fs::path output = c.output.empty() ? fs::path(job.config.output.dir) / "lr_find" : fs::path(c.output);
  if (!world || world->rank == 0) check_output_folder(output.string());
  const std::string scratch = scratch_folder();
  make_test_job(job, scratch, o.steps, world_size);
  return run_in_world(job, world, world_size, argv, state, [&](Job& j, const WorldInfo& w) {
    auto finder = std::make_shared<LrFinder>(o);
    const auto level = spdlog::default_logger()->level();
    spdlog::default_logger()->set_level(spdlog::level::warn);  // the loop's own lines are about the scratch run
    try {
      train(j, w, {finder}, /*progress=*/false);
    } catch (const WorldFailure&) {
      finder->ended_by_nonfinite_loss();  // a nan/inf loss on some rank: every rank stopped at this step
    }
    spdlog::default_logger()->set_level(level);
    if (w.rank != 0) return;
    report(finder->curve(), o, output);
    std::error_code ec;
    fs::remove_all(scratch, ec);
  });
}

}  // namespace trainrun::cli
