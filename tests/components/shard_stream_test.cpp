// The streams a webdataset epoch is read as (components/data/shards/shard_stream.h): ranks and their
// streams read disjoint shards that together cover the epoch, short ranks go on into resampled
// shards so every rank delivers num_samples / world, and a stream rebuilt from its saved state
// goes on with exactly the samples the original would have given.
#include "components/data/shards/shard_stream.h"
#include "components/data/streaming_dataset.h"
#include "components/make_dataset.h"
#include "test_util.h"

#include <set>

namespace trainrun {
namespace shard_stream_test {

namespace fs = std::filesystem;

class ShardStream : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/wds_fixture.py") + " " +
                       (dir / "shards") + " 320 40 40");  // train-000000..7 of 40, val-000000
    ASSERT_EQ(r.code, 0) << r.err;
    data = test::make_dataset("webdataset", "{urls: '" + (dir / "shards") + "/train-{000000..000007}.tar', eval_urls: '" +
                                                (dir / "shards") + "/val-000000.tar', num_samples: null, "
                                                "shuffle: {shards: true, buffer: 30}, classes: null, image_key: '', "
                                                "label_key: '', cache_dir: null, retries: 3, eval_split_name: val, channels: 3}");
    set = std::shared_ptr<const wds::ShardSet>(data.train, &streaming_source(*data.train)->shards());
  }
  wds::StreamPlan plan(int64_t rank, int64_t world, int64_t stream, int64_t streams, int64_t epoch = 0) const {
    wds::StreamPlan p;
    p.set = set;
    p.seed = 7;
    p.epoch = epoch;
    p.rank = rank;
    p.world = world;
    p.stream = stream;
    p.streams = streams;
    return p;
  }
  static std::vector<std::string> keys(wds::SampleStream& s, int64_t n) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(s.next().value().key);
    return out;
  }
  test::TempDir dir;
  DatasetSplits data;
  std::shared_ptr<const wds::ShardSet> set;
};

TEST_F(ShardStream, RanksAndStreamsReadDisjointSamplesCoveringTheEpoch) {
  ASSERT_EQ(set->num_samples, 320);  // from sizes.json
  std::set<std::string> all;
  for (const auto& s : wds::read_samples(set->urls)) all.insert(s.key);
  ASSERT_EQ(all.size(), 320u);
  // 2 ranks x 2 streams: each stream's own shards are 2 of the 8 (80 samples), the shard order a
  // permutation drawn from seed + epoch.
  std::set<int64_t> shards;
  std::set<std::string> seen;
  for (int64_t rank = 0; rank < 2; ++rank)
    for (int64_t stream = 0; stream < 2; ++stream) {
      auto own = wds::own_shards(8, plan(rank, 2, stream, 2));
      EXPECT_EQ(own.size(), 2u);
      shards.insert(own.begin(), own.end());
      wds::SampleStream s(plan(rank, 2, stream, 2));
      for (const auto& k : keys(s, 80)) EXPECT_TRUE(seen.insert(k).second) << k << " read twice";
    }
  EXPECT_EQ(shards.size(), 8u);
  EXPECT_EQ(seen, all);
  // Seeded by epoch: another epoch, another order; the same epoch, the same order.
  EXPECT_EQ(wds::own_shards(8, plan(0, 2, 0, 2, 3)), wds::own_shards(8, plan(0, 2, 0, 2, 3)));
  bool differs = false;
  for (int64_t e = 1; e < 4; ++e) differs |= wds::own_shards(8, plan(0, 1, 0, 1, e)) != wds::own_shards(8, plan(0, 1, 0, 1, 0));
  EXPECT_TRUE(differs);
}

TEST_F(ShardStream, EveryRankDeliversNumSamplesOverWorldShortOnesFromResampledShards) {
  // 3 ranks of 8 shards: ranks 0 and 1 own 3 shards (120 samples), rank 2 owns 2 (80) and goes on
  // into resampled shards: all three deliver 320 / 3 = 106 samples in 7 batches.
  auto& transforms = Registry<Transform>::instance();
  Compose t(std::vector<std::shared_ptr<Transform>>{
      transforms.get("resize").make(Config(YAML::Load("{size: [8, 8], max_size: null}"), "resize"), ModelInput{}),
      transforms.get("to_tensor").make(Config(YAML::Load("{}"), "to_tensor"), ModelInput{})});
  for (int64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o;
    o.batch_size = 16;
    o.workers = 2;
    o.shard.seed = 7;
    o.shard.rank = rank;
    o.shard.world_size = 3;
    DataLoader loader(data.train, t, o);
    EXPECT_EQ(loader.examples_per_epoch(), 106);
    EXPECT_EQ(loader.batches_per_epoch(), 7);
    auto batches = test::load_epoch(loader, 0);
    int64_t n = 0;
    for (const auto& b : batches) n += b.inputs.size(0);
    EXPECT_EQ(batches.size(), 7u) << "rank " << rank;
    EXPECT_EQ(n, 106) << "rank " << rank;
  }
}

TEST_F(ShardStream, AStreamRebuiltFromItsStateGoesOnExactly) {
  // Points inside the first pass (buffer filling, then full), across its end (the buffer
  // draining) and inside the resampled shards after it.
  for (int64_t taken : {5, 57, 60, 75, 83, 130}) {
    wds::SampleStream original(plan(1, 2, 0, 2, 2));
    keys(original, taken);
    nlohmann::json saved = original.state().to_json();
    wds::SampleStream rebuilt(plan(1, 2, 0, 2, 2), wds::StreamState::from_json(nlohmann::json::parse(saved.dump())));
    EXPECT_EQ(keys(rebuilt, 120), keys(original, 120)) << "after " << taken << " samples: " << saved.dump();
  }
  // A state from another shard set is refused with the shard that does not hold the sample.
  wds::StreamState bad;
  bad.buffer = {{0, 123}};
  std::string err = test::error_of<DataError>([&] { wds::SampleStream s(plan(0, 1, 0, 1), bad); });
  EXPECT_NE(err.find("resuming the loader: "), std::string::npos) << err;
}

}  // namespace shard_stream_test
}  // namespace trainrun
