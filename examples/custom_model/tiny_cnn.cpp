// A model plugin (models/tiny_cnn): two 3x3 convolutions with max-pooling, a linear head.
// Built against the installed package (CMakeLists.txt here); recipe.yaml trains it.
#include "components/models/model.h"
#include <torch/torch.h>

namespace {
using namespace trainrun;
namespace nn = torch::nn;

class TinyCnn : public Classifier {
 public:
  explicit TinyCnn(const Config& c)
      : channels(c.get<int64_t>("in_channels")),
        conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(channels, 16, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)))),
        head(register_module("head", nn::Linear(32 * 7 * 7, c.get<int64_t>("num_classes")))) {}

  at::Tensor forward(const at::Tensor& x) override {  // logits: train with loss: cross_entropy
    auto h = torch::max_pool2d(torch::relu(conv1(x)), 2);
    return head(torch::max_pool2d(torch::relu(conv2(h)), 2).flatten(1));
  }
  InputConfig input_config() const override {  // normalize's `mean: model`, `std: model`; C, H, W
    std::vector<double> half(channels, 0.5);
    return {half, half, {channels, 28, 28}};
  }
  std::string classifier_pattern() const override { return "head.*"; }  // the head, for freeze rules

 private:
  int64_t channels;
  nn::Conv2d conv1, conv2;
  nn::Linear head;
};
}  // namespace

TRAINRUN_REGISTER(Classifier, "tiny_cnn", "two 3x3 convolutions with max-pooling, a linear head (28x28 input)",
                  Schema()
                      .add("num_classes", Type::Int, yaml("auto"), "classes (auto: the dataset's)").min(1).choices({"auto"})
                      .add("in_channels", Type::Int, yaml("1"), "input channels").min(1),
                  [](const Config& c) { return std::make_shared<TinyCnn>(c); });
