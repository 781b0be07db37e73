// A hand-written training loop over trainrun's Accelerate-like API: the same binary runs as one
// process or as N under torchrun / SLURM / mpirun (or RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
//
//   build/custom_loop /usr/share/datasets/fashion-mnist
//   torchrun --nproc_per_node 2 build/custom_loop /usr/share/datasets/fashion-mnist
#include "components/data/loader/loader.h"
#include "components/models/model.h"
#include "runner/distributed/accelerator.h"

#include <fmt/format.h>
#include <torch/torch.h>

using namespace trainrun;

int main(int argc, char** argv) {
  std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  int64_t limit = argc > 2 ? std::stoll(argv[2]) : 60000;
  Accelerator acc = Accelerator::from_env();
  at::set_num_threads(1);
  torch::manual_seed(0);

  // Components come from the same registries recipes use; configs are plain YAML.
  DatasetSplits data = Registry<Dataset>::instance().get("mnist").make(
      Config(YAML::Load(fmt::format("{{root: {}, classes: null}}", root))));
  auto model = Registry<Classifier>::instance().get("basicnet").make(
      Config(YAML::Load("{num_classes: 10, in_channels: 1, dropout1: 0.25, dropout2: 0.5}")));
  Compose transforms({Registry<Transform>::instance().get("to_tensor").make(Config(YAML::Load("{}")), {}),
                      Registry<Transform>::instance().get("normalize").make(Config(YAML::Load("{mean: [0.1307], std: [0.3081]}")), {})});

  auto ddp = acc.prepare(model);
  LoaderOptions options;
  options.batch_size = 64;
  DataLoader train(std::make_shared<Subset>(data.train, std::min<int64_t>(limit, int64_t(data.train->size()))),
                   transforms, acc.prepare(options, /*train=*/true));
  DataLoader test(data.eval, transforms, acc.prepare(options, /*train=*/false));
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));

  train.start_epoch(0);
  int64_t step = 0;
  while (auto batch = train.next()) {
    optimizer.zero_grad();
    at::Tensor loss = torch::nll_loss(ddp->forward(batch->inputs.to(acc.device())), batch->targets.to(acc.device()));
    acc.backward(loss);
    optimizer.step();
    if (++step % 100 == 0) acc.print(fmt::format("step {} loss {:.4f}", step, acc.mean(loss.item<double>())));
  }

  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<at::Tensor> predictions, targets;
  test.start_epoch(0);
  while (auto batch = test.next()) {
    predictions.push_back(model->forward(batch->inputs.to(acc.device())).argmax(1));
    targets.push_back(batch->targets.to(acc.device()));
  }
  // Every test example exactly once across ranks, in a single tensor on each rank.
  at::Tensor all_predictions = acc.gather_for_metrics(at::cat(predictions));
  at::Tensor all_targets = acc.gather_for_metrics(at::cat(targets));
  double accuracy = all_predictions.eq(all_targets).to(at::kDouble).mean().item<double>();
  acc.print(fmt::format("test examples {} accuracy {:.4f} (world size {})", all_targets.size(0), accuracy,
                        acc.world_size()));
  return 0;
}
