// A recompute-in-backward node on LibTorch's custom autograd Function (activation_checkpointing.h).
#include "runner/train/activation_checkpointing.h"

#include "runner/train/autocast.h"

#include <ATen/Context.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>

#include <mutex>
#include <optional>

namespace trainrun {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the recompute needs besides the saved input: the block, and the forward's RNG and
// autocast state (torch.utils.checkpoint's fwd_cpu_state, fwd_gpu_states, *_autocast_kwargs).
struct Recompute : torch::CustomClassHolder {
  std::shared_ptr<torch::nn::Module> block;
  BlockForward forward;
  AutocastState autocast;
  at::Tensor cpu_rng;
  std::optional<c10::Device> cuda;  // the input's device, when it is a CUDA one
  at::Tensor cuda_rng;
};

at::Tensor rng_state(const c10::Device& device) {
  at::Generator gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(const c10::Device& device, const at::Tensor& state) {
  at::Generator gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// While alive, the generators stand where the forward found them; afterwards where they were
// (torch.random.fork_rng around the recompute), so the recompute draws nothing from the run's stream.
class ReplayRng {
 public:
  explicit ReplayRng(const Recompute& r) : cuda_(r.cuda), cpu_before_(rng_state(at::kCPU)) {
    if (cuda_) cuda_before_ = rng_state(*cuda_);
    set_rng_state(at::kCPU, r.cpu_rng);
    if (cuda_) set_rng_state(*cuda_, r.cuda_rng);
  }
  ~ReplayRng() {
    set_rng_state(at::kCPU, cpu_before_);
    if (cuda_) set_rng_state(*cuda_, cuda_before_);
  }
  ReplayRng(const ReplayRng&) = delete;
  ReplayRng& operator=(const ReplayRng&) = delete;

 private:
  std::optional<c10::Device> cuda_;
  at::Tensor cpu_before_, cuda_before_;
};

// While alive, the block's buffers may change (a training-mode BatchNorm's running statistics do
// in the recompute); afterwards they hold what they held before, so the step updates them once.
class KeepBuffers {
 public:
  explicit KeepBuffers(torch::nn::Module& block) : buffers_(block.buffers()) {
    for (const auto& b : buffers_) saved_.push_back(b.clone());
  }
  ~KeepBuffers() {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(saved_[i]);
  }
  KeepBuffers(const KeepBuffers&) = delete;
  KeepBuffers& operator=(const KeepBuffers&) = delete;

 private:
  std::vector<at::Tensor> buffers_, saved_;
};

// Inputs: the block's input, then its parameters, so their gradients leave backward through this
// node's edges to their AccumulateGrad (and DDP's hooks there), as in torch's non-reentrant
// checkpoint, rather than being accumulated inside a nested backward.
class RecomputeInBackward : public torch::autograd::Function<RecomputeInBackward> {
 public:
  // Function::apply runs this with grad off: nothing inside the block is kept.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, at::TensorList /*params*/,
                            const c10::intrusive_ptr<Recompute>& recompute) {
    ctx->save_for_backward({input});
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(recompute);
    return recompute->forward(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto r = c10::static_intrusive_pointer_cast<Recompute>(ctx->saved_data["recompute"].toCapsule());
    const std::vector<at::Tensor> params = r->block->parameters();
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(ctx->needs_input_grad(0));
    // Restored only once the gradients are out: BatchNorm's backward saved the running
    // statistics it was given, and a copy_ into them before would fail its version check.
    KeepBuffers buffers(*r->block);
    at::Tensor y;
    {
      ReplayRng rng(*r);
      Autocast autocast(r->autocast);
      torch::AutoGradMode grad(true);
      y = r->forward(x);
    }
    // Gradients for the inputs that need one: edge 0 is the input, 1..n the parameters.
    std::vector<at::Tensor> wrt;
    std::vector<std::size_t> slot;
    for (std::size_t i = 0; i <= params.size(); ++i) {
      if (!ctx->needs_input_grad(i)) continue;
      wrt.push_back(i == 0 ? x : params[i - 1]);
      slot.push_back(i);
    }
    variable_list grads(params.size() + 2);  // + the Recompute argument, which takes none
    if (wrt.empty()) return grads;
    variable_list got = torch::autograd::grad({y}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                                              /*create_graph=*/false, /*allow_unused=*/true);
    for (std::size_t k = 0; k < slot.size(); ++k) grads[slot[k]] = got[k];
    return grads;
  }
};

}  // namespace

at::Tensor checkpoint_block(const std::shared_ptr<torch::nn::Module>& block, BlockForward forward, const at::Tensor& input) {
  if (!at::GradMode::is_enabled()) return forward(input);
  auto r = c10::make_intrusive<Recompute>();
  r->block = block;
  r->forward = std::move(forward);
  r->autocast = Autocast::current();
  r->cpu_rng = rng_state(at::kCPU);
  if (input.is_cuda()) {
    r->cuda = input.device();
    r->cuda_rng = rng_state(input.device());
  }
  const std::vector<at::Tensor> params = block->parameters();
  return RecomputeInBackward::apply(input, at::TensorList(params), r);
}

void set_activation_checkpointing(Classifier& model, const std::vector<std::string>& stages) {
  model.set_activation_checkpointing(stages, checkpoint_block);
}

}  // namespace trainrun
