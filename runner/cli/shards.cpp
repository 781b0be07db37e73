// `trainrun shards RECIPE.yaml [overrides] --output DIR [--max-count N] [--max-size 256MB]
// [--seed S] [--no-shuffle]`: the recipe's data.dataset written once as WebDataset tar shards
// (components/data/shards/shard_writer.h): DIR/train-000000.tar ..., DIR/<eval split>-000000.tar ...,
// then DIR/sizes.json and DIR/classes.txt. Only the data is built: no model, no weights.
#include "runner/cli/commands.h"

#include "components/data/shards/shard_writer.h"
#include "components/data/streaming_dataset.h"
#include "runner/recipe/resolve.h"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// Nothing is written over or mixed in: the folder must be new or empty.
void check_new_or_empty(const std::string& output) {
  std::error_code ec;
  const fs::file_status status = fs::status(output, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) throw RecipeError("shards: --output " + output + ": is a file, not a folder; nothing written");
  if (!fs::is_empty(output, ec))
    throw RecipeError("shards: --output " + output + ": the folder is not empty; nothing written (give a new or empty folder)");
}

}  // namespace

int cmd_shards(const std::vector<std::string>& args, const std::string& output, int64_t max_count,
               const std::string& max_size, uint64_t seed, bool no_shuffle) {
  ShardWriterOptions options;
  options.max_count = max_count;
  options.seed = seed;
  options.shuffle = !no_shuffle;
  try {
    options.max_size = parse_byte_size(max_size);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("shards: --max-size ") + e.what());
  }
  if (options.max_size < kTarRecordSize)
    throw RecipeError("shards: --max-size " + max_size + ": below one tar record (" + std::to_string(kTarRecordSize) +
                      " bytes), the smallest shard file");
  check_new_or_empty(output);

  Recipe recipe = load_recipe_of(args);
  resolve_auto_values(recipe.root);
  const RunConfig config = RunConfig::from(recipe.root);
  const DatasetSplits data = build_datasets(recipe, config.data);
  // Read by index, a stream of shards would be read again from its start for every sample.
  if (streaming_source(*data.train))
    throw RecipeError("shards: data.dataset: " + config.data.dataset +
                      " is tar shards already; trainrun shards writes datasets read by index (image_folder, "
                      "pets_folder, mnist, ...)");

  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) throw RecipeError("shards: --output " + output + ": cannot create the folder: " + ec.message());
  std::vector<ShardFile> all = write_shards(*data.train, "train", options, output);
  std::string summary = shards_summary("train", all);
  if (data.eval && data.eval->size() > 0) {
    const std::vector<ShardFile> eval = write_shards(*data.eval, data.eval_split_name, options, output);
    summary += "; " + shards_summary(data.eval_split_name, eval);
    all.insert(all.end(), eval.begin(), eval.end());
  }
  write_shard_index(output, all, data.classes);
  spdlog::info("shards: {} ({}) in {}", summary,
               options.shuffle ? "shuffled with seed " + std::to_string(seed) : std::string("in the dataset's order"), output);
  return kExitOk;
}

}  // namespace trainrun::cli
