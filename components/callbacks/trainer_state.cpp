#include "components/callbacks/trainer_state.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace trainrun {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path.string() + ": cannot read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

json read_json(const fs::path& path) {
  try {
    return json::parse(read_text(path));
  } catch (const json::exception& e) {
    throw CheckpointError(path.string() + ": not valid JSON: " + e.what());
  }
}

ordered_json TrainerState::to_json() const {
  ordered_json j;
  j["best_metric"] = best_metric ? ordered_json(*best_metric) : ordered_json(nullptr);
  j["best_model_checkpoint"] = best_model_checkpoint.empty() ? ordered_json(nullptr) : ordered_json(best_model_checkpoint);
  j["epoch"] = epoch;
  j["eval_steps"] = eval_steps;
  j["global_step"] = global_step;
  j["is_hyper_param_search"] = false;
  j["is_local_process_zero"] = true;
  j["is_world_process_zero"] = true;
  j["log_history"] = log_history;
  j["logging_steps"] = logging_steps;
  j["max_steps"] = max_steps;
  j["num_train_epochs"] = num_train_epochs;
  j["save_steps"] = save_steps;
  j["stateful_callbacks"] = stateful_callbacks;
  j["total_flos"] = 0;
  j["train_batch_size"] = train_batch_size;
  j["trial_name"] = nullptr;
  j["trial_params"] = nullptr;
  ordered_json ours{{"epoch_index", epoch_index}, {"batches_in_epoch", batches_in_epoch}, {"world_size", world_size}};
  ours["ranks"] = ordered_json::array();
  for (auto& r : ranks)
    ours["ranks"].push_back({{"loss_since_log", r.loss_since_log},
                             {"batches_since_log", r.batches_since_log},
                             {"loss_total", r.loss_total},
                             {"batches_total", r.batches_total}});
  j["trainrun"] = ours;
  return j;
}

TrainerState TrainerState::from_json(const json& j) {
  TrainerState s;
  try {
    s.global_step = j.at("global_step").get<int64_t>();
    s.epoch = j.at("epoch").get<double>();
    s.max_steps = j.value("max_steps", int64_t(0));
    s.num_train_epochs = j.value("num_train_epochs", int64_t(0));
    s.logging_steps = j.value("logging_steps", int64_t(0));
    s.eval_steps = j.value("eval_steps", int64_t(0));
    s.save_steps = j.value("save_steps", int64_t(0));
    s.train_batch_size = j.value("train_batch_size", int64_t(0));
    if (j.contains("best_metric") && !j["best_metric"].is_null()) s.best_metric = j["best_metric"].get<double>();
    if (j.contains("best_model_checkpoint") && !j["best_model_checkpoint"].is_null())
      s.best_model_checkpoint = j["best_model_checkpoint"].get<std::string>();
    if (j.contains("log_history")) s.log_history = ordered_json(j["log_history"]);
    if (j.contains("stateful_callbacks")) {  // absent from checkpoints written before it was
      if (!j["stateful_callbacks"].is_object()) throw CheckpointError(std::string(kStateFile) + ": stateful_callbacks is not an object");
      s.stateful_callbacks = ordered_json(j["stateful_callbacks"]);
    }
    const json& ours = j.at("trainrun");
    s.epoch_index = ours.at("epoch_index").get<int64_t>();
    s.batches_in_epoch = ours.at("batches_in_epoch").get<int64_t>();
    s.world_size = ours.at("world_size").get<int64_t>();
    for (auto& r : ours.at("ranks"))
      s.ranks.push_back({r.at("loss_since_log").get<double>(), r.at("batches_since_log").get<int64_t>(),
                         r.at("loss_total").get<double>(), r.at("batches_total").get<int64_t>()});
  } catch (const json::exception& e) {
    throw CheckpointError(std::string(kStateFile) + ": " + e.what());
  }
  // Numbers a resumed loop counts from: a negative one would skip or repeat data.
  for (auto [key, value, least] : {std::tuple<const char*, int64_t, int64_t>{"global_step", s.global_step, 0},
                                   {"trainrun.epoch_index", s.epoch_index, 0},
                                   {"trainrun.batches_in_epoch", s.batches_in_epoch, 0},
                                   {"trainrun.world_size", s.world_size, 1}})
    if (value < least)
      throw CheckpointError(std::string(kStateFile) + ": " + key + " is " + std::to_string(value) + ", expected >= " +
                            std::to_string(least));
  if (!(s.epoch >= 0)) throw CheckpointError(std::string(kStateFile) + ": epoch is " + std::to_string(s.epoch) + ", expected >= 0");
  return s;
}

TrainerState read_trainer_state(const std::string& folder) {
  try {
    return TrainerState::from_json(read_json(fs::path(folder) / kStateFile));
  } catch (const CheckpointError& e) {
    std::string what = e.what();
    if (what.rfind(kStateFile, 0) != 0) throw;  // read_json named the whole path already
    throw CheckpointError((fs::path(folder) / "").string() + what);  // FOLDER/trainer_state.json: ...
  }
}

}  // namespace trainrun
