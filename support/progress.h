// Training progress on rank 0: a tqdm-like bar redrawn in place when stdout is a terminal
// (` 37%|███▋      | 120/320 [00:12<00:20,  9.81it/s]`), plain lines every tenth of the run
// when it is not (a log file, a CI job), so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace trainrun {

class Progress {
 public:
  // `first` is the step a resumed run starts from; rate and ETA count this session's steps only.
  Progress(int64_t total_steps, int64_t first, bool enabled);
  ~Progress();
  void update(int64_t step);
  // Clears the bar so that a log line can be printed; the next update() redraws it.
  void clear();
  void close();

 private:
  void draw(int64_t step);
  int64_t total_, first_, last_drawn_ = -1;
  bool enabled_, tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// A download's bar, as huggingface_hub's tqdm: `model.safetensors: 45%|████▌     | 45.1M/100M
// [00:03<00:04, 15.2MB/s]` on stderr, only on a terminal. `first` is the byte a resumed download
// starts from (the rate counts this session's bytes).
class ByteProgress {
 public:
  ByteProgress(std::string label, int64_t first);
  ~ByteProgress();
  void update(int64_t done, int64_t total, bool force = false);

 private:
  std::string label_;
  int64_t first_;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace trainrun
