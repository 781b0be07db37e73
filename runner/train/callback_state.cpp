#include "runner/train/callback_state.h"

#include "components/callbacks/trainer_state.h"

#include <spdlog/spdlog.h>

#include <map>
#include <string>

namespace trainrun {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json stateful_callbacks(const std::vector<std::shared_ptr<Callback>>& callbacks, const TrainerControl& control) {
  std::map<std::string, std::vector<ordered_json>> by_key;
  by_key["TrainerControl"].push_back(
      {{"args",
        {{"should_epoch_stop", false},
         {"should_evaluate", control.should_evaluate},
         {"should_log", control.should_log},
         {"should_save", control.should_save},
         {"should_training_stop", control.should_training_stop && control.stop_exit_code == 0}}},
       {"attributes", ordered_json::object()}});
  for (const auto& c : callbacks)
    if (std::string key = c->state_key(); !key.empty()) by_key[key].push_back(c->state());
  ordered_json out = ordered_json::object();
  for (auto& [key, states] : by_key) out[key] = states.size() == 1 ? states.front() : ordered_json(states);
  return out;
}

void restore_stateful_callbacks(Trainer& trainer, const std::vector<std::shared_ptr<Callback>>& callbacks,
                                const json& saved, const std::string& file) {
  std::map<std::string, std::size_t> taken;  // key -> saved entries given out
  for (const auto& c : callbacks) {
    const std::string key = c->state_key();
    if (key.empty()) continue;
    const std::size_t n = taken[key]++;
    if (!saved.contains(key)) {
      spdlog::info("  {}: no saved state in the checkpoint (a callback new to this run); it starts afresh", key);
      continue;
    }
    const json& entry = saved[key];
    const json* mine = entry.is_array() ? (n < entry.size() ? &entry[n] : nullptr) : (n == 0 ? &entry : nullptr);
    if (!mine) continue;
    try {
      c->load_state(trainer, *mine);
    } catch (const json::exception& e) {
      throw CheckpointError(file + ": stateful_callbacks." + key + ": " + e.what());
    }
  }
  for (auto& [key, entry] : saved.items()) {
    if (key == "TrainerControl") continue;
    const std::size_t stored = entry.is_array() ? entry.size() : 1, used = taken.count(key) ? taken[key] : 0;
    if (used < stored)
      spdlog::warn("The checkpoint holds state for {} {} that this run has no callback for; it is left out",
                   stored - used, key);
  }
}

}  // namespace trainrun
