// Console + train.log through spdlog, and the Trainer-style `{'loss': ..}` lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainrun {

// Console only until a run folder exists; then add_log_file() tees into train.log.
void setup_console_logging();
void add_log_file(const std::string& path);

// A Python-dict rendering, as the Trainer prints its logs: {'loss': 0.4523, 'epoch': 0.11}.
std::string python_dict(const std::vector<std::pair<std::string, double>>& items);

}  // namespace trainrun
