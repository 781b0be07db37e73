#include "components/data/loader.h"

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
  template <class F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto fut = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut;
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

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options)
    : dataset_(std::move(dataset)), transforms_(std::move(transforms)), options_(options) {
  if (options_.workers > 0) pool_ = std::make_unique<ThreadPool>(options_.workers);
}

DataLoader::~DataLoader() {
  for (auto& f : pending_) f.wait();  // workers hold `this`: let them finish first
}

int64_t DataLoader::examples_per_epoch() const {
  const auto& s = options_.shard;
  int64_t n = int64_t(dataset_->size());
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
  ShardOptions shard = options_.shard;
  shard.epoch = epoch;
  order_ = shard_indices(int64_t(dataset_->size()), shard);
  epoch_ = epoch;
  next_batch_ = skip_batches;
  fill();
}

Batch DataLoader::load(std::vector<int64_t> indices, int64_t epoch) const {
  std::vector<at::Tensor> images, labels;
  images.reserve(indices.size());
  std::string last_error;
  for (int64_t i : indices) {
    // One generator per example from (seed, epoch, index): identical whatever the worker count.
    std::seed_seq seq{uint64_t(options_.shard.seed), uint64_t(epoch), uint64_t(i)};
    Rng rng(seq);
    // A first transform that crops (random_resized_crop) draws its box from the image's size and
    // the dataset decodes only that box (JPEG files): the same pixels and draws as the full path.
    const Transform* first = transforms_.front();
    bool crop_first = first && first->crops_first();
    Example ex;
    try {
      if (crop_first)
        ex = dataset_->get_region(std::size_t(i), [&](int64_t h, int64_t w) { return first->crop_box(h, w, rng); });
      else
        ex = dataset_->get(std::size_t(i));
    } catch (const UnreadableFile& e) {
      if (!options_.skip_bad_files) throw;
      last_error = e.what();
      // Dropped from this batch only: the other examples, and every other batch, are what they
      // would have been, whatever the number of workers.
      spdlog::warn("skipped an unreadable example ({} so far): {}", ++*skipped_, e.what());
      continue;
    }
    images.push_back(crop_first ? transforms_.from(1, first->after_crop(ex.image, rng), rng) : transforms_(ex.image, rng));
    labels.push_back(at::scalar_tensor(ex.label, at::kLong));
  }
  if (images.empty()) throw DataError("every example of a batch is unreadable, the last: " + last_error);
  return {at::stack(images), at::stack(labels)};
}

void DataLoader::fill() {
  int64_t window = std::max<int64_t>(1, options_.workers * options_.prefetch_batches_per_worker);
  while (int64_t(pending_.size()) < window && next_batch_ < batches_per_epoch()) {
    auto begin = order_.begin() + next_batch_ * options_.batch_size;
    auto end = order_.begin() + std::min<int64_t>(int64_t(order_.size()), (next_batch_ + 1) * options_.batch_size);
    std::vector<int64_t> indices(begin, end);
    ++next_batch_;
    if (pool_) {
      pending_.push_back(pool_->submit([this, indices = std::move(indices), e = epoch_] { return load(indices, e); }));
    } else {
      std::promise<Batch> p;
      p.set_value(load(std::move(indices), epoch_));
      pending_.push_back(p.get_future());
    }
    if (!pool_) break;  // synchronous: load one batch per next()
  }
}

std::optional<Batch> DataLoader::next() {
  if (pending_.empty()) return std::nullopt;
  std::future<Batch> f = std::move(pending_.front());
  pending_.pop_front();
  Batch b = f.get();  // rethrows a worker's exception here
  fill();
  return b;
}

}  // namespace trainrun
