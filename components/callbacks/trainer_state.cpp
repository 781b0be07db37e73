#include "components/callbacks/trainer_state.h"

#include <cmath>
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

// An integer field, as get<int64_t>() reads it, except that a float which is not a whole number
// inside int64's range ("global_step": 1e106) is refused: converting it is undefined behaviour
// (UBSan's float-cast-overflow; found by fuzz/checkpoint_fuzz.cpp). `where` names the file.
int64_t whole(const json& value, const std::string& where, const char* key) {
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::floor(d))
      throw CheckpointError(where + key + ": expected a whole number, got " + value.dump());
  }
  return value.get<int64_t>();
}

int64_t whole_or(const json& j, const std::string& where, const char* key, int64_t fallback) {
  return j.contains(key) ? whole(j[key], where, key) : fallback;
}

}  // namespace

json read_json(const fs::path& path) {
  try {
    return json::parse(read_text(path));
  } catch (const json::exception& e) {
    throw CheckpointError(path.string() + ": not valid JSON: " + e.what());
  }
}

// transformers' TrainerState dataclass, field for field (src/transformers/trainer_callback.py at
// huggingface/transformers@55093b758b338fdc7903e778509523d755ae080d, the 4.47-4.49 line; the
// same list as tests/py/hf_trainer_state.py). load_from_json is TrainerState(**json): any other
// key is a TypeError there, so trainrun's own state has a file of its own. Keys sorted, as
// save_to_json writes them; the values transformers writes for what trainrun does not track.
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
  j["num_input_tokens_seen"] = 0;  // counted only for text (include_num_input_tokens_seen)
  j["num_train_epochs"] = num_train_epochs;
  j["save_steps"] = save_steps;
  j["stateful_callbacks"] = stateful_callbacks;
  j["total_flos"] = 0;
  j["train_batch_size"] = train_batch_size;
  j["trial_name"] = nullptr;
  j["trial_params"] = nullptr;
  return j;
}

ordered_json TrainerState::resume_json() const {
  ordered_json j{{"epoch_index", epoch_index}, {"batches_in_epoch", batches_in_epoch}, {"world_size", world_size}};
  j["ranks"] = ordered_json::array();
  for (auto& r : ranks)
    j["ranks"].push_back({{"loss_since_log", r.loss_since_log},
                          {"batches_since_log", r.batches_since_log},
                          {"loss_total", r.loss_total},
                          {"batches_total", r.batches_total}});
  if (!job.is_null()) j["job"] = job;
  return j;
}

bool TrainerState::stopped_early() const {
  const json control = stateful_callbacks.value("TrainerControl", ordered_json::object());
  const json args = control.is_object() ? control.value("args", json::object()) : json();
  const json stop = args.is_object() ? args.value("should_training_stop", json(false)) : json(false);
  return stop.is_boolean() && stop.get<bool>();
}

TrainerState TrainerState::from_json(const json& j) {
  TrainerState s;
  try {
    const std::string where = std::string(kStateFile) + ": ";
    s.global_step = whole(j.at("global_step"), where, "global_step");
    s.epoch = j.at("epoch").get<double>();
    s.max_steps = whole_or(j, where, "max_steps", 0);
    s.num_train_epochs = whole_or(j, where, "num_train_epochs", 0);
    s.logging_steps = whole_or(j, where, "logging_steps", 0);
    s.eval_steps = whole_or(j, where, "eval_steps", 0);
    s.save_steps = whole_or(j, where, "save_steps", 0);
    s.train_batch_size = whole_or(j, where, "train_batch_size", 0);
    if (j.contains("best_metric") && !j["best_metric"].is_null()) s.best_metric = j["best_metric"].get<double>();
    if (j.contains("best_model_checkpoint") && !j["best_model_checkpoint"].is_null())
      s.best_model_checkpoint = j["best_model_checkpoint"].get<std::string>();
    if (j.contains("log_history")) s.log_history = ordered_json(j["log_history"]);
    if (j.contains("stateful_callbacks")) {  // absent from checkpoints written before it was
      if (!j["stateful_callbacks"].is_object()) throw CheckpointError(std::string(kStateFile) + ": stateful_callbacks is not an object");
      s.stateful_callbacks = ordered_json(j["stateful_callbacks"]);
    }
  } catch (const json::exception& e) {
    throw CheckpointError(std::string(kStateFile) + ": " + e.what());
  }
  if (s.global_step < 0)
    throw CheckpointError(std::string(kStateFile) + ": global_step is " + std::to_string(s.global_step) + ", expected >= 0");
  if (!(s.epoch >= 0)) throw CheckpointError(std::string(kStateFile) + ": epoch is " + std::to_string(s.epoch) + ", expected >= 0");
  return s;
}

void TrainerState::read_resume_json(const json& ours, const std::string& where) {
  try {
    epoch_index = whole(ours.at("epoch_index"), where, "epoch_index");
    batches_in_epoch = whole(ours.at("batches_in_epoch"), where, "batches_in_epoch");
    world_size = whole(ours.at("world_size"), where, "world_size");
    ranks.clear();
    for (auto& r : ours.at("ranks"))
      ranks.push_back({r.at("loss_since_log").get<double>(), whole(r.at("batches_since_log"), where, "batches_since_log"),
                       r.at("loss_total").get<double>(), whole(r.at("batches_total"), where, "batches_total")});
    job = ours.contains("job") && ours["job"].is_object() ? ordered_json(ours["job"]) : ordered_json();
  } catch (const json::exception& e) {
    throw CheckpointError(where + e.what());
  }
  // Numbers a resumed loop counts from: a negative one would skip or repeat data.
  for (auto [key, value, least] : {std::tuple<const char*, int64_t, int64_t>{"epoch_index", epoch_index, 0},
                                   {"batches_in_epoch", batches_in_epoch, 0},
                                   {"world_size", world_size, 1}})
    if (value < least)
      throw CheckpointError(where + key + " is " + std::to_string(value) + ", expected >= " + std::to_string(least));
}

TrainerState read_trainer_state(const std::string& folder) {
  const fs::path dir = folder;
  try {
    const json hf = read_json(dir / kStateFile);
    TrainerState s = TrainerState::from_json(hf);
    if (fs::exists(dir / kResumeFile))
      s.read_resume_json(read_json(dir / kResumeFile), std::string(kResumeFile) + ": ");
    else if (hf.contains("trainrun"))  // written before trainrun_state.json existed
      s.read_resume_json(hf["trainrun"], std::string(kStateFile) + ": trainrun.");
    else
      throw CheckpointError(std::string(kResumeFile) + ": missing, and " + kStateFile +
                            " has no \"trainrun\" either (not a checkpoint trainrun wrote?)");
    return s;
  } catch (const CheckpointError& e) {
    std::string what = e.what();
    if (what.rfind(kStateFile, 0) != 0 && what.rfind(kResumeFile, 0) != 0) throw;  // read_json named the whole path
    throw CheckpointError((dir / "").string() + what);  // FOLDER/trainer_state.json: ...
  }
}

}  // namespace trainrun
