// Learning-rate schedules, stepped per optimizer step as PyTorch's schedulers are.
#include "components/optim/optim.h"

#include <torch/optim.h>

namespace trainrun {
namespace {

// The recipe's optimizer lr, unchanged for the whole run.
class Constant : public Scheduler {
 public:
  explicit Constant(torch::optim::Optimizer& opt) : opt_(opt) {
    for (auto& g : opt.param_groups()) base_.push_back(g.options().get_lr());
  }
  void apply(int64_t) override {
    for (std::size_t i = 0; i < base_.size(); ++i) opt_.param_groups()[i].options().set_lr(base_[i]);
  }

 private:
  torch::optim::Optimizer& opt_;
  std::vector<double> base_;
};

}  // namespace

TRAINRUN_REGISTER(Scheduler, "constant", "the optimizer's lr for every step (torch.optim.lr_scheduler.ConstantLR factor 1)",
                  Schema(), [](const Config&, const ScheduleContext& ctx) {
                    return std::make_shared<Constant>(*ctx.optimizer);
                  });

}  // namespace trainrun
