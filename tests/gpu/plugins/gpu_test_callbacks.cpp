// A test plugin for tests/gpu/ with three callbacks:
// - deterministic_cudnn (resume_test.cpp): torch.backends.cudnn.deterministic = True, benchmark =
//   False in the training process (resume_test.cpp, device_change_test.cpp). cuDNN's default choice of convolution-gradient algorithms may
//   accumulate with atomics, in an order that differs from run to run; a bit-exact comparison
//   needs runs that are repeatable at all. cudnn.deterministic has no recipe key.
// - no_tf32 (device_change_test.cpp): torch.backends.cudnn.allow_tf32 = cuda.matmul.allow_tf32 =
//   False, so that fp32 on the GPU rounds as fp32 on the CPU does (TF32 keeps 10 mantissa bits).
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

class NoTf32 : public Callback {
 public:
  NoTf32() {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
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
std::shared_ptr<Callback> make_no_tf32(const Config&) { return std::make_shared<NoTf32>(); }
std::shared_ptr<Callback> make_rank_weights(const Config&) { return std::make_shared<RankWeights>(); }

TRAINRUN_REGISTER(Callback, "deterministic_cudnn", "cudnn.deterministic = True (a test plugin)", Schema(),
                  make_deterministic);
TRAINRUN_REGISTER(Callback, "no_tf32", "TF32 off in cuDNN and cuBLAS (a test plugin)", Schema(), make_no_tf32);
TRAINRUN_REGISTER(Callback, "rank_weights", "each rank's parameters at the end of training (a test plugin)", Schema(),
                  make_rank_weights);

}  // namespace
