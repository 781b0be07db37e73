// The run's logs on rank 0: metrics.jsonl and TensorBoard scalars, from the same lines (the
// trainer keeps them in its log_history too, for trainer_state.json).
#pragma once

#include "runner/logging/tfevents.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace trainrun {

class RunLog {
 public:
  // A fresh run starts an empty metrics.jsonl. A resumed one passes the checkpoint's
  // log_history and step: metrics.jsonl is rewritten to hold exactly those lines (what a
  // crash logged after the checkpoint goes), and TensorBoard is told to drop later events.
  RunLog(const std::string& dir, const nlohmann::ordered_json& history, int64_t resumed_step = -1);

  // One line: appended to metrics.jsonl; its numbers become TensorBoard scalars under the
  // Trainer's names (eval_loss -> eval/loss, loss -> train/loss).
  void write(const nlohmann::ordered_json& line);

 private:
  std::string path_;
  std::ofstream out_;
  EventWriter events_;
};

}  // namespace trainrun
