// Console + train.log through spdlog, and the Trainer-style `{'loss': ..}` lines.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

// Console only until a run folder exists; then add_log_file() tees into train.log.
// Rank 0 logs everything; other ranks only warnings and errors, prefixed with their rank.
void setup_console_logging(int64_t rank = 0);
void add_log_file(const std::string& path);

// A Python-dict rendering, as the Trainer prints its logs: {'loss': 0.4523, 'epoch': 0.11}.
// 1234567 -> "1,234,567" (negative numbers too), as the Trainer's banner prints counts.
std::string thousands(int64_t n);

std::string python_dict(const std::vector<std::pair<std::string, double>>& items);

}  // namespace trainrun
