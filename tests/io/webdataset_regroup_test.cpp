// A WebDataset shard run resumed on another world size and data.workers: the checkpoint's streams
// (their positions and shuffle buffers) are regrouped onto the new ones
// (components/data/shards/stream_regroup.h), so the interrupted epoch goes on with every sample
// it has not yet seen, none twice, none lost. The samples each batch took are recorded
// (TRAINRUN_RECORD_SAMPLE_IDS) and the epoch's are counted over the three sessions of one run:
// 2 processes x 2 streams, then 1 x 3, then 2 x 1, each interrupted mid-epoch. A resume that
// replayed the epoch, or kept the old split, reads some samples twice and others never.
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
  // 12 shards of 20: 240 samples, every stream's share a whole number of shards (as in an
  // uninterrupted run, each sample once an epoch). 20 examples a step: 12 steps an epoch.
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/wds_fixture.py") + " " +
                     (dir / "shards") + " 240 20 40");
  ASSERT_EQ(r.code, 0) << r.err;
  test::write_file(dir / "recipe.yaml", R"(seed: 3
model: {name: basicnet, num_classes: auto}
data:
  dataset:
    name: webdataset
    urls: )" + (dir / "shards") + R"(/train-{000000..000011}.tar
    eval_urls: )" + (dir / "shards") + R"(/val-{000000..000001}.tar
    shuffle: {shards: true, buffer: 30}
  train_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  eval_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  batch_size: 10
  global_batch_size: 20
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
  // 2 x 2 streams, 10 a batch: stopped after step 3, 3 batches a process (60 samples).
  auto first = session("rec1", "world.nproc_per_node=2 data.workers=2", "3");
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  // 1 x 3 streams, 2 micro-batches a step: the epoch goes on at micro-batch 6; stopped after step
  // 8, micro-batch 16 (160 samples).
  auto second = session("rec2", "world.nproc_per_node=1 data.workers=3", "8");
  ASSERT_EQ(second.code, 130) << second.out << second.err;
  EXPECT_NE(second.out.find("Regrouped the shard streams of the checkpoint (4 streams) onto 1 process(es) x 3: 180 "
                            "samples of epoch 0 not yet seen, 180 to take"),
            std::string::npos)
      << second.out << second.err;
  // 2 x 1 stream: on at batch 8 of each process, to the end of the run.
  auto third = session("rec3", "world.nproc_per_node=2 data.workers=1", "");
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  EXPECT_NE(third.out.find("Regrouped the shard streams of the checkpoint (3 streams) onto 2 process(es) x 1: 80 "
                           "samples of epoch 0 not yet seen, 80 to take"),
            std::string::npos)
      << third.out << third.err;
  EXPECT_EQ(json::parse(test::read_file(dir / "run/checkpoint-24/trainer_state.json"))["global_step"], 24);

  std::multiset<std::string> epoch0;
  add(epoch0, keys(dir / "rec1", 0, 0, 3));
  const auto middle = keys(dir / "rec2", 0, 0, 16);
  ASSERT_FALSE(middle.empty());
  EXPECT_EQ(middle.begin()->first, 6);
  add(epoch0, middle);
  add(epoch0, keys(dir / "rec3", 0, 0, 12));
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
  add(epoch1, keys(dir / "rec3", 1, 0, 12));
  EXPECT_EQ(epoch1.size(), 240u);
  EXPECT_EQ(std::set<std::string>(epoch1.begin(), epoch1.end()), all);
}

}  // namespace
}  // namespace trainrun
