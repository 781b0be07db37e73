#include "components/data/loader.h"

#include "components/data/shard_stream.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>

namespace trainrun {

class ThreadPool {
 public:
  explicit ThreadPool(int64_t n) {
    for (int64_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push(std::move(job));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop();
      }
      job();
    }
  }
  std::vector<std::thread> threads_;
  std::queue<std::function<void()>> queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

// A batch being loaded one example per task: the task that finishes last collates it.
struct DataLoader::PendingBatch {
  std::vector<int64_t> indices;
  std::vector<wds::RawSample> samples;  // streaming: the batch's samples (indices then seed their transforms)
  at::Tensor inputs;  // allocated up front, for the examples to be written into; may be undefined
  std::vector<Loaded> examples;  // one slot per index
  std::vector<std::exception_ptr> errors;
  std::atomic<int64_t> left;
  std::promise<Batch> done;
};

// One stream's samples, read on a thread of its own and handed over a batch at a time with the
// stream's state after it; a bounded queue, so reading runs ahead of decoding by `capacity` batches.
class DataLoader::Feed {
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

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options)
    : dataset_(std::move(dataset)), transforms_(std::move(transforms)), options_(options) {
  if (options_.workers > 0) pool_ = std::make_unique<ThreadPool>(options_.workers);
  streams_ = std::max<int64_t>(1, options_.workers);
}

DataLoader::~DataLoader() {
  for (auto& f : pending_) f.wait();  // workers hold `this`: let them finish first
  feeds_.clear();
}

int64_t DataLoader::examples_per_epoch() const {
  const auto& s = options_.shard;
  int64_t n = int64_t(dataset_->size());
  // A stream has no padding to repeat: num_samples / world each, the rest of the data unread.
  if (streaming()) return n / s.world_size;
  if (s.pad) return (n + s.world_size - 1) / s.world_size;
  return n / s.world_size + (s.rank < n % s.world_size ? 1 : 0);
}

int64_t DataLoader::batches_per_epoch() const {
  int64_t n = examples_per_epoch(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  for (auto& f : pending_) f.wait();
  pending_.clear();
  if (streaming()) return start_streams(epoch, skip_batches);
  ShardOptions shard = options_.shard;
  shard.epoch = epoch;
  order_ = shard_indices(int64_t(dataset_->size()), shard);
  epoch_ = epoch;
  next_batch_ = skip_batches;
  fill();
}

DataLoader::Loaded DataLoader::load_example(int64_t i, int64_t epoch, const at::Tensor& slot, const wds::RawSample* raw) const {
  // One generator per example from (seed, epoch, index): identical whatever the worker count.
  std::seed_seq seq{uint64_t(options_.shard.seed), uint64_t(epoch), uint64_t(i)};
  Rng rng(seq);
  // A first transform that crops (random_resized_crop) draws its box from the image's size and
  // the dataset decodes only that box (JPEG files): the same pixels and draws as the full path.
  const Transform* first = transforms_.front();
  bool crop_first = first && first->crops_first();
  Example ex;
  try {
    RegionPicker pick = [&](int64_t h, int64_t w) { return first->crop_box(h, w, rng); };
    if (raw)
      ex = dataset_->from_sample(*raw, crop_first ? &pick : nullptr);
    else if (crop_first)
      ex = dataset_->get_region(std::size_t(i), pick);
    else
      ex = dataset_->get(std::size_t(i));
  } catch (const UnreadableFile& e) {
    if (!options_.skip_bad_files) throw;
    // Dropped from this batch only: the other examples, and every other batch, are what they
    // would have been, whatever the number of workers.
    spdlog::warn("skipped an unreadable example ({} so far): {}", ++*skipped_, e.what());
    return {at::Tensor(), ex.label, e.what()};
  }
  at::Tensor x = crop_first ? transforms_.from(1, first->after_crop(ex.image, rng), rng, slot)
                            : transforms_.from(0, ex.image, rng, slot);
  return {x, ex.label, {}};
}

at::Tensor DataLoader::allocate_inputs(int64_t n) const {
  if (example_shape_.empty()) return {};
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), example_shape_.begin(), example_shape_.end());
  // Pinned from the start when the loader pins: the transforms write into the page-locked batch
  // and collation copies nothing.
  return at::empty(shape, at::TensorOptions().dtype(at::kFloat).pinned_memory(options_.pin_memory));
}

at::Tensor DataLoader::slot(const at::Tensor& inputs, std::size_t k) {
  return inputs.defined() ? inputs.select(0, int64_t(k)) : at::Tensor();
}

Batch DataLoader::collate(const std::vector<Loaded>& examples, const at::Tensor& inputs, int64_t batch_index,
                          int64_t epoch) const {
  bool in_place = inputs.defined();
  for (std::size_t k = 0; k < examples.size() && in_place; ++k)
    in_place = examples[k].input.defined() && examples[k].input.data_ptr() == slot(inputs, k).data_ptr();
  std::vector<at::Tensor> images;
  std::vector<int64_t> labels;
  images.reserve(examples.size());
  for (const Loaded& e : examples) {
    if (!e.input.defined()) continue;
    images.push_back(e.input);
    labels.push_back(e.label);
  }
  if (images.empty()) throw DataError("every example of a batch is unreadable, the last: " + examples.back().error);
  Batch batch{in_place ? inputs : at::stack(images), at::tensor(labels, at::kLong)};
  if (!options_.batch_transforms.empty()) {
    Rng rng = batch_rng(uint64_t(options_.shard.seed), epoch, options_.shard.rank, batch_index);
    const BatchContext context{options_.num_classes, epoch, batch_index};
    for (const auto& t : options_.batch_transforms) (*t)(batch, context, rng);
  }
  return options_.pin_memory ? pinned(std::move(batch)) : batch;
}

// As torch.utils.data's pin_memory thread: after collation and the batch transforms, so the
// tensors the step receives are the pinned ones. Inputs allocated pinned up front stay as they are.
Batch DataLoader::pinned(Batch batch) {
  if (!batch.inputs.is_pinned()) batch.inputs = batch.inputs.pin_memory();
  if (!batch.targets.is_pinned()) batch.targets = batch.targets.pin_memory();
  return batch;
}

void DataLoader::fill() {
  if (streaming()) return fill_streams();
  int64_t window = std::max<int64_t>(1, options_.workers * options_.prefetch_batches_per_worker);
  while (int64_t(pending_.size()) < window && next_batch_ < batches_per_epoch()) {
    auto begin = order_.begin() + next_batch_ * options_.batch_size;
    auto end = order_.begin() + std::min<int64_t>(int64_t(order_.size()), (next_batch_ + 1) * options_.batch_size);
    const int64_t batch_index = next_batch_++;
    schedule(std::vector<int64_t>(begin, end), {}, batch_index);
    if (!pool_) break;  // synchronous: load one batch per next()
  }
}

void DataLoader::schedule(std::vector<int64_t> indices, std::vector<wds::RawSample> samples, int64_t batch_index) {
  if (!samples.empty()) {
    // A stream's example k of batch b seeds its transforms as index (b * batch_size + k) * world + rank:
    // its own on every rank, whatever the number of workers.
    const auto& s = options_.shard;
    indices.clear();
    for (std::size_t k = 0; k < samples.size(); ++k)
      indices.push_back((batch_index * options_.batch_size + int64_t(k)) * s.world_size + s.rank);
  }
  if (!pool_) {
    std::promise<Batch> p;
    at::Tensor inputs = allocate_inputs(int64_t(indices.size()));
    std::vector<Loaded> examples;
    for (std::size_t k = 0; k < indices.size(); ++k)
      examples.push_back(load_example(indices[k], epoch_, slot(inputs, k), samples.empty() ? nullptr : &samples[k]));
    p.set_value(collate(examples, inputs, batch_index, epoch_));
    pending_.push_back(p.get_future());
    return;
  }
  // One task per example rather than per batch: the workers share each batch, so none idles
  // while another finishes the epoch's last batch alone.
  auto batch = std::make_shared<PendingBatch>();
  batch->indices = std::move(indices);
  batch->samples = std::move(samples);
  std::size_t n = batch->indices.size();
  batch->examples.resize(n);
  batch->errors.resize(n);
  batch->left = int64_t(n);
  batch->inputs = allocate_inputs(int64_t(n));
  pending_.push_back(batch->done.get_future());
  for (std::size_t k = 0; k < n; ++k) {
    pool_->post([this, batch, k, e = epoch_, batch_index] {
      try {
        if (batch->samples.empty()) {
          batch->examples[k] = load_example(batch->indices[k], e, slot(batch->inputs, k));
        } else {
          batch->examples[k] = load_example(batch->indices[k], e, slot(batch->inputs, k), &batch->samples[k]);
          batch->samples[k] = {};  // its bytes go as soon as it is decoded, not with its batch
        }
      } catch (...) {
        batch->errors[k] = std::current_exception();
      }
      if (batch->left.fetch_sub(1) != 1) return;
      // The first failing example in batch order, whatever finished first.
      for (auto& err : batch->errors)
        if (err) return batch->done.set_exception(err);
      try {
        batch->done.set_value(collate(batch->examples, batch->inputs, batch_index, e));
      } catch (...) {
        batch->done.set_exception(std::current_exception());
      }
    });
  }
}

// The streams of this rank for the epoch, continuing from restore()'s state when it is this
// epoch's after `skip_batches` batches, else replaying them.
void DataLoader::start_streams(int64_t epoch, int64_t skip_batches) {
  feeds_.clear();
  pending_states_.clear();
  consumed_.assign(std::size_t(streams_), nullptr);
  epoch_ = epoch;
  next_batch_ = skip_batches;
  batches_returned_ = skip_batches;
  eval_turn_ = 0;
  const auto& s = options_.shard;
  const bool train = s.shuffle;
  std::vector<nlohmann::json> from(std::size_t(streams_), nullptr);
  bool restored = false;
  if (restore_) {
    const nlohmann::json& r = *restore_;
    if (r.value("epoch", int64_t(-1)) == epoch && r.value("batches", int64_t(-1)) == skip_batches &&
        r.value("streams", int64_t(-1)) == streams_ && r.value("world_size", int64_t(-1)) == s.world_size &&
        r.value("rank", int64_t(-1)) == s.rank) {
      for (std::size_t w = 0; w < from.size(); ++w) from[w] = r.at("state").at(w);
      restored = true;
    } else {
      spdlog::warn("the checkpoint's loader state is of epoch {} after {} batches, {} streams, rank {} of {}; this run "
                   "resumes epoch {} after {} batches with {} streams, rank {} of {}: the batches are replayed, so "
                   "the samples are what they would have been only with the same world size and data.workers",
                   r.value("epoch", int64_t(-1)), r.value("batches", int64_t(-1)), r.value("streams", int64_t(-1)),
                   r.value("rank", int64_t(-1)), r.value("world_size", int64_t(-1)), epoch, skip_batches, streams_,
                   s.rank, s.world_size);
    }
    restore_.reset();
  }
  // Shares the dataset's ownership: the set lives as long as the dataset.
  std::shared_ptr<const wds::ShardSet> set(dataset_, dataset_->shards());
  const int64_t nb = batches_per_epoch(), per_rank = examples_per_epoch(), b = options_.batch_size;
  const std::size_t capacity = std::size_t(std::max<int64_t>(2, options_.prefetch_batches_per_worker));
  for (int64_t w = 0; w < streams_; ++w) {
    wds::StreamPlan plan;
    plan.set = set;
    plan.seed = s.seed;
    plan.epoch = epoch;
    plan.rank = s.rank;
    plan.world = s.world_size;
    plan.stream = w;
    plan.streams = streams_;
    plan.train = train;
    plan.skip_bad_shards = options_.skip_bad_files;
    std::vector<std::pair<int64_t, int64_t>> batches;
    if (train)
      for (int64_t i = w; i < nb; i += streams_)
        if (!restored || i >= skip_batches) batches.emplace_back(i, std::min(b, per_rank - i * b));
    wds::StreamState state = from[std::size_t(w)].is_null() ? wds::StreamState{} : wds::StreamState::from_json(from[std::size_t(w)]);
    if (restored) consumed_[std::size_t(w)] = from[std::size_t(w)];
    feeds_.push_back(std::make_unique<Feed>(plan, state, std::move(batches), restored ? 0 : skip_batches, b, capacity));
  }
  fill();
}

void DataLoader::fill_streams() {
  const int64_t window = std::max<int64_t>(1, options_.workers * options_.prefetch_batches_per_worker);
  const bool train = options_.shard.shuffle;
  while (int64_t(pending_.size()) < window) {
    if (train) {
      if (next_batch_ >= batches_per_epoch()) return;
      const int64_t w = next_batch_ % streams_;
      bool ended = false;
      auto raw = feeds_[std::size_t(w)]->pop(/*wait=*/pending_.empty(), ended);
      if (!raw) {
        if (ended) throw DataError("internal: a shard stream ended before its batches");
        return;  // not read yet: the next call takes it
      }
      pending_states_.emplace_back(w, std::move(raw->after));
      schedule({}, std::move(raw->samples), next_batch_++);
      continue;
    }
    // Evaluation: the streams in turn, each to its end.
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

nlohmann::json DataLoader::state() const {
  if (!streaming()) return nullptr;
  const auto& s = options_.shard;
  return {{"epoch", epoch_}, {"batches", batches_returned_}, {"streams", streams_}, {"rank", s.rank},
          {"world_size", s.world_size}, {"state", consumed_}};
}

std::optional<Batch> DataLoader::next() {
  if (pending_.empty() && streaming() && !feeds_.empty()) fill_streams();  // waits for a stream
  if (pending_.empty()) return std::nullopt;
  std::future<Batch> f = std::move(pending_.front());
  pending_.pop_front();
  if (!pending_states_.empty()) {
    consumed_[std::size_t(pending_states_.front().first)] = std::move(pending_states_.front().second);
    pending_states_.pop_front();
    ++batches_returned_;
  }
  Batch b = f.get();  // rethrows a worker's exception here
  // Batches to come are allocated with this one's example shape, for the last transform to write
  // straight into (float inputs only: to_tensor's); an example of another shape is stacked instead.
  example_shape_.clear();
  if (b.inputs.scalar_type() == at::kFloat) example_shape_.assign(b.inputs.sizes().begin() + 1, b.inputs.sizes().end());
  fill();
  return b;
}

}  // namespace trainrun
