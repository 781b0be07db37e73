#include "components/data/shards/shard_stream.h"

#include "components/data/data_error.h"

#include <spdlog/spdlog.h>

#include <random>

namespace trainrun::wds {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One 64-bit value from a tuple: the same on every machine and library (std::shuffle's and
// the distributions' algorithms are not specified).
uint64_t mix(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (uint64_t p : parts) h = splitmix(h ^ splitmix(p));
  return h;
}

}  // namespace

nlohmann::json StreamState::to_json() const {
  nlohmann::json b = nlohmann::json::array();
  for (auto& [seq, offset] : buffer) b.push_back({seq, offset});
  nlohmann::json out{{"seq", seq},     {"offset", offset},       {"in_item", in_item}, {"draining", draining},
                     {"draws", draws}, {"delivered", delivered}, {"buffer", b}};
  if (items) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& i : *items) list.push_back({i.shard, i.offset, i.first, i.skip, i.take});
    out["items"] = list;
  }
  return out;
}

StreamState StreamState::from_json(const nlohmann::json& j) {
  StreamState s;
  s.seq = j.at("seq").get<int64_t>();
  s.offset = j.at("offset").get<int64_t>();
  s.draining = j.at("draining").get<bool>();
  s.draws = j.at("draws").get<int64_t>();
  s.delivered = j.at("delivered").get<int64_t>();
  for (const auto& e : j.at("buffer")) s.buffer.emplace_back(e.at(0).get<int64_t>(), e.at(1).get<int64_t>());
  s.in_item = j.value("in_item", int64_t(-1));
  if (j.contains("items")) {
    s.items.emplace();
    for (const auto& e : j.at("items"))
      s.items->push_back({e.at(0).get<int64_t>(), e.at(1).get<int64_t>(), e.at(2).get<int64_t>(), e.at(3).get<int64_t>(),
                          e.at(4).get<int64_t>()});
  }
  return s;
}

std::vector<int64_t> own_shards(int64_t n, const StreamPlan& p) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[std::size_t(i)] = i;
  if (p.train && p.set->shuffle_shards) {  // Fisher-Yates, the same draws on every rank
    for (int64_t i = n - 1; i > 0; --i) {
      uint64_t r = mix({p.seed, uint64_t(p.epoch), 0x5348415244ULL /* "SHARD" */, uint64_t(i)});
      std::swap(order[std::size_t(i)], order[std::size_t(r % uint64_t(i + 1))]);
    }
  }
  std::vector<int64_t> mine;
  for (int64_t i = p.rank; i < n; i += p.world) mine.push_back(order[std::size_t(i)]);  // split_by_node
  std::vector<int64_t> out;
  for (std::size_t i = std::size_t(p.stream); i < mine.size(); i += std::size_t(p.streams)) out.push_back(mine[i]);  // split_by_worker
  return out;
}

SampleStream::SampleStream(StreamPlan plan, const StreamState& from) : plan_(std::move(plan)), state_(from) {
  if (from.items) {
    items_ = *from.items;
    for (const auto& i : items_) own_.push_back(i.shard);
  } else {
    own_ = wds::own_shards(int64_t(plan_.set->urls.size()), plan_);
  }
  // The buffered samples are read again from where they were read the first time.
  for (auto& [seq, offset] : from.buffer) {
    try {
      ShardReader r(url(seq), offset, plan_.set->open);
      auto s = r.next();
      if (!s) throw ShardError(url(seq) + ": no sample at byte " + std::to_string(offset));
      buffer_.push_back({std::move(*s), seq});
    } catch (const ShardError& e) {
      throw DataError(std::string("resuming the loader: ") + e.what());
    }
  }
}

const std::string& SampleStream::url(int64_t i) const {
  const auto& urls = plan_.set->urls;
  if (i < int64_t(own_.size())) return urls[std::size_t(own_[std::size_t(i)])];
  // Resampled: a shard drawn from all of them for this position.
  uint64_t r = mix({plan_.seed, uint64_t(plan_.epoch), uint64_t(plan_.rank), uint64_t(plan_.stream), uint64_t(i)});
  return urls[std::size_t(r % uint64_t(urls.size()))];
}

bool SampleStream::pass_ends_after(int64_t seq) const { return seq + 1 >= int64_t(own_.size()); }

int64_t SampleStream::start_offset(int64_t seq) const {
  return seq < int64_t(items_.size()) ? items_[std::size_t(seq)].offset : 0;
}

bool SampleStream::end_entry(int64_t seq) {
  reader_.reset();
  state_.seq = seq + 1;
  state_.offset = start_offset(seq + 1);
  state_.in_item = 0;
  if (plan_.train && pass_ends_after(seq)) {
    state_.draining = true;
    return true;
  }
  return false;
}

uint64_t SampleStream::draw() {
  return mix({plan_.seed, uint64_t(plan_.epoch), uint64_t(plan_.rank), uint64_t(plan_.stream), 0x44524157ULL /* "DRAW" */,
              uint64_t(state_.draws++)});
}

std::optional<SampleStream::Buffered> SampleStream::read_in_pass() {
  for (;;) {
    if (state_.draining) return std::nullopt;
    if (!plan_.train && state_.seq >= int64_t(own_.size())) return std::nullopt;
    if (plan_.set->urls.empty()) return std::nullopt;
    const int64_t seq = state_.seq;
    try {
      if (!reader_) reader_ = std::make_unique<ShardReader>(url(seq), state_.offset, plan_.set->open);
      if (auto s = reader_->next()) {
        state_.offset = reader_->position();
        empty_shards_ = 0;
        if (state_.in_item >= 0) ++state_.in_item;
        if (seq < int64_t(items_.size())) {  // a regrouped stream's part of a shard
          const WorkItem& item = items_[std::size_t(seq)];
          if (state_.in_item <= item.skip) continue;
          if (item.take >= 0 && state_.in_item >= item.skip + item.take) {
            Buffered out{std::move(*s), seq};
            end_entry(seq);
            return out;
          }
        }
        return Buffered{std::move(*s), seq};
      }
    } catch (const ShardError& e) {
      if (!plan_.skip_bad_shards) throw DataError(e.what());
      spdlog::warn("skipped the rest of a shard: {}", e.what());
    }
    // The end of the shard (or of what could be read of it). Training streams never end: shards
    // that all fail or hold no sample would loop for ever.
    reader_.reset();
    if (++empty_shards_ > 2 * int64_t(plan_.set->urls.size()) + 8)
      throw DataError(plan_.set->what + ": no sample in the last " + std::to_string(empty_shards_) +
                      " shards read (the last: " + url(seq) + ")");
    if (end_entry(seq)) return std::nullopt;
  }
}

std::optional<RawSample> SampleStream::next() {
  const int64_t size = plan_.train ? plan_.set->buffer : 0;
  if (plan_.set->urls.empty()) return std::nullopt;  // a training stream would look for ever
  for (;;) {
    if (size <= 1) {
      if (auto b = read_in_pass()) {
        ++state_.delivered;
        return std::move(b->sample);
      }
      if (!plan_.train) return std::nullopt;
      state_.draining = false;  // the next pass
      continue;
    }
    while (int64_t(buffer_.size()) < size && !state_.draining) {
      auto b = read_in_pass();
      if (!b) break;
      buffer_.push_back(std::move(*b));
    }
    if (buffer_.empty()) {
      state_.draining = false;  // drained: the next pass begins
      continue;
    }
    std::size_t k = std::size_t(draw() % uint64_t(buffer_.size()));
    RawSample out = std::move(buffer_[k].sample);
    std::optional<Buffered> in = state_.draining ? std::nullopt : read_in_pass();
    if (in) {
      buffer_[k] = std::move(*in);
    } else {
      buffer_[k] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    state_.buffer.clear();
    for (const auto& b : buffer_) state_.buffer.emplace_back(b.seq, b.sample.offset);
    ++state_.delivered;
    return out;
  }
}

}  // namespace trainrun::wds
