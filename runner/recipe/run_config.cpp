#include "runner/recipe/run_config.h"

namespace trainrun {

namespace {

DataConfig data_config(const YAML::Node& d) {
  DataConfig c;
  c.batch_size = d["batch_size"].as<int64_t>();
  c.eval_batch_size = d["eval_batch_size"].IsNull() ? c.batch_size : d["eval_batch_size"].as<int64_t>();
  c.workers = d["workers"].as<int64_t>();
  c.skip_bad_files = d["on_bad_file"].as<std::string>() == "skip";
  return c;
}

TrainConfig train_config(const YAML::Node& t) {
  TrainConfig c;
  c.epochs = t["epochs"].as<int64_t>();
  c.grad_accum_steps = t["grad_accum_steps"].as<int64_t>();
  c.log_every_steps = t["log_every_steps"].as<int64_t>();
  c.max_grad_norm = t["max_grad_norm"].IsNull() ? 0.0 : t["max_grad_norm"].as<double>();
  c.eval_every = t["eval_every"].as<std::string>();
  c.eval_steps = c.eval_every == "epoch" || c.eval_every == "never" ? 0 : std::stoll(c.eval_every);
  c.metrics = t["metrics"].as<std::vector<std::string>>();
  c.bn_eval = t["bn_eval"].as<bool>();
  return c;
}

WorldConfig world_config(const YAML::Node& w) {
  WorldConfig c;
  c.nproc_per_node = w["nproc_per_node"].as<int64_t>();
  c.nnodes = w["nnodes"].as<int64_t>();
  c.node_rank = w["node_rank"].as<int64_t>();
  c.master_addr = w["master_addr"].as<std::string>();
  c.master_port = w["master_port"].as<int64_t>();
  c.init_method = w["init_method"].as<std::string>();
  c.backend = w["backend"].as<std::string>();
  c.device = w["device"].as<std::string>();
  if (w["threads_per_proc"].Scalar() != "auto") c.threads_per_proc = w["threads_per_proc"].as<int64_t>();
  c.max_restarts = w["max_restarts"].as<int64_t>();
  c.timeout_s = w["timeout_s"].as<double>();
  return c;
}

CheckpointOptions output_config(const YAML::Node& output) {
  CheckpointOptions o;
  o.dir = output["dir"].as<std::string>();
  o.save_every = output["save_every"].as<std::string>();
  o.keep_last = output["keep_last"].IsNull() ? std::nullopt : std::optional<int64_t>(output["keep_last"].as<int64_t>());
  if (!output["best_metric"].IsNull()) {
    o.best_metric = output["best_metric"].as<std::string>();
    // As the Trainer's metric_for_best_model: "accuracy" means "eval_accuracy"; losses are
    // better lower, everything else higher.
    if (o.best_metric.rfind("eval_", 0) != 0) o.best_metric = "eval_" + o.best_metric;
    o.greater_is_better = o.best_metric.find("loss") == std::string::npos;
  }
  o.resume = output["resume"].as<std::string>();
  return o;
}

// The freeze rules in order, then train.unfreeze_at_epoch as a last rule {"*", true, E}.
std::vector<FreezeRule> freeze_rules(const YAML::Node& rules, const YAML::Node& unfreeze_at) {
  std::vector<FreezeRule> out;
  for (const auto& r : rules)
    out.push_back({r["params"].as<std::string>(), r["trainable"].as<bool>(),
                   r["from_epoch"] ? r["from_epoch"].as<int64_t>() : 0});
  if (unfreeze_at && !unfreeze_at.IsNull()) out.push_back({"*", true, unfreeze_at.as<int64_t>()});
  return out;
}

}  // namespace

RunConfig RunConfig::from(const YAML::Node& root) {
  RunConfig c;
  c.name = root["name"].as<std::string>();
  c.seed = root["seed"].as<uint64_t>();
  c.model = root["model"]["name"].as<std::string>();
  c.dataset = root["data"]["dataset"]["name"].as<std::string>();
  c.optimizer = root["optimizer"]["name"].as<std::string>();
  c.scheduler = root["scheduler"]["name"].as<std::string>();
  c.precision = root["precision"].as<std::string>();
  c.memory_format = root["memory_format"].as<std::string>();
  c.data = data_config(root["data"]);
  c.train = train_config(root["train"]);
  c.output = output_config(root["output"]);
  c.world = world_config(root["world"]);
  c.freeze = freeze_rules(root["freeze"], root["train"]["unfreeze_at_epoch"]);
  const YAML::Node& callbacks = root["callbacks"];
  for (std::size_t i = 0; callbacks && i < callbacks.size(); ++i)
    c.callbacks.push_back({callbacks[i]["name"].as<std::string>(),
                           Config(callbacks[i], "callbacks[" + std::to_string(i) + "]")});
  return c;
}

}  // namespace trainrun
