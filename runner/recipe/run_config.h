// The recipe's fixed sections as plain structs, read once right after the recipe is validated
// and the job built (so every `auto` is resolved). The loop and the CLI read these; nothing past
// this point looks a key up by string. Components keep receiving their validated Config view.
#pragma once

#include "registry/schema.h"
#include "runner/io/checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

struct DataConfig {
  int64_t batch_size = 64;       // per process
  int64_t eval_batch_size = 64;  // per process (null in the recipe = batch_size)
  int64_t workers = 2;
  bool skip_bad_files = true;    // on_bad_file: skip | error
};

struct TrainConfig {
  int64_t epochs = 1;
  int64_t grad_accum_steps = 1;
  int64_t log_every_steps = 10;
  double max_grad_norm = 0;          // 0 = no clipping (null)
  std::string eval_every = "epoch";  // epoch | never | N optimizer steps
  int64_t eval_steps = 0;            // N, when eval_every is a number
  std::vector<std::string> metrics;  // accuracy, top5
  bool bn_eval = false;
};

// One freeze rule; train.unfreeze_at_epoch is appended as {"*", true, E}.
struct FreezeRule {
  std::string params;  // fnmatch glob over parameter names
  bool trainable = false;
  int64_t from_epoch = 0;
};

struct WorldConfig {
  int64_t nproc_per_node = 1, nnodes = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::string init_method = "env";
  std::string backend = "auto";
  std::string device = "auto";
  int64_t threads_per_proc = 1;
  int64_t max_restarts = 0;
  double timeout_s = 60;
  int64_t world_size() const { return nproc_per_node * nnodes; }
};

// A registered component named in a list (callbacks:), with its validated parameters.
struct ComponentConfig {
  std::string name;
  Config config;
};

struct RunConfig {
  std::string name;
  uint64_t seed = 42;
  std::string model, dataset, optimizer, scheduler;  // the registry names the sections chose
  std::string precision = "fp32";                    // as written: fp32 | bf16 | fp16 | auto
  std::string memory_format = "auto";                // as written: auto | contiguous | channels_last
  DataConfig data;
  TrainConfig train;
  CheckpointOptions output;
  WorldConfig world;
  std::vector<FreezeRule> freeze;
  std::vector<ComponentConfig> callbacks;  // the recipe's, after the built-in ones

  static RunConfig from(const YAML::Node& root);
};

}  // namespace trainrun
