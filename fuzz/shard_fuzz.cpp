// WebDataset shards (components/data/shards/tar_samples.cpp): a shard is read whole as samples, then
// reopened at the first few samples' offsets, as a resumed run reopens it; named .tar (reopened by
// seeking) and .tar.gz (read from the start, the samples before the offset passed over). A shard
// may be turned down only with a ShardError (one line naming it).
#include "components/data/shards/webdataset.h"
#include "fuzz/fuzz_util.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  for (const char* name : {"input.tar", "input.tar.gz"}) {
    const std::string path = fuzz::write_file(name, data, size);
    fuzz::expect_only<wds::ShardError>([&] {
      std::vector<int64_t> offsets;
      wds::ShardReader reader(path);
      while (auto s = reader.next()) offsets.push_back(s->offset);
      for (std::size_t i = 0; i < offsets.size() && i < 4; ++i) {
        wds::ShardReader again(path, offsets[i]);
        (void)again.next();
      }
    });
  }
  return 0;
}
