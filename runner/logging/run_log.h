// The run's logs on rank 0: metrics.jsonl, the Trainer's log_history (kept for
// trainer_state.json) and TensorBoard scalars, all from the same lines.
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
  RunLog(const std::string& dir, nlohmann::ordered_json history, int64_t resumed_step = -1);

  // One line: appended to metrics.jsonl and log_history; its numbers become TensorBoard
  // scalars under the Trainer's names (eval_loss -> eval/loss, loss -> train/loss).
  void write(const nlohmann::ordered_json& line);
  const nlohmann::ordered_json& history() const { return history_; }

 private:
  std::string path_;
  std::ofstream out_;
  nlohmann::ordered_json history_;
  EventWriter events_;
};

}  // namespace trainrun
