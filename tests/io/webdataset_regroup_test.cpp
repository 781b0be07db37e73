// A WebDataset shard run resumed on another world size and data.workers: the checkpoint's streams
// (their positions and shuffle buffers) are regrouped onto the new ones
// (components/data/shards/stream_regroup.h), so the interrupted epoch goes on with every sample
// it has not yet seen, none twice, none lost. The samples each batch took are recorded
// (TRAINRUN_RECORD_SAMPLE_IDS) and the epoch's are counted over the three sessions of one run:
// 2 processes x 2 streams, then 3 x 1, then 1 x 3, the first two interrupted mid-epoch. A resume that
// replayed the epoch, or kept the old split, reads some samples twice and others never.
#include "support/wds_recipe.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <set>

namespace trainrun {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Sample keys by epoch of the batches in [from, to) recorded in `dir` (every rank's file).
std::map<int64_t, std::vector<std::string>> keys(const std::string& dir, int64_t epoch, int64_t from, int64_t to) {
  std::map<int64_t, std::vector<std::string>> out;
  for (const auto& f : fs::directory_iterator(dir))
    for (const auto& line : test::read_jsonl(f.path().string()))
      if (line["epoch"] == epoch && line["batch"] >= from && line["batch"] < to)
        for (const auto& k : line["ids"]) out[line["batch"].get<int64_t>()].push_back(k.get<std::string>());
  return out;
}

void add(std::multiset<std::string>& seen, const std::map<int64_t, std::vector<std::string>>& batches) {
  for (const auto& [batch, ks] : batches) seen.insert(ks.begin(), ks.end());
}

TEST(WebDatasetRegroup, AnotherWorldAndWorkersGoOnWithEverySampleOfTheEpochOnce) {
  test::TempDir dir;
  // 24 shards of 10: 240 samples, every stream's share a whole number of shards (as in an
  // uninterrupted run, each sample once an epoch). 60 examples a step: 4 steps an epoch.
  ASSERT_EQ(test::write_wds_shards(dir, 240, 10, 40), "");
  test::write_file(dir / "recipe.yaml", test::wds_recipe_head(dir, "000023", 30) +
                                            R"(  train_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  eval_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  batch_size: 10
  global_batch_size: 60
optimizer: {name: adamw, lr: 0.003}
train: {epochs: 2, loss: cross_entropy, metrics: [accuracy], log_every_steps: 1}
world: {master_port: 0}
)");
  auto session = [&](const std::string& rec, const std::string& world, const std::string& interrupt) {
    fs::create_directories(dir / rec);
    return test::run((interrupt.empty() ? "" : "TRAINRUN_INTERRUPT_AT_STEP=" + interrupt + " ") +
                     "TRAINRUN_RECORD_SAMPLE_IDS=" + (dir / rec) + " " +
                     test::trainrun((dir / "recipe.yaml") + " output.dir=" + (dir / "run") + " " + world));
  };
  // 2 x 2 streams, 10 a batch, 3 micro-batches a step: stopped after step 1 (60 samples).
  auto first = session("rec1", "world.nproc_per_node=2 data.workers=2", "1");
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  // 3 x 1 stream, 2 micro-batches a step: the epoch goes on at micro-batch 2 of each process;
  // stopped after step 3, micro-batch 6 (180 samples).
  auto second = session("rec2", "world.nproc_per_node=3 data.workers=1", "3");
  ASSERT_EQ(second.code, 130) << second.out << second.err;
  EXPECT_NE(second.out.find("Regrouped the shard streams of the checkpoint (4 streams) onto 3 process(es) x 1: 180 "
                            "samples of epoch 0 not yet seen, 180 to take"),
            std::string::npos)
      << second.out << second.err;
  // 1 x 3 streams, 6 micro-batches a step: on at micro-batch 18, to the end of the run.
  auto third = session("rec3", "world.nproc_per_node=1 data.workers=3", "");
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  EXPECT_NE(third.out.find("Regrouped the shard streams of the checkpoint (3 streams) onto 1 process(es) x 3: 60 "
                           "samples of epoch 0 not yet seen, 60 to take"),
            std::string::npos)
      << third.out << third.err;
  EXPECT_EQ(json::parse(test::read_file(dir / "run/checkpoint-8/trainer_state.json"))["global_step"], 8);

  std::multiset<std::string> epoch0;
  add(epoch0, keys(dir / "rec1", 0, 0, 3));
  const auto middle = keys(dir / "rec2", 0, 0, 6);
  ASSERT_FALSE(middle.empty());
  EXPECT_EQ(middle.begin()->first, 2);
  add(epoch0, middle);
  add(epoch0, keys(dir / "rec3", 0, 0, 24));
  std::set<std::string> all;
  for (int i = 0; i < 240; ++i) {
    char key[8];
    std::snprintf(key, sizeof key, "%06d", i);  // wds_fixture.py's sample keys
    all.insert(key);
  }
  EXPECT_EQ(epoch0.size(), 240u);
  EXPECT_EQ(std::set<std::string>(epoch0.begin(), epoch0.end()), all);
  // The next epoch, on the last world from its start: each sample once too.
  std::multiset<std::string> epoch1;
  add(epoch1, keys(dir / "rec3", 1, 0, 24));
  EXPECT_EQ(epoch1.size(), 240u);
  EXPECT_EQ(std::set<std::string>(epoch1.begin(), epoch1.end()), all);
}

}  // namespace
}  // namespace trainrun
