// data.dataset: {name: webdataset, multilabel: true}: a sample's classes from a json list
// ({"labels": [...]}) or from indices in its cls text ("1 3"), as Python scripts write them; a
// sample without one, or with a class past the class list, is one line naming the shard and key.
#include "components/data/data_error.h"
#include "components/data/dataset.h"

#include "make_dataset.h"
#include "test_util.h"

#include <set>

namespace trainrun {
namespace {

// Shards of `train` multi-label samples (tests/py/wds_fixture.py --multilabel), read with `more` keys.
DatasetSplits multilabel_shards(const test::TempDir& dir, int64_t train, const std::string& more = "",
                                const std::string& fixture_args = "") {
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/wds_fixture.py") + " " + (dir / "shards") +
                     " " + std::to_string(train) + " 12 8 --multilabel" + fixture_args);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto& entry = Registry<Dataset>::instance().get("webdataset");
  const YAML::Node node = YAML::Load("{urls: '" + (dir / "shards") + "/train-{000000..000001}.tar', eval_urls: '" +
                                     (dir / "shards") + "/val-000000.tar', multilabel: true" + more + "}");
  return entry.make(Config(test::with_defaults(entry.schema, node), "data.dataset"));
}

TEST(WebDatasetMultilabel, JsonListsAndTextIndicesAreSetsOfClasses) {
  test::TempDir dir;
  const DatasetSplits d = multilabel_shards(dir, 24);
  ASSERT_TRUE(d.train->multilabel());
  ASSERT_EQ(d.classes.size(), 4u);
  int two = 0;
  for (std::size_t i = 0; i < 24; ++i) {
    const std::set<int64_t> want = {int64_t(i % 4), int64_t(i / 4 % 4)};  // the fixture's classes of sample i
    EXPECT_EQ(d.train->labels(i), std::vector<int64_t>(want.begin(), want.end())) << "sample " << i;
    two += want.size() == 2;
  }
  EXPECT_GT(two, 10);
  const Example ex = d.train->get(9);  // an odd sample: its cls holds "1 2"
  EXPECT_EQ(ex.labels, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ex.image.size(2), 3);
}

TEST(WebDatasetMultilabel, MissingAndOutOfRangeLabelsNameTheSample) {
  test::TempDir dir;
  const DatasetSplits d = multilabel_shards(dir, 24, ", classes: [a, b, c]", " --no-label 6");
  const std::string shard = (dir / "shards/train-000000.tar");
  EXPECT_EQ(test::error_of<UnreadableFile>([&] { d.train->labels(6); }),
            shard + ": sample '000006': no label (a cls or label field, or a json field's \"labels\"); its fields: png");
  EXPECT_EQ(test::error_of<DataError>([&] { d.train->labels(3); }),
            shard + ": sample '000003': label 3 is outside the 3 classes (0 to 2)");
  // Read as single-label, "1 2" is not one class.
  test::TempDir other;
  multilabel_shards(other, 24);
  const auto& entry = Registry<Dataset>::instance().get("webdataset");
  const DatasetSplits single = entry.make(Config(
      test::with_defaults(entry.schema, YAML::Load("{urls: '" + (other / "shards") + "/train-000000.tar', eval_urls: '" +
                                                   (other / "shards") + "/val-000000.tar', num_samples: 12}")),
      "data.dataset"));
  EXPECT_FALSE(single.train->multilabel());
  EXPECT_EQ(test::error_of<UnreadableFile>([&] { single.train->label(9); }),
            (other / "shards/train-000000.tar") + ": sample '000009'.cls: '1 2' is not an integer label");
}

}  // namespace
}  // namespace trainrun
