#include "components/data/loader/stream_loader.h"

#include "components/data/shards/shard_stream.h"
#include "components/data/shards/stream_regroup.h"
#include "components/data/streaming_dataset.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace trainrun {

// One stream's samples, read on a thread of its own and handed over a batch at a time with the
// stream's state after it; a bounded queue, so reading runs ahead of decoding by `capacity` batches.
class StreamLoader::Feed {
 public:
  struct RawBatch {
    int64_t index = 0;
    std::vector<wds::RawSample> samples;
    nlohmann::json after;
  };

  // Training: the stream's batches (index, size) in order; those below `replay_below` are read
  // and dropped (a resume without a saved state). Evaluation: batches of `eval_batch` to the end.
  Feed(wds::StreamPlan plan, wds::StreamState from, std::vector<std::pair<int64_t, int64_t>> batches,
       int64_t replay_below, int64_t eval_batch, std::size_t capacity)
      : capacity_(capacity) {
    thread_ = std::thread([this, plan = std::move(plan), from = std::move(from), batches = std::move(batches),
                           replay_below, eval_batch] { run(plan, from, batches, replay_below, eval_batch); });
  }
  ~Feed() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // The next batch. Without `wait`, nullopt when none is ready yet; `ended` is set when the stream
  // has no more. Rethrows the reading thread's exception.
  std::optional<RawBatch> pop(bool wait, bool& ended) {
    std::unique_lock<std::mutex> lock(mu_);
    if (wait) cv_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
      RawBatch b = std::move(queue_.front());
      queue_.pop_front();
      cv_.notify_all();
      return b;
    }
    if (done_) {
      if (error_) std::rethrow_exception(error_);
      ended = true;
    }
    return std::nullopt;
  }

 private:
  void run(const wds::StreamPlan& plan, const wds::StreamState& from, const std::vector<std::pair<int64_t, int64_t>>& batches,
           int64_t replay_below, int64_t eval_batch) {
    try {
      wds::SampleStream stream(plan, from);
      auto take = [&](int64_t n) {
        std::vector<wds::RawSample> v;
        while (int64_t(v.size()) < n) {
          auto s = stream.next();
          if (!s) break;
          v.push_back(std::move(*s));
        }
        return v;
      };
      if (plan.train) {
        for (const auto& [index, size] : batches) {
          auto v = take(size);
          if (index < replay_below) continue;
          if (!push({index, std::move(v), stream.state().to_json()})) return;
        }
      } else {
        for (int64_t index = 0;; ++index) {
          auto v = take(eval_batch);
          if (v.empty()) break;
          if (!push({index, std::move(v), stream.state().to_json()})) return;
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  bool push(RawBatch b) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
    if (stop_) return false;
    queue_.push_back(std::move(b));
    cv_.notify_all();
    return true;
  }

  std::size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RawBatch> queue_;
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

StreamLoader::StreamLoader(std::shared_ptr<const Dataset> dataset, const StreamingDataset& source, Compose transforms,
                           LoaderOptions options)
    : BatchLoader(std::move(dataset), std::move(transforms), std::move(options)), source_(source) {
  streams_ = std::max<int64_t>(1, options_.workers);
}

StreamLoader::~StreamLoader() {
  wait_pending();  // workers hold `this`: let them finish first
  feeds_.clear();
}

int64_t StreamLoader::examples_per_epoch() const { return int64_t(dataset_->size()) / options_.shard.world_size; }

Example StreamLoader::read(int64_t, const wds::RawSample* raw, const RegionPicker* pick) const {
  return source_.from_sample(*raw, pick);
}

void StreamLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  wait_pending();
  pending_.clear();
  feeds_.clear();
  pending_states_.clear();
  consumed_.assign(std::size_t(streams_), nullptr);
  epoch_ = epoch;
  next_batch_ = skip_batches;
  batches_returned_ = skip_batches;
  eval_turn_ = 0;
  open_feeds(epoch, skip_batches, restored_states(epoch, skip_batches));
  fill();
}

std::optional<std::vector<nlohmann::json>> StreamLoader::restored_states(int64_t epoch, int64_t skip_batches) {
  if (!restore_) return std::nullopt;
  const nlohmann::json all = std::move(*restore_);
  restore_.reset();
  const auto& s = options_.shard;
  const auto& ranks = all.at("ranks");
  if (int64_t(ranks.size()) == s.world_size) {
    const auto& r = ranks.at(std::size_t(s.rank));
    if (r.value("epoch", int64_t(-1)) == epoch && r.value("batches", int64_t(-1)) == skip_batches &&
        r.value("streams", int64_t(-1)) == streams_ && r.value("world_size", int64_t(-1)) == s.world_size &&
        r.value("rank", int64_t(-1)) == s.rank) {
      std::vector<nlohmann::json> from(std::size_t(streams_), nullptr);
      for (std::size_t w = 0; w < from.size(); ++w) from[w] = r.at("state").at(w);
      return from;
    }
  }
  const auto& r0 = ranks.at(0);
  const int64_t saved_epoch = r0.value("epoch", int64_t(-1));
  if (saved_epoch < epoch && skip_batches == 0) return std::nullopt;  // that epoch was over
  std::string why = "not of this epoch";
  if (saved_epoch == epoch) {
    try {
      return regrouped(all, epoch, skip_batches);
    } catch (const std::invalid_argument& e) {
      why = e.what();
    } catch (const nlohmann::json::exception& e) {
      why = e.what();
    }
  }
  spdlog::warn("the checkpoint's loader state (epoch {} after {} batches, {} streams on each of {} ranks) cannot be "
               "continued in epoch {} after {} batches ({}): the batches are replayed", saved_epoch,
               r0.value("batches", int64_t(-1)), r0.value("streams", int64_t(-1)), ranks.size(), epoch, skip_batches,
               why);
  return std::nullopt;
}

wds::StreamPlan StreamLoader::stream_plan(int64_t epoch, int64_t rank, int64_t world, int64_t stream, int64_t streams,
                                          bool train) const {
  wds::StreamPlan plan;
  plan.set = std::shared_ptr<const wds::ShardSet>(dataset_, &source_.shards());  // lives as long as the dataset
  plan.seed = options_.shard.seed;
  plan.epoch = epoch;
  plan.rank = rank;
  plan.world = world;
  plan.stream = stream;
  plan.streams = streams;
  plan.train = train;
  plan.skip_bad_shards = options_.skip_bad_files;
  return plan;
}

// Another world size or data.workers: every saved stream's rest of the epoch dealt to this
// world's streams (shards/stream_regroup.h), each taking what its batches from `skip_batches` on need.
std::vector<nlohmann::json> StreamLoader::regrouped(const nlohmann::json& all, int64_t epoch, int64_t skip_batches) {
  const auto& s = options_.shard;
  std::vector<wds::SavedStream> saved;
  for (const auto& r : all.at("ranks")) {
    const int64_t streams = r.at("streams").get<int64_t>();
    for (int64_t w = 0; w < streams; ++w) {
      wds::SavedStream one;
      one.plan = stream_plan(r.at("epoch").get<int64_t>(), r.at("rank").get<int64_t>(),
                             r.at("world_size").get<int64_t>(), w, streams, /*train=*/true);
      const auto& state = r.at("state").at(std::size_t(w));
      if (!state.is_null()) one.state = wds::StreamState::from_json(state);
      saved.push_back(std::move(one));
    }
  }
  const int64_t nb = batches_per_epoch(), per_rank = examples_per_epoch(), b = options_.batch_size;
  std::vector<int64_t> demand(std::size_t(streams_), 0);
  for (int64_t i = skip_batches; i < nb; ++i) demand[std::size_t(i % streams_)] += std::min(b, per_rank - i * b);
  const wds::Regrouped g = wds::regroup_streams(source_.shards(), saved, epoch, demand, s.world_size, s.rank);
  if (s.rank == 0) {
    spdlog::info("Regrouped the shard streams of the checkpoint ({} streams) onto {} process(es) x {}: {} samples of "
                 "epoch {} not yet seen, {} to take{}", saved.size(), s.world_size, streams_, g.supply, epoch,
                 g.demand, g.estimated ? " (shard sizes taken as num_samples / shards: no sizes.json)" : "");
    if (g.supply != g.demand)
      spdlog::warn("{} samples of epoch {} are {}", std::abs(g.supply - g.demand), epoch,
                   g.supply > g.demand ? "left unread (more than the rest of the epoch takes)"
                                       : "drawn again from random shards (the rest of the epoch takes more)");
  }
  std::vector<nlohmann::json> out;
  for (const auto& state : g.states) out.push_back(state.to_json());
  return out;
}

void StreamLoader::open_feeds(int64_t epoch, int64_t skip_batches, const std::optional<std::vector<nlohmann::json>>& from) {
  const auto& s = options_.shard;
  const bool train = s.shuffle, restored = from.has_value();
  const int64_t nb = batches_per_epoch(), per_rank = examples_per_epoch(), b = options_.batch_size;
  const std::size_t capacity = std::size_t(std::max<int64_t>(2, options_.prefetch_batches_per_worker));
  for (int64_t w = 0; w < streams_; ++w) {
    const wds::StreamPlan plan = stream_plan(epoch, s.rank, s.world_size, w, streams_, train);
    std::vector<std::pair<int64_t, int64_t>> batches;
    if (train)
      for (int64_t i = w; i < nb; i += streams_)
        if (!restored || i >= skip_batches) batches.emplace_back(i, std::min(b, per_rank - i * b));
    const nlohmann::json saved = restored ? (*from)[std::size_t(w)] : nlohmann::json();
    wds::StreamState state = saved.is_null() ? wds::StreamState{} : wds::StreamState::from_json(saved);
    if (restored) consumed_[std::size_t(w)] = saved;
    feeds_.push_back(std::make_unique<Feed>(plan, state, std::move(batches), restored ? 0 : skip_batches, b, capacity));
  }
}

void StreamLoader::fill() {
  if (!options_.shard.shuffle) return fill_eval();
  while (int64_t(pending_.size()) < window()) {
    if (next_batch_ >= batches_per_epoch()) return;
    const int64_t w = next_batch_ % streams_;
    bool ended = false;
    auto raw = feeds_[std::size_t(w)]->pop(/*wait=*/pending_.empty(), ended);
    if (!raw) {
      if (ended) throw DataError("internal: a shard stream ended before its batches");
      return;  // not read yet: the next call takes it
    }
    pending_states_.emplace_back(w, std::move(raw->after));
    if (!options_.record_ids.empty()) {
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& sample : raw->samples) keys.push_back(sample.key);
      record(keys, next_batch_);
    }
    schedule({}, std::move(raw->samples), next_batch_++);
  }
}

// Evaluation: the streams in turn, each to its end.
void StreamLoader::fill_eval() {
  while (int64_t(pending_.size()) < window()) {
    int64_t tried = 0;
    for (; tried < streams_; ++tried) {
      const int64_t w = eval_turn_;
      if (!feeds_[std::size_t(w)]) {
        eval_turn_ = (eval_turn_ + 1) % streams_;
        continue;
      }
      bool ended = false;
      auto raw = feeds_[std::size_t(w)]->pop(/*wait=*/pending_.empty(), ended);
      if (raw) {
        pending_states_.emplace_back(w, std::move(raw->after));
        schedule({}, std::move(raw->samples), next_batch_++);
        eval_turn_ = (eval_turn_ + 1) % streams_;
        break;
      }
      if (!ended) return;  // its turn, not read yet
      feeds_[std::size_t(w)].reset();
      eval_turn_ = (eval_turn_ + 1) % streams_;
    }
    if (tried == streams_) return;  // every stream has ended
  }
}

nlohmann::json StreamLoader::state() const {
  const auto& s = options_.shard;
  return {{"epoch", epoch_}, {"batches", batches_returned_}, {"streams", streams_}, {"rank", s.rank},
          {"world_size", s.world_size}, {"state", consumed_}};
}

void StreamLoader::refill() {
  if (!feeds_.empty()) fill();  // waits for a stream
}

void StreamLoader::on_batch_taken() {
  if (pending_states_.empty()) return;
  consumed_[std::size_t(pending_states_.front().first)] = std::move(pending_states_.front().second);
  pending_states_.pop_front();
  ++batches_returned_;
}

}  // namespace trainrun
