#include "components/data/shards/stream_regroup.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace trainrun::wds {

namespace {

// What one saved stream had left of the epoch: its buffered samples, the rest of the entry it was
// reading, the entries it had not opened.
void left_of(const ShardSet& set, const SavedStream& s, std::deque<WorkItem>& out) {
  std::vector<WorkItem> entries;
  if (s.state.items) {
    entries = *s.state.items;
  } else {
    for (int64_t shard : own_shards(int64_t(set.urls.size()), s.plan)) entries.push_back({shard, 0, 0, 0, -1});
  }
  if (s.state.in_item < 0)
    throw std::invalid_argument("a stream state without in_item (written by an older trainrun)");
  const int64_t n = int64_t(entries.size());
  for (const auto& [seq, offset] : s.state.buffer)
    if (seq < n) out.push_back({entries[std::size_t(seq)].shard, offset, 0, 0, 1});
  for (int64_t seq = s.state.seq; seq < n; ++seq) {
    WorkItem it = entries[std::size_t(seq)];
    if (seq == s.state.seq) {
      const int64_t k = s.state.in_item;  // read of it already, the skipped ones included
      it.offset = s.state.offset;
      it.first += k;
      if (it.take >= 0) it.take -= std::max<int64_t>(0, k - it.skip);
      it.skip = std::max<int64_t>(0, it.skip - k);
      if (it.take == 0) continue;
    }
    out.push_back(it);
  }
}

}  // namespace

Regrouped regroup_streams(const ShardSet& set, const std::vector<SavedStream>& saved, int64_t epoch,
                          const std::vector<int64_t>& demand, int64_t world, int64_t rank) {
  Regrouped r;
  const int64_t shards = int64_t(set.urls.size());
  r.estimated = set.sizes.size() != set.urls.size();
  const int64_t even = shards > 0 ? set.num_samples / shards : 0;
  auto count = [&](const WorkItem& it) {
    if (it.take >= 0) return it.take;
    const int64_t size = r.estimated ? even : set.sizes[std::size_t(it.shard)];
    return std::max<int64_t>(0, size - it.first - it.skip);
  };
  std::deque<WorkItem> supply;
  for (const SavedStream& s : saved) {
    if (s.plan.epoch != epoch)
      throw std::invalid_argument("a stream state of epoch " + std::to_string(s.plan.epoch) + ", not " +
                                  std::to_string(epoch));
    left_of(set, s, supply);
  }
  for (const WorkItem& it : supply) r.supply += count(it);
  for (int64_t q = 0; q < world; ++q) {
    for (int64_t d : demand) {
      r.demand += d;
      std::vector<WorkItem> mine;
      while (d > 0 && !supply.empty()) {
        WorkItem it = supply.front();
        supply.pop_front();
        const int64_t c = count(it);
        if (c == 0) continue;
        if (c > d) {  // the share ends inside this part: the rest goes to the next stream
          WorkItem rest = it;
          rest.skip += d;
          if (rest.take >= 0) rest.take -= d;
          supply.push_front(rest);
          it.take = d;
        }
        d -= std::min(c, d);
        mine.push_back(it);
      }
      if (q != rank) continue;
      StreamState state;
      state.offset = mine.empty() ? 0 : mine.front().offset;
      state.items = std::move(mine);
      r.states.push_back(std::move(state));
    }
  }
  return r;
}

}  // namespace trainrun::wds
