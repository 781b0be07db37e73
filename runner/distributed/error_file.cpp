#include "runner/distributed/error_file.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <fstream>

namespace trainrun {

void record_error_for_launcher(const std::string& message) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (!path || !*path) return;
  // No Python stack to show: torchrun prints py_callstack as the "traceback", so it is the line.
  nlohmann::json data = {
      {"message",
       {{"message", message},
        {"extraInfo", {{"py_callstack", message}, {"timestamp", std::to_string(std::time(nullptr))}}}}}};
  std::ofstream out(path, std::ios::trunc);
  out << data.dump() << "\n";
}

}  // namespace trainrun
