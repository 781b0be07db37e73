// The PyTorch MNIST example's Net (pytorch/examples mnist/main.py), layer for layer and with
// the same parameter names, so its state_dict loads as is.
#include "components/models/model.h"

#include <fmt/format.h>
#include <torch/torch.h>

namespace trainrun {
namespace {

// The example's one architecture: 3x3 convs, a 2x2 max-pool, a hidden fc.
struct BasicNetArgs {
  int64_t image_size;  // H = W of its inputs
  int64_t conv1;       // output channels
  int64_t conv2;
  int64_t hidden;      // fc1's output features
  // fc1's input: conv2's channels over the pooled grid of two unpadded 3x3 convs (64 * 12 * 12 = 9216).
  constexpr int64_t flat() const { return conv2 * ((image_size - 4) / 2) * ((image_size - 4) / 2); }
};

constexpr BasicNetArgs kBasicNet{.image_size = 28, .conv1 = 32, .conv2 = 64, .hidden = 128};

struct BasicNetOptions {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  double dropout1 = 0.25;
  double dropout2 = 0.5;
};

class BasicNetImpl : public Classifier {
 public:
  explicit BasicNetImpl(const BasicNetOptions& o)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.in_channels, kBasicNet.conv1, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(kBasicNet.conv1, kBasicNet.conv2, 3)))),
        dropout1(register_module("dropout1", torch::nn::Dropout(o.dropout1))),
        dropout2(register_module("dropout2", torch::nn::Dropout(o.dropout2))),
        fc1(register_module("fc1", torch::nn::Linear(kBasicNet.flat(), kBasicNet.hidden))),
        fc2(register_module("fc2", torch::nn::Linear(kBasicNet.hidden, o.num_classes))) {}

  at::Tensor forward(const at::Tensor& input) override {
    auto x = torch::relu(conv1(input));
    x = torch::relu(conv2(x));
    x = torch::max_pool2d(x, 2);
    x = dropout1(x);
    x = torch::flatten(x, 1);
    x = torch::relu(fc1(x));
    x = dropout2(x);
    return torch::log_softmax(fc2(x), 1);
  }

  InputConfig input_config() const override {
    InputConfig in;
    in.mean = {0.1307};  // the example's Normalize((0.1307,), (0.3081,))
    in.std = {0.3081};
    in.input_size = {1, kBasicNet.image_size, kBasicNet.image_size};
    in.resize_and_crop = false;  // its test_loader: ToTensor + Normalize only
    return in;
  }
  std::string classifier_pattern() const override { return "fc2.*"; }
  bool outputs_log_probs() const override { return true; }

 private:
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Dropout dropout1, dropout2;
  torch::nn::Linear fc1, fc2;
};

std::string basicnet_description(const BasicNetArgs& a) {
  return fmt::format("PyTorch's MNIST example net: 2 convs ({}, {} channels), max-pool, dropout, 2 fcs ({}, {}), "
                     "log-softmax ({}x{} input)", a.conv1, a.conv2, a.flat(), a.hidden, a.image_size, a.image_size);
}

Schema basicnet_schema() {
  return Schema()
      .add("num_classes", Type::Int, yaml("auto"), "output classes; auto = the dataset's")
      .min(1).choices({"auto"})
      .add("in_channels", Type::Int, yaml("1"), "input channels (1 for MNIST)").min(1)
      .add("dropout1", Type::Float, yaml("0.25"), "dropout after the conv block").range(0, 1)
      .add("dropout2", Type::Float, yaml("0.5"), "dropout before the last fc").range(0, 1)
      .add("pretrained", Type::Path, YAML::Node(), "optional .safetensors weights to start from");
}

}  // namespace

TRAINRUN_REGISTER(Classifier, "basicnet", basicnet_description(kBasicNet), basicnet_schema(), [](const Config& c) -> std::shared_ptr<Classifier> {
                    BasicNetOptions o;
                    o.in_channels = c.get<int64_t>("in_channels");
                    o.num_classes = c.get<int64_t>("num_classes");
                    o.dropout1 = c.get<double>("dropout1");
                    o.dropout2 = c.get<double>("dropout2");
                    return std::make_shared<BasicNetImpl>(o);
                  });

}  // namespace trainrun
