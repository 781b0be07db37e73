// What the end-to-end resume tests share: two runs' folders compared as the same run, and the
// bash around a run that is killed once a checkpoint of it is complete.
#pragma once

#include "test_util.h"

#include <string>

namespace trainrun::test {

// Runs `a` and `b` (output folders in `dir`) were the same run: the same loss and grad norm at
// every logged step, the same evaluations and train_loss, the same final weights, byte for byte.
inline void expect_same_run(const TempDir& dir, const std::string& a, const std::string& b) {
  auto metric = [&](const std::string& run, const char* key) { return by_step(dir / (run + "/metrics.jsonl"), key); };
  auto la = metric(a, "loss");
  EXPECT_FALSE(la.empty());
  EXPECT_EQ(la, metric(b, "loss"));
  for (const char* key : {"grad_norm", "eval_loss", "train_loss"}) EXPECT_EQ(metric(a, key), metric(b, key)) << key;
  std::string wa = read_file(dir / (a + "/model.safetensors"));
  EXPECT_FALSE(wa.empty());
  EXPECT_TRUE(wa == read_file(dir / (b + "/model.safetensors"))) << "final weights differ";
}

// Runs `text` as a bash script in `dir` (the recipe arguments carry quotes of their own).
inline RunResult run_script(const TempDir& dir, const std::string& text) {
  write_file(dir / "script.sh", text);
  return run("bash " + (dir / "script.sh"));
}

// Script lines that wait (30 s at most) until checkpoint `folder` (in `dir`) is complete.
inline std::string wait_for_checkpoint(const TempDir& dir, const std::string& folder) {
  return "for i in $(seq 1500); do [ -e " + (dir / (folder + "/trainer_state.json")) + " ] && break; sleep 0.02; done\n";
}

}  // namespace trainrun::test
