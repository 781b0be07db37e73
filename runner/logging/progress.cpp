#include "runner/logging/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace trainrun {

namespace {

std::string clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  auto s = int64_t(seconds);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

Progress::Progress(int64_t total_steps, int64_t first, bool enabled)
    : total_(total_steps), first_(first), enabled_(enabled && total_steps > 0), tty_(::isatty(STDOUT_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() { close(); }

void Progress::update(int64_t step) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    // Redraw at most 10 times a second, as tqdm's mininterval.
    if (step < total_ && shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    int64_t every = std::max<int64_t>(1, total_ / 10);
    if (step % every != 0 && step != total_) return;
  }
  last_draw_ = now;
  draw(step);
}

void Progress::draw(int64_t step) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int64_t done = step - first_;
  double rate = elapsed > 0 ? double(done) / elapsed : 0;
  double eta = rate > 0 ? double(total_ - step) / rate : -1;
  int pct = int(100 * step / total_);
  std::string rate_text = rate >= 1 || rate == 0 ? fmt::format("{:.2f}it/s", rate) : fmt::format("{:.2f}s/it", 1 / rate);
  if (!tty_) {
    std::printf("step %lld/%lld (%d%%), %s, elapsed %s, remaining %s\n", (long long)step, (long long)total_, pct,
                rate_text.c_str(), clock_text(elapsed).c_str(), clock_text(eta).c_str());
    std::fflush(stdout);
    return;
  }
  constexpr int kWidth = 20;
  static const char* eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  int64_t filled8 = step * kWidth * 8 / total_;
  std::string bar;
  for (int64_t i = 0; i < filled8 / 8; ++i) bar += "█";
  int cells = int(filled8 / 8);
  if (filled8 % 8 && cells < kWidth) bar += eighths[filled8 % 8], ++cells;
  bar += std::string(std::size_t(kWidth - cells), ' ');
  std::printf("\r\033[K%3d%%|%s| %lld/%lld [%s<%s, %s]", pct, bar.c_str(), (long long)step, (long long)total_,
              clock_text(elapsed).c_str(), clock_text(eta).c_str(), rate_text.c_str());
  std::fflush(stdout);
  shown_ = true;
  last_drawn_ = step;
}

void Progress::clear() {
  if (!enabled_ || !tty_ || !shown_) return;
  std::printf("\r\033[K");
  std::fflush(stdout);
  shown_ = false;
}

void Progress::close() {
  if (!enabled_ || !tty_ || !shown_) return;
  std::printf("\n");
  std::fflush(stdout);
  shown_ = false;
  enabled_ = false;
}

}  // namespace trainrun
