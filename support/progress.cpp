#include "support/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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

// The bar's cells: full blocks, then one eighth-block for the remainder, then spaces.
std::string bar_cells(int64_t done, int64_t total, int width) {
  static const char* eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  int64_t filled8 = std::min(done, total) * width * 8 / total;
  std::string bar;
  for (int64_t i = 0; i < filled8 / 8; ++i) bar += "█";
  int cells = int(filled8 / 8);
  if (filled8 % 8 && cells < width) bar += eighths[filled8 % 8], ++cells;
  return bar + std::string(std::size_t(width - cells), ' ');
}

// tqdm's unit_scale: 3 significant digits and an SI prefix ("45.1M", "100M", "1.23G").
std::string si_size(double n) {
  for (const char* unit : {"", "k", "M", "G", "T", "P"}) {
    if (n < 999.5) {
      if (n < 9.995) return fmt::format("{:.2f}{}", n, unit);
      if (n < 99.95) return fmt::format("{:.1f}{}", n, unit);
      return fmt::format("{:.0f}{}", n, unit);
    }
    n /= 1000;
  }
  return fmt::format("{:.1f}E", n);
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
  std::string bar = bar_cells(step, total_, 20);
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

ByteProgress::ByteProgress(std::string label, int64_t first)
    : label_(std::move(label)), first_(first), tty_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

ByteProgress::~ByteProgress() {
  if (shown_) std::fputs("\n", stderr);
}

void ByteProgress::update(int64_t done, int64_t total, bool force) {
  if (!tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double rate = elapsed > 0 ? double(done - first_) / elapsed : 0;
  std::string rate_text = si_size(rate) + "B/s";
  if (total <= 0) {
    std::fprintf(stderr, "\r\033[K%s: %sB [%s, %s]", label_.c_str(), si_size(double(done)).c_str(),
                 clock_text(elapsed).c_str(), rate_text.c_str());
    return;
  }
  double eta = rate > 0 ? double(total - done) / rate : -1;
  std::fprintf(stderr, "\r\033[K%s: %3d%%|%s| %s/%s [%s<%s, %s]", label_.c_str(), int(100 * done / total),
               bar_cells(done, total, 10).c_str(), si_size(double(done)).c_str(), si_size(double(total)).c_str(),
               clock_text(elapsed).c_str(), clock_text(eta).c_str(), rate_text.c_str());
}

}  // namespace trainrun
