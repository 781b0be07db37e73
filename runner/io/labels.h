// labels.json, the class names a run writes beside its weights ({"0": "cat", "1": "dog", ...}) and
// an exported model carries: read back for predict and export.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace trainrun {

// The names by index; every index from 0 once. `file` names the source in DataError messages.
std::vector<std::string> labels_of(const nlohmann::json& j, const std::string& file);

// The run's labels.json beside `weights` (a run folder) or one level up (a checkpoint folder
// inside one); empty when there is none.
std::vector<std::string> run_labels(const std::string& weights);

}  // namespace trainrun
