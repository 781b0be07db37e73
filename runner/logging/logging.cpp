#include "runner/logging/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace trainrun {

namespace {
int64_t g_rank = 0;
}

void setup_console_logging(int64_t rank) {
  g_rank = rank;
  std::shared_ptr<spdlog::sinks::sink> console;
  if (rank == 0) console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  else console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern(rank == 0 ? "%^%v%$" : fmt::format("[rank {}] %^%v%$", rank));
  auto logger = std::make_shared<spdlog::logger>("trainrun", console);
  logger->set_level(rank == 0 ? spdlog::level::info : spdlog::level::warn);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void add_log_file(const std::string& path) {
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  file->set_pattern(fmt::format("[%Y-%m-%d %H:%M:%S] [%l] [rank {}] %v", g_rank));
  spdlog::default_logger()->sinks().push_back(file);
}

std::string thousands(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > (n < 0 ? 1 : 0); i -= 3) s.insert(std::size_t(i), ",");
  return s;
}

std::string python_dict(const std::vector<std::pair<std::string, double>>& items) {
  std::string s = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string v = fmt::format("{}", items[i].second);
    if (v.find_first_of(".en") == std::string::npos) v += ".0";  // Python's repr of a float
    s += fmt::format("{}'{}': {}", i ? ", " : "", items[i].first, v);
  }
  return s + "}";
}

}  // namespace trainrun
