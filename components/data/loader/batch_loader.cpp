#include "components/data/loader/batch_loader.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <fstream>
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
struct BatchLoader::PendingBatch {
  std::vector<int64_t> indices;
  std::vector<wds::RawSample> samples;  // streaming: the batch's samples (indices then seed their transforms)
  at::Tensor inputs;  // allocated up front, for the examples to be written into; may be undefined
  std::vector<Loaded> examples;  // one slot per index
  std::vector<std::exception_ptr> errors;
  std::atomic<int64_t> left;
  std::promise<Batch> done;
};

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options)
    : dataset_(std::move(dataset)), transforms_(std::move(transforms)), options_(options) {
  if (options_.workers > 0) pool_ = std::make_unique<ThreadPool>(options_.workers);
}

BatchLoader::~BatchLoader() { wait_pending(); }

void BatchLoader::record(const nlohmann::json& ids, int64_t batch_index) const {
  nlohmann::json line{{"epoch", epoch_}, {"batch", batch_index}, {"rank", options_.shard.rank}, {"ids", ids}};
  std::ofstream(options_.record_ids + "/rank-" + std::to_string(options_.shard.rank) + ".jsonl", std::ios::app)
      << line.dump() << "\n";
}

void BatchLoader::wait_pending() {
  for (auto& f : pending_) f.wait();
}

int64_t BatchLoader::batches_per_epoch() const {
  int64_t n = examples_per_epoch(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

BatchLoader::Loaded BatchLoader::load_example(int64_t i, int64_t epoch, const at::Tensor& slot, const wds::RawSample* raw) const {
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
    ex = read(i, raw, crop_first ? &pick : nullptr);
  } catch (const UnreadableFile& e) {
    if (!options_.skip_bad_files) throw;
    // Dropped from this batch only: the other examples, and every other batch, are what they
    // would have been, whatever the number of workers.
    spdlog::warn("skipped an unreadable example ({} so far): {}", ++*skipped_, e.what());
    return {at::Tensor(), ex.label, e.what(), {}};
  }
  at::Tensor x = crop_first ? transforms_.from(1, first->after_crop(ex.image, rng), rng, slot)
                            : transforms_.from(0, ex.image, rng, slot);
  return {x, ex.label, {}, std::move(ex.labels)};
}

at::Tensor BatchLoader::allocate_inputs(int64_t n) const {
  if (example_shape_.empty()) return {};
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), example_shape_.begin(), example_shape_.end());
  // Pinned from the start when the loader pins: the transforms write into the page-locked batch
  // and collation copies nothing.
  return at::empty(shape, at::TensorOptions().dtype(at::kFloat).pinned_memory(options_.pin_memory));
}

at::Tensor BatchLoader::slot(const at::Tensor& inputs, std::size_t k) {
  return inputs.defined() ? inputs.select(0, int64_t(k)) : at::Tensor();
}

namespace {

// Rows of `classes` floats, 1 at each example's labels.
at::Tensor multi_hot(const std::vector<const std::vector<int64_t>*>& sets, int64_t classes) {
  at::Tensor out = at::zeros({int64_t(sets.size()), classes}, at::kFloat);
  auto rows = out.accessor<float, 2>();
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (int64_t c : *sets[i]) {
      if (c < 0 || c >= classes)
        throw DataError("an example has label " + std::to_string(c) + ", outside the " + std::to_string(classes) +
                        " classes");
      rows[int64_t(i)][c] = 1.0f;
    }
  return out;
}

}  // namespace

Batch BatchLoader::collate(const std::vector<Loaded>& examples, const at::Tensor& inputs, int64_t batch_index,
                           int64_t epoch) const {
  bool in_place = inputs.defined();
  for (std::size_t k = 0; k < examples.size() && in_place; ++k)
    in_place = examples[k].input.defined() && examples[k].input.data_ptr() == slot(inputs, k).data_ptr();
  std::vector<at::Tensor> images;
  std::vector<int64_t> labels;
  std::vector<const std::vector<int64_t>*> label_sets;
  images.reserve(examples.size());
  for (const Loaded& e : examples) {
    if (!e.input.defined()) continue;
    images.push_back(e.input);
    labels.push_back(e.label);
    label_sets.push_back(&e.labels);
  }
  if (images.empty()) throw DataError("every example of a batch is unreadable, the last: " + examples.back().error);
  Batch batch{in_place ? inputs : at::stack(images),
              dataset_->multilabel() ? multi_hot(label_sets, options_.num_classes) : at::tensor(labels, at::kLong)};
  if (!options_.batch_transforms.empty()) {
    Rng rng = batch_rng(uint64_t(options_.shard.seed), epoch, options_.shard.rank, batch_index);
    const BatchContext context{options_.num_classes, epoch, batch_index};
    for (const auto& t : options_.batch_transforms) (*t)(batch, context, rng);
  }
  return options_.pin_memory ? pinned(std::move(batch)) : batch;
}

// As torch.utils.data's pin_memory thread: after collation and the batch transforms, so the
// tensors the step receives are the pinned ones. Inputs allocated pinned up front stay as they are.
Batch BatchLoader::pinned(Batch batch) {
  if (!batch.inputs.is_pinned()) batch.inputs = batch.inputs.pin_memory();
  if (!batch.targets.is_pinned()) batch.targets = batch.targets.pin_memory();
  return batch;
}

void BatchLoader::schedule(std::vector<int64_t> indices, std::vector<wds::RawSample> samples, int64_t batch_index) {
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
  auto batch = std::make_shared<PendingBatch>();
  batch->indices = std::move(indices);
  batch->samples = std::move(samples);
  post(std::move(batch), batch_index);
}

void BatchLoader::post(std::shared_ptr<PendingBatch> batch, int64_t batch_index) {
  // One task per example rather than per batch: the workers share each batch, so none idles
  // while another finishes the epoch's last batch alone.
  std::size_t n = batch->indices.size();
  batch->examples.resize(n);
  batch->errors.resize(n);
  batch->left = int64_t(n);
  batch->inputs = allocate_inputs(int64_t(n));
  pending_.push_back(batch->done.get_future());
  for (std::size_t k = 0; k < n; ++k) {
    pool_->post([this, batch, k, e = epoch_, batch_index] {
      try {
        const wds::RawSample* raw = batch->samples.empty() ? nullptr : &batch->samples[k];
        batch->examples[k] = load_example(batch->indices[k], e, slot(batch->inputs, k), raw);
        if (raw) batch->samples[k] = {};  // its bytes go as soon as it is decoded, not with its batch
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

std::optional<Batch> BatchLoader::next() {
  if (pending_.empty()) refill();
  if (pending_.empty()) return std::nullopt;
  std::future<Batch> f = std::move(pending_.front());
  pending_.pop_front();
  on_batch_taken();
  Batch b = f.get();  // rethrows a worker's exception here
  // Batches to come are allocated with this one's example shape, for the last transform to write
  // straight into (float inputs only: to_tensor's); an example of another shape is stacked instead.
  example_shape_.clear();
  if (b.inputs.scalar_type() == at::kFloat) example_shape_.assign(b.inputs.sizes().begin() + 1, b.inputs.sizes().end());
  // The workers read ahead; without them the next batch is loaded when asked for, not now (a run
  // that stops, or data.synthetic's one batch, loads no batch it does not train on).
  if (pool_) fill();
  return b;
}

}  // namespace trainrun
