// A worker for the distributed tests, started torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT) by tests/distributed/distributed_test.cpp. It checks, across real processes, what DDP
// promises: rank 0's initial state everywhere, parameters kept equal, buffers following rank 0,
// and gather_for_metrics returning every rank's rows in rank order.
#include "runner/distributed/accelerator.h"

#include <torch/torch.h>

#include <iostream>

using namespace trainrun;

namespace {

class TinyBn : public Classifier {
 public:
  TinyBn()
      : fc1(register_module("fc1", torch::nn::Linear(6, 8))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))),
        fc2(register_module("fc2", torch::nn::Linear(8, 3))) {}
  at::Tensor forward(const at::Tensor& x) override { return fc2(torch::relu(bn(fc1(x)))); }
  InputConfig input_config() const override { return {{0.0}, {1.0}, {6}, "bilinear", 0.875, false}; }
  std::string classifier_pattern() const override { return "fc2.*"; }

 private:
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};

at::Tensor flat(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> parts;
  for (auto& t : ts) parts.push_back(t.detach().to(at::kDouble).flatten());
  return at::cat(parts);
}

// Rows of all ranks' values, in rank order.
at::Tensor rows(const Accelerator& acc, const at::Tensor& v) { return acc.gather_for_metrics(v.unsqueeze(0)); }

bool all_rows_equal(const at::Tensor& r) { return r.eq(r[0]).all().item<bool>(); }

int fail(const Accelerator& acc, const std::string& what) {
  std::cerr << "rank " << acc.rank() << ": " << what << std::endl;
  return 1;
}

}  // namespace

int main() {
  Accelerator acc = Accelerator::from_env();
  torch::manual_seed(uint64_t(100 + acc.rank()));  // deliberately different initial weights
  auto model = std::make_shared<TinyBn>();
  auto ddp = acc.prepare(model);
  if (!all_rows_equal(rows(acc, flat(model->parameters()))) || !all_rows_equal(rows(acc, flat(model->buffers()))))
    return fail(acc, "parameters or buffers differ after prepare()");

  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::manual_seed(uint64_t(7 + acc.rank()));  // each rank its own data
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    at::Tensor x = torch::randn({16, 6}) * double(acc.rank() + 1), y = torch::randint(0, 3, {16});
    acc.backward(torch::nn::functional::cross_entropy(ddp->forward(x), y));
    opt.step();
  }
  if (!all_rows_equal(rows(acc, flat(model->parameters())))) return fail(acc, "parameters diverged while training");
  if (all_rows_equal(rows(acc, flat(model->buffers()))))
    return fail(acc, "BatchNorm buffers are equal although each rank saw its own batch last");
  {
    torch::NoGradGuard no_grad;
    model->eval();  // no running-stat update: what is left is rank 0's broadcast
    ddp->forward(torch::randn({4, 6}));
  }
  at::Tensor buffers = rows(acc, flat(model->buffers()));
  if (!all_rows_equal(buffers)) return fail(acc, "buffers do not follow rank 0 at forward");

  at::Tensor mine = at::full({acc.rank() + 1, 2}, double(acc.rank()));  // unequal lengths
  at::Tensor all = acc.gather_for_metrics(mine);
  int64_t expect_rows = acc.world_size() * (acc.world_size() + 1) / 2;
  if (all.size(0) != expect_rows || all[0][0].item<double>() != 0 || all[-1][0].item<double>() != double(acc.world_size() - 1))
    return fail(acc, "gather_for_metrics returned the wrong rows");
  acc.wait_for_everyone();
  if (acc.is_main_process()) std::cout << "ddp_worker ok: world " << acc.world_size() << std::endl;
  return 0;
}
