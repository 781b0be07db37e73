// What the WebDataset resume tests share: their shards (tests/py/wds_fixture.py) and the head of
// their recipe, up to the transforms.
#pragma once

#include "test_util.h"

#include <string>

namespace trainrun::test {

// `train` samples in shards of `per_shard` (and `eval` in others) under dir/shards; "" or why not.
inline std::string write_wds_shards(const TempDir& dir, int train, int per_shard, int eval) {
  RunResult r = run(std::string(kPython) + " " + source("tests/py/wds_fixture.py") + " " + (dir / "shards") + " " +
                    std::to_string(train) + " " + std::to_string(per_shard) + " " + std::to_string(eval));
  return r.code == 0 ? "" : r.err;
}

// seed, model and data.dataset over train shards 0..`last_shard` and 2 eval shards, a shuffle
// buffer of `buffer`; the transforms and the rest of data follow.
inline std::string wds_recipe_head(const TempDir& dir, const std::string& last_shard, int buffer) {
  return "seed: 3\nmodel: {name: basicnet, num_classes: auto}\ndata:\n  dataset:\n    name: webdataset\n"
         "    urls: " + (dir / "shards") + "/train-{000000.." + last_shard + "}.tar\n"
         "    eval_urls: " + (dir / "shards") + "/val-{000000..000001}.tar\n"
         "    shuffle: {shards: true, buffer: " + std::to_string(buffer) + "}\n";
}

}  // namespace trainrun::test
