// trainer_state.json's `stateful_callbacks`: the callbacks' state (Callback::state_key/state/
// load_state) and the loop's TrainerControl, written with every checkpoint and given back on
// resume, as transformers' Trainer does (_save_checkpoint / _load_callback_state).
#pragma once

#include "components/callbacks/callback.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace trainrun {

// What a checkpoint records: {"TrainerControl": {"args": {should_*}, "attributes": {}}, and each
// stateful callback's state under its key (a list where several share one)}, keys sorted as
// transformers' json.dumps(sort_keys=True) writes them. should_training_stop is recorded only for
// a stop that ends the run (an early stop), not for an interrupt, whose run is not over.
nlohmann::ordered_json stateful_callbacks(const std::vector<std::shared_ptr<Callback>>& callbacks,
                                          const TrainerControl& control);

// Gives each stateful callback its saved state (the n-th callback of a key gets the n-th saved
// entry); warns of saved state no callback of this run takes. (A run a callback ended is not
// resumed at all: TrainerState::stopped_early.) A callback's state it cannot read is a
// CheckpointError naming `file` and the key.
void restore_stateful_callbacks(Trainer& trainer, const std::vector<std::shared_ptr<Callback>>& callbacks,
                                const nlohmann::json& saved, const std::string& file);

}  // namespace trainrun
