// A test plugin for tests/gpu/ with two callbacks:
// - deterministic_cudnn (resume_test.cpp): torch.backends.cudnn.deterministic = True, benchmark =
//   False in the training process. cuDNN's default choice of convolution-gradient algorithms may
//   accumulate with atomics, in an order that differs from run to run; a bit-exact comparison
//   needs runs that are repeatable at all. cudnn.deterministic has no recipe key.
// - rank_weights (shared_gpu_gloo_test.cpp): at the end of training every rank writes its own
//   parameters to OUTPUT_DIR/rank<R>.safetensors and its device to rank<R>.device, for a test
//   to compare ranks (only rank 0 writes checkpoints).
#include "components/callbacks/callback.h"
#include "runner/distributed/accelerator.h"
#include "support/safetensors.h"

#include <ATen/Context.h>

#include <fstream>
#include <iostream>
#include <memory>

namespace {

using namespace trainrun;

class DeterministicCudnn : public Callback {
 public:
  DeterministicCudnn() { apply(); }
  void on_train_begin(Trainer& trainer, TrainerControl&) override {
    apply();
    if (trainer.is_main_process()) std::cout << "deterministic_cudnn: on" << std::endl;
  }

 private:
  static void apply() {
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
  }
};

class RankWeights : public Callback {
 public:
  void on_train_end(Trainer& trainer, TrainerControl&) override {
    const std::string stem = trainer.output_dir() + "/rank" + std::to_string(trainer.rank());
    TensorList params;
    for (const auto& p : trainer.model().named_parameters()) params.emplace_back(p.key(), p.value().detach().cpu());
    save_safetensors(stem + ".safetensors", params);
    std::ofstream(stem + ".device") << trainer.accelerator().device().str();
  }
};

std::shared_ptr<Callback> make_deterministic(const Config&) { return std::make_shared<DeterministicCudnn>(); }
std::shared_ptr<Callback> make_rank_weights(const Config&) { return std::make_shared<RankWeights>(); }

TRAINRUN_REGISTER(Callback, "deterministic_cudnn", "cudnn.deterministic = True (a test plugin)", Schema(),
                  make_deterministic);
TRAINRUN_REGISTER(Callback, "rank_weights", "each rank's parameters at the end of training (a test plugin)", Schema(),
                  make_rank_weights);

}  // namespace
